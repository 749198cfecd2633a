"""Intersection contour minimization (Volino & Magnenat-Thalmann 2006; the fail-safe of Li et al. 2018 §7.4)."""

import numpy as np
import pytest

from isocloth.contact.icm import contour_length_gradient, intersection_contour_minimization
from isocloth.contact.intersection import self_intersections
from isocloth.mesh.generators import rectangle


def two_sheets(lower):
    """A 20 cm sheet at z = 0 and a 16 cm one below it with heights ``lower(x, y)``."""
    a, b = rectangle(0.2, 0.2, 6, 6, element="triangle"), rectangle(0.16, 0.16, 9, 9, element="triangle")
    xb = b.vertices.copy()
    xb[:, 2] = lower(xb[:, 0], xb[:, 1])
    x = np.vstack([a.vertices + [0.013, 0.011, 0.0], xb])
    return x, np.vstack([a.triangles, b.triangles + a.node_count]), a.node_count


def test_the_contour_length_gradient_is_exact():
    """L = Σ ‖Q1 − Q0‖ over crossing pairs: its gradient against central differences in random directions."""
    x, tri, _ = two_sheets(lambda u, v: 0.1 * u + 0.003)  # a tilted sheet crossing the flat one along a line
    pairs = self_intersections(x, tri, vertex_adjacent=False)
    L, g = contour_length_gradient(x, tri, pairs)
    assert len(pairs) > 10 and L == pytest.approx(0.16, rel=1e-9)  # the crossing line spans the lower sheet
    rng = np.random.default_rng(0)
    for _ in range(5):
        d = rng.normal(size=x.shape)
        length = lambda y: contour_length_gradient(y, tri, pairs)[0]  # noqa: E731
        fd = (length(x + 1e-7 * d) - length(x - 1e-7 * d)) / 2e-7
        assert (g * d).sum() == pytest.approx(fd, rel=1e-5, abs=1e-9)


def test_a_bump_through_a_sheet_is_pulled_back_by_about_its_height():
    """A bump of the lower sheet rising 8 mm through the upper one: the contour (a loop) shrinks to nothing; no node
    moves much farther than the bump's height, and held nodes do not move."""
    x, tri, na = two_sheets(lambda u, v: -0.004 + 0.012 * np.exp(-(u ** 2 + v ** 2) / 0.03 ** 2))
    assert len(self_intersections(x, tri)) > 10
    held = np.zeros(len(x), dtype=bool)
    held[:6] = True  # a row of the upper sheet
    r = intersection_contour_minimization(x, tri, ~held)
    assert r.initial_pairs > 10 and r.remaining_pairs == 0
    assert len(self_intersections(r.x, tri)) == 0
    assert r.largest_move < 0.012
    assert np.array_equal(r.x[held], x[held])
    with pytest.raises(ValueError, match="max_iterations"):
        intersection_contour_minimization(x, tri, max_iterations=0)
    with pytest.raises(ValueError, match="movable"):
        intersection_contour_minimization(x, tri, np.ones(3, dtype=bool))


def test_the_elastic_stepper_removes_intersections_the_contact_solver_leaves():
    """Li et al. 2018 §7.4: a step that starts with a bump through the other sheet (the contact solver cannot undo an
    intersection) ends without one, and the step reports how many face pairs crossed (n̄_i) and remained (n̄_ir)."""
    from isocloth.baselines.implicit import ImplicitEulerStepper
    from isocloth.contact.intersection import face_intersections
    from isocloth.elastic import MeasuredClothForces, load_measured_material
    from isocloth.mesh.mesh import Mesh
    from isocloth.model import Material, ModelBuilder
    from isocloth.state import State

    apart, tri, _ = two_sheets(lambda u, v: -0.01 + 0.0 * u)
    through, _, _ = two_sheets(lambda u, v: -0.004 + 0.012 * np.exp(-(u ** 2 + v ** 2) / 0.03 ** 2))
    mat = load_measured_material("gray-interlock")
    model = (ModelBuilder().set_cloth(Mesh(apart, tri, None, rest_vertices=apart, name="two sheets"),
                                      Material(rho=mat.density, gravity=0.0))
             .set_self_collision(thickness=0.001, mu_cloth=0.3).finalize())
    stepper = ImplicitEulerStepper(model, MeasuredClothForces(model.mesh, mat), dt=0.002)
    s, info = stepper.step(State(through, np.zeros_like(through), 0.0, 0))
    assert info.crossings > 10 and info.icm_remaining == 0
    assert len(face_intersections(s.x, tri)) == 0
