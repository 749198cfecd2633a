"""Constraint tensors T_E, T_F, T_G and boundary rows (thesis §2.4)."""

import numpy as np
import pytest

from isocloth.fem.inextensibility import RowKind, inextensibility_constraints
from isocloth.mesh import topology
from isocloth.mesh.generators import irregular_rectangle, rectangle


def build(mesh, **kw):
    return inextensibility_constraints(mesh, corner_nodes=topology.corner_nodes(mesh),
                                       interior_nodes=topology.interior_nodes(mesh), **kw)


@pytest.mark.parametrize("element", ["quad", "triangle"])
def test_constraint_count_9x9_matches_thesis(element):
    # thesis §2.2.3: 3·49 (E, F, G at interior nodes) + 4 (F at corners) + 32 boundary edges = 183
    c = build(rectangle(0.297, 0.42, 9, 9, element=element))
    assert c.row_count == 3 * 49 + 4 + 32 == 183
    assert c.count_by_kind() == {"E": 49, "F": 53, "G": 49, "edge": 32}


def test_interior_rows_have_49_pairs_on_a_quad_grid():
    c = build(rectangle(1.0, 1.0, 9, 9))
    A = c.A.tocoo()
    rows = c.pair_row[A.row]
    # count (i, j) entries per E row of an interior node far from the boundary
    k = 4 * 9 + 4
    r = int(np.flatnonzero((c.row_kind == RowKind.E) & (c.row_node == k))[0])
    assert np.count_nonzero(rows == r) == 49


@pytest.mark.parametrize("mesh", [rectangle(0.4, 0.6, 7, 9), rectangle(0.4, 0.6, 7, 9, element="triangle"),
                                  irregular_rectangle(1.0, 1.0, 120, seed=3)])
def test_rest_value_rigid_invariance_and_jacobian(mesh):
    c = build(mesh)
    x = mesh.vertices
    assert np.abs(c.value(x)).max() < 1e-15
    rng = np.random.default_rng(0)
    R, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    assert np.abs(c.value(x @ R.T + [0.3, -1.0, 2.0])).max() < 1e-14
    xr = x + 0.01 * rng.normal(size=x.shape)
    C, J = c.value_and_jacobian(xr)
    assert np.abs(0.5 * (J @ xr.ravel()) - c.C0 - C).max() < 1e-15  # C = ½∇Cφ − C0
    for node, d in [(3, 0), (10, 2), (len(x) - 1, 1)]:
        e = 1e-6
        xp, xm = xr.copy(), xr.copy()
        xp[node, d] += e
        xm[node, d] -= e
        fd = (c.value(xp) - c.value(xm)) / (2 * e)
        assert np.abs(fd - J[:, 3 * node + d].toarray().ravel()).max() < 1e-9 * max(1.0, np.abs(fd).max())


def test_a_stretch_violates_the_constraints():
    mesh = rectangle(0.4, 0.6, 7, 9)
    c = build(mesh)
    x = mesh.vertices * [1.01, 1.0, 1.0]
    r = np.abs(c.value(x)) / c.scale
    assert c.relative_residual(c.value(x)) > 5e-3
    assert r[c.row_kind == RowKind.EDGE].max() == pytest.approx(2.01e-2, rel=1e-3)  # (1.01² − 1) on x edges


@pytest.mark.parametrize("element", ["quad", "triangle"])
def test_isometric_wrap_onto_a_cylinder_converges_quadratically(element):
    """A flat sheet rolled exactly onto a cylinder is an isometry: the discrete residual → 0 as O(h²)."""
    R = 0.15
    errs = []
    for N in (9, 17, 33):
        mesh = rectangle(0.297, 0.42, N, N, element=element)
        u, v = mesh.vertices[:, 0], mesh.vertices[:, 1]
        x = np.stack([R * np.sin(u / R), v, R * (1 - np.cos(u / R))], axis=1)
        c = build(mesh)
        errs.append(np.abs(c.value(x)).max() / np.abs(c.C0).max())
    rates = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert errs[-1] < 1e-3
    assert np.all(rates > 1.8), (errs, rates)


def test_quasi_inextensible_mode_drops_F_rows():
    mesh = rectangle(0.297, 0.42, 9, 9)
    c = build(mesh, use_F=False)
    assert c.count_by_kind() == {"E": 49, "F": 0, "G": 49, "edge": 32}
