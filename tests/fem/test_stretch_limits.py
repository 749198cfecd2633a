"""Element stretch limits (isocloth.fem.stretch_limits) and their equality form."""

import numpy as np
import pytest

from isocloth.fem.inextensibility import RowKind
from isocloth.fem.stretch_limits import stretch_limits
from isocloth.mesh import topology
from isocloth.mesh.generators import rectangle
from isocloth.model import ModelBuilder
from isocloth.scenes.loader import SceneError, load_scene


def test_every_interior_edge_once_with_its_rest_length():
    mesh = rectangle(0.4, 0.3, 5, 4)  # 4 x 3 quads of 0.1 m
    all_edges = topology.edges(mesh)
    lim = stretch_limits(mesh, 0.01, exclude=topology.boundary_edges(mesh), diagonals=False)
    assert lim.count == len(all_edges) - len(topology.boundary_edges(mesh)) == 17
    assert np.all(lim.sign == 1)
    np.testing.assert_allclose(lim.rest_length, 0.1)
    np.testing.assert_allclose(lim.bound, 0.101)
    assert np.all(lim.pairs[:, 0] < lim.pairs[:, 1])
    keys = lim.pairs[:, 0] * mesh.node_count + lim.pairs[:, 1]
    assert np.unique(keys).size == lim.count


def test_strain_and_exceeding_edges():
    mesh = rectangle(0.2, 0.2, 3, 3)
    lim = stretch_limits(mesh, 0.01, diagonals=False)
    x = mesh.vertices.copy()
    np.testing.assert_allclose(lim.strain(x), 0.0, atol=1e-15)
    x[4, 0] += 0.002  # the centre node 2 mm to the right: its right edge shrinks, its left edge stretches 2 %
    over = lim.exceeding(x, 0.0)
    assert over.tolist() == [int(np.flatnonzero((lim.pairs == [3, 4]).all(1))[0])]
    assert lim.strain(x)[over] == pytest.approx(0.02)


def test_edges_between_held_nodes_are_left_out():
    mesh = rectangle(0.2, 0.2, 3, 3)
    free = np.ones(9, dtype=bool)
    free[[0, 1]] = False
    lim = stretch_limits(mesh, 0.01, free_mask=free, diagonals=False)
    assert not any(set(p) == {0, 1} for p in lim.pairs.tolist())
    assert lim.count == len(topology.edges(mesh)) - 1


def test_quad_diagonals_bound_shear_and_triangle_edges_get_a_lower_bound():
    quads = rectangle(0.2, 0.2, 3, 3)  # 2 x 2 quads of 0.1 m
    lim = stretch_limits(quads, 0.01)
    diag = np.isclose(lim.rest_length, 0.1 * np.sqrt(2))
    assert diag.sum() == 8 and np.all(lim.sign == 1)  # two per quad, upper bounds only
    x = quads.vertices.copy()
    x[:, 0] += 0.1 * (x[:, 1] + 0.1)  # shear by 0.1 rad: edges along x keep their length
    sheared = lim.exceeding(x, 0.0)
    assert sheared.size and np.all(diag[sheared])
    tris = rectangle(0.2, 0.2, 3, 3, element="triangle")
    tl = stretch_limits(tris, 0.02)
    assert (tl.sign == -1).sum() == (tl.sign == 1).sum() == len(topology.edges(tris))
    low = tl.sign == -1
    np.testing.assert_allclose(tl.bound[low], 0.98 * tl.rest_length[low])
    y = tris.vertices * 0.97  # uniform 3 % compression violates every lower bound, no upper one
    assert set(tl.exceeding(y, 0.0).tolist()) == set(np.flatnonzero(low).tolist())
    np.testing.assert_allclose(tl.violation(y)[low], 0.01, rtol=1e-9)


@pytest.mark.parametrize("bad", [0.0, -0.01, np.nan, np.inf])
def test_a_limit_that_is_not_positive_is_refused(bad):
    with pytest.raises(ValueError, match="stretch limit must be a finite number > 0"):
        stretch_limits(rectangle(0.2, 0.2, 3, 3), bad)


def test_held_rows_are_squared_lengths_at_the_bound_with_exact_jacobian():
    model = ModelBuilder().set_cloth(rectangle(0.3, 0.3, 4, 4), constraint_model="stretch-limited").finalize()
    lim, m0 = model.stretch_limits, model.constraint_count
    cons = model.held_constraints
    assert cons.row_count == m0 + lim.count
    assert np.all(cons.row_kind[m0:] == RowKind.STRETCH_LIMIT)
    assert cons.count_by_kind()["stretch-limit"] == lim.count
    rng = np.random.default_rng(0)
    x = model.initial_positions + 0.005 * rng.standard_normal((16, 3))
    C, J = cons.value_and_jacobian(x)
    np.testing.assert_allclose(C[m0:], lim.lengths(x) ** 2 - lim.bound ** 2, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(C[:m0], model.constraints.value(x), rtol=1e-12, atol=1e-15)
    d = 1e-7 * rng.standard_normal((16, 3))
    fd = (cons.value(x + d) - cons.value(x - d)) / 2
    np.testing.assert_allclose(J @ d.ravel(), fd, rtol=1e-6, atol=1e-14)
    held = np.array([2, 5])
    np.testing.assert_array_equal(model.rows_holding(held)[-2:], m0 + held)


def test_thesis_model_has_no_limits_and_unknown_models_are_refused():
    mesh = rectangle(0.3, 0.3, 4, 4)
    assert ModelBuilder().set_cloth(mesh).finalize().constraint_model == "stretch-limited"  # the default
    thesis = ModelBuilder().set_cloth(mesh, constraint_model="thesis-nodal").finalize()
    assert thesis.constraint_model == "thesis-nodal"
    assert thesis.stretch_limits is None and thesis.held_constraints is thesis.constraints
    with pytest.raises(ValueError, match="constraint_model must be one of"):
        ModelBuilder().set_cloth(mesh, constraint_model="nodal")
    with pytest.raises(ValueError, match="stretch_limit must be a number > 0"):
        ModelBuilder().set_cloth(mesh, stretch_limit=0.0)


def test_scene_options_are_validated():
    sc = load_scene("hang-a2", ["cloth.constraint_model='stretch-limited'", "cloth.stretch_limit=0.02",
                                "output.video='none'"])
    assert sc.model.stretch_limits.limit == 0.02
    assert sc.model.describe()["constraint_model"] == "stretch-limited"
    with pytest.raises(SceneError, match="stretch_limit"):
        load_scene("hang-a2", ["cloth.stretch_limit=0"])
    with pytest.raises(SceneError, match="constraint_model"):
        load_scene("hang-a2", ["cloth.constraint_model='nodal'"])
