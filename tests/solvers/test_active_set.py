"""Active-set QP solver (thesis Algorithm 2) against KKT conditions and the interior-point baseline."""

import numpy as np
import pytest
import scipy.sparse as sp

from isocloth.solvers.active_set import SolverActiveSet, qp_kkt_residuals
from isocloth.solvers.interior_point import SolverInteriorPoint


def random_qp(seed, N=60, mE=15, mI=40, fixed=3):
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.5, 2.0, N)
    w[rng.choice(N, fixed, replace=False)] = 0.0  # prescribed coordinates
    A_E = sp.random(mE, N, density=0.15, random_state=seed, format="csr") + sp.eye(mE, N, format="csr")
    A_I = sp.random(mI, N, density=0.1, random_state=seed + 1, format="csr")
    c_E = rng.normal(size=mE) * 0.1
    h = rng.normal(size=mI) * 0.1  # some start violated (infeasible start)
    f = rng.normal(size=N) * 0.1
    return w, f, A_E, c_E, A_I, h


@pytest.mark.parametrize("seed", range(8))
def test_active_set_satisfies_kkt_and_matches_interior_point(seed):
    w, f, A_E, c_E, A_I, h = random_qp(seed)
    res = SolverActiveSet().solve_qp(w, f, A_E, c_E, A_I, h)
    assert res.converged
    kkt = qp_kkt_residuals(w, f, A_E, c_E, A_I, h, res)
    assert max(kkt.values()) < 1e-8, kkt
    ref = SolverInteriorPoint().solve_qp(w, f, A_E, c_E, A_I, h)
    np.testing.assert_allclose(res.dx, ref.dx, atol=1e-6)
    assert res.added >= 1  # the start was infeasible: constraints had to enter


def test_warm_start_with_the_optimal_working_set_needs_one_solve():
    w, f, A_E, c_E, A_I, h = random_qp(3)
    sol = SolverActiveSet().solve_qp(w, f, A_E, c_E, A_I, h)
    warm = SolverActiveSet().solve_qp(w, f, A_E, c_E, A_I, h, working=sol.working)
    assert warm.iterations == 1 and warm.added == 0 and warm.removed == 0
    np.testing.assert_allclose(warm.dx, sol.dx, atol=1e-10)


def test_a_wrong_warm_start_is_corrected_by_removing_negative_multipliers():
    w, f, A_E, c_E, A_I, h = random_qp(5)
    sol = SolverActiveSet().solve_qp(w, f, A_E, c_E, A_I, h)
    wrong = np.setdiff1d(np.arange(A_I.shape[0]), sol.working)[:10]
    res = SolverActiveSet().solve_qp(w, f, A_E, c_E, A_I, h, working=wrong)
    assert res.removed >= 1
    np.testing.assert_allclose(res.dx, sol.dx, atol=1e-8)


def test_duplicate_contact_rows_are_handled_as_dependent():
    """Two identical contact rows (∇G = ∇H): the second is swapped or skipped, never factorized twice."""
    w = np.ones(3)
    A_E = sp.csr_matrix((0, 3))
    A_I = sp.csr_matrix(np.array([[0, 0, 1.0], [0, 0, 1.0], [0, 1.0, 1.0]]))
    h = np.array([-0.1, -0.1, -0.05])
    f = np.array([0.0, 0.0, -1.0])
    res = SolverActiveSet().solve_qp(w, f, A_E, np.zeros(0), A_I, h)
    kkt = qp_kkt_residuals(w, f, A_E, np.zeros(0), A_I, h, res)
    assert max(kkt.values()) < 1e-10
    ref = SolverInteriorPoint().solve_qp(w, f, A_E, np.zeros(0), A_I, h)
    np.testing.assert_allclose(res.dx, ref.dx, atol=1e-7)


def test_point_on_a_plane_under_gravity_rests_with_the_weight_as_contact_force():
    # one free node falling onto z >= 0 (h = current height 0.01 m), force f = −m g dt² in z
    w = np.full(3, 1.0 / 0.2)
    f = np.array([0.0, 0.0, -0.2 * 9.8 * 0.01 ** 2])
    A_I = sp.csr_matrix(np.array([[0.0, 0.0, 1.0]]))
    res = SolverActiveSet().solve_qp(w, f, sp.csr_matrix((0, 3)), np.zeros(0), A_I, np.array([0.0]))
    assert res.dx[2] == pytest.approx(0.0, abs=1e-15)
    assert res.gamma[0] == pytest.approx(0.2 * 9.8 * 0.01 ** 2)  # γ balances the weight
