"""The bordered Schur system (isocloth.solvers.bordered): block elimination on the base factor.

Appending h rows to the base rows must give the Schur complement of all rows, and its factored
solve the solution of that system; a refactored base invalidates the border; a projection with
appended rows reaches the same positions as one with a single system of all rows.
"""

import numpy as np
import pytest

from isocloth import ModelBuilder
from isocloth.mesh.generators import rectangle
from isocloth.model import Material
from isocloth.solvers.bordered import BorderedSchur
from isocloth.solvers.projection import SolverProjection
from isocloth.solvers.schur import SchurSystem


def _model(nx, ny):
    mesh = rectangle(0.3, 0.2, nx, ny, element="quad", plane="xy")
    return (ModelBuilder().set_cloth(mesh, Material(rho=0.2), constraint_model="stretch-limited")
            .add_grasp([0, nx - 1]).finalize())


def _state(model, seed, noise=0.002):
    rng = np.random.default_rng(seed)
    x = model.mesh.vertices.copy()
    x[:, 2] += 0.01 * np.sin(7 * x[:, 0]) * np.cos(5 * x[:, 1])  # curved: the rows are independent
    return x + noise * rng.standard_normal(x.shape)


@pytest.mark.parametrize("nx, ny", [(6, 5), (24, 20)])  # dense (LAPACK) and sparse (CHOLMOD) base
def test_bordered_system_is_the_system_of_all_rows(nx, ny):
    model = _model(nx, ny)
    C, w = model.held_constraints, model.inverse_masses
    x = _state(model, 0)
    held = np.sort(np.random.default_rng(1).choice(model.stretch_limits.count, 12, replace=False))
    rows = model.rows_holding(held)
    AX = C.A @ x
    full = SchurSystem(C.pair_row, C.pair_node, rows, w, C.row_count)
    base = SchurSystem(C.pair_row, C.pair_node, model.active_rows, w, C.row_count)
    bordered = BorderedSchur(base, C.pair_row, C.pair_node, model.constraint_count + held, w, C.row_count)
    assert base.dense == (nx * ny < 100)
    S = full.matrix(AX)
    S = S.toarray() if hasattr(S, "toarray") else S
    np.testing.assert_allclose(bordered.matrix(AX), S, rtol=0, atol=1e-12 * np.abs(S).max())

    alpha = np.r_[np.zeros(model.active_rows.size), model.held_compliance(held, 0.01)]
    bordered.factorize(AX, 0.0, compliance=alpha)
    c = np.random.default_rng(2).standard_normal(rows.size)
    sol = bordered.solve_factored(c)
    A = S + np.diag(alpha)
    assert np.linalg.norm(A @ sol - c) <= 1e-8 * np.linalg.norm(c) * np.linalg.cond(A) ** 0.5
    np.testing.assert_array_equal(bordered.displacement(AX, sol), full.displacement(AX, sol))


def test_a_refactored_base_invalidates_the_border():
    model = _model(6, 5)
    C, w = model.held_constraints, model.inverse_masses
    base = SchurSystem(C.pair_row, C.pair_node, model.active_rows, w, C.row_count)
    bordered = BorderedSchur(base, C.pair_row, C.pair_node, model.constraint_count + np.array([3, 8]), w,
                             C.row_count)
    AX = C.A @ _state(model, 0)
    bordered.factorize(AX, 1e-9)
    assert bordered.has_factor and base.factorizations == 1
    bordered.factorize(AX, 1e-9)  # same point: the base factor is reused
    assert base.factorizations == 1 and bordered.factorizations == 2
    base.factorize(C.A @ _state(model, 1), 1e-9)
    assert not bordered.has_factor
    with pytest.raises(RuntimeError, match="without a current factorization"):
        bordered.solve_factored(np.zeros(bordered.k))


def test_projection_with_appended_rows_matches_one_system():
    """Same held rows, same compliance: the bordered and the single-system projections converge to
    the same positions (to the tolerance)."""
    model = _model(24, 20)
    C, w = model.held_constraints, model.inverse_masses
    x0 = _state(model, 3, noise=2e-4)
    held = np.sort(np.argsort(model.stretch_limits.strain(x0))[-20:])  # the 20 most stretched edges
    rows = model.rows_holding(held)
    alpha = np.r_[np.zeros(model.active_rows.size), model.held_compliance(held, 0.01)]
    solver = SolverProjection(tolerance=1e-8, reuse_factor=False)
    one = solver.solve(x0, w, C, rows, compliance=alpha)
    two = SolverProjection(tolerance=1e-8, reuse_factor=False).solve(x0, w, C, rows, compliance=alpha,
                                                                      appended=held.size)
    assert one.status.value == two.status.value == "converged"
    assert np.abs(one.x - two.x).max() <= 1e-8  # [m]; measured 2e-10
    with pytest.raises(ValueError, match="appended"):
        solver.solve(x0, w, C, rows, appended=rows.size + 1)
