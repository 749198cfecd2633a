"""Coulomb friction subproblem (disc problem on the Delassus operator) and the Delassus operator itself."""

import numpy as np
import pytest
import scipy.sparse as sp

from isocloth.solvers.active_set import SolverActiveSet, WorkingFactor
from isocloth.solvers.friction import _local_disc, solve_disc_friction


def random_problem(seed, c=12, rank=None):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(2 * c, rank or 2 * c))
    D = A @ A.T / (rank or 2 * c) + 0.05 * np.eye(2 * c)
    s0 = rng.normal(size=(c, 2)) * 1e-3
    F0 = np.zeros((c, 2))
    mu = rng.uniform(0.1, 1.0, c)
    stop = np.linalg.norm(np.linalg.lstsq(D, -s0.ravel(), rcond=None)[0].reshape(c, 2), axis=1)
    gamma = stop * rng.uniform(0.2, 3.0, c) / mu  # discs around the force that stops each slip
    return D, s0, F0, mu, gamma


def assert_coulomb(out, mu, gamma, slip_tol=1e-9):
    """Maximal-dissipation Coulomb law per contact: inside the disc → no slip; slipping → on the
    disc boundary, against the slip."""
    R = mu * gamma
    F, s = out.F, out.slip
    nF, ns = np.linalg.norm(F, axis=1), np.linalg.norm(s, axis=1)
    assert np.all(nF <= R * (1 + 1e-12) + 1e-300)
    for k in range(len(R)):
        if ns[k] > slip_tol:
            assert nF[k] == pytest.approx(R[k], rel=1e-6, abs=1e-300)
            if R[k] > 0:
                assert F[k] @ s[k] == pytest.approx(-nF[k] * ns[k], rel=1e-6)
        else:
            assert nF[k] <= R[k] * (1 + 1e-9)


def test_gauss_seidel_satisfies_coulomb_with_maximal_dissipation():
    sticking = []
    for seed in range(6):
        D, s0, F0, mu, gamma = random_problem(seed)
        out = solve_disc_friction(D, s0, F0, mu, gamma, tolerance=1e-13, max_sweeps=20000)
        assert out.converged
        np.testing.assert_allclose(out.slip, (s0.ravel() + D @ (out.F - F0).ravel()).reshape(-1, 2))
        assert_coulomb(out, mu, gamma)
        sticking += list(out.sticking)
    assert 0.1 < np.mean(sticking) < 0.9  # the problems mix sticking and sliding contacts


def test_a_single_contact_sticks_or_slides_like_a_block_on_a_table():
    """One contact with compliance 1/m: stick if the force m·s that stops the slip is within μΓ."""
    m, s = 0.01, np.array([[2e-3, 0.0]])
    D = np.eye(2) / m
    stick = solve_disc_friction(D, s, np.zeros((1, 2)), [0.5], [1e-4])  # needs 2e-5 ≤ 5e-5
    np.testing.assert_allclose(stick.F, [[-2e-5, 0.0]], rtol=1e-10)
    assert stick.sticking[0] and np.abs(stick.slip).max() < 1e-13
    slide = solve_disc_friction(D, s, np.zeros((1, 2)), [0.5], [2e-5])  # μΓ = 1e-5 < 2e-5
    np.testing.assert_allclose(slide.F, [[-1e-5, 0.0]], rtol=1e-12)
    np.testing.assert_allclose(slide.slip, [[1e-3, 0.0]], rtol=1e-12)  # half the slip remains
    assert not slide.sticking[0]


def test_local_problem_is_the_exact_minimiser_on_the_disc():
    rng = np.random.default_rng(0)
    th = np.linspace(0, 2 * np.pi, 20001)
    for _ in range(200):
        A = rng.normal(size=(2, 2))
        D = A @ A.T if rng.random() < 0.7 else np.outer(A[0], A[0])  # singular blocks too
        b = rng.normal(size=2)
        R = rng.uniform(0.01, 2.0)
        x = np.array(_local_disc(D[0, 0], D[0, 1], D[1, 1], b[0], b[1], R, 1e-12 * D.diagonal().max()))
        f = 0.5 * x @ D @ x + b @ x
        Y = R * np.column_stack([np.cos(th), np.sin(th)])
        f_boundary = (0.5 * np.einsum("ij,jk,ik->i", Y, D, Y) + Y @ b).min()
        assert np.linalg.norm(x) <= R * (1 + 1e-12)
        assert f <= f_boundary + 1e-9 * max(1.0, abs(f_boundary))


def test_normal_coupling_uses_the_predicted_normal_impulse():
    """Γ(F) = Γ0 + N F: a friction force that raises the normal impulse enlarges its own disc."""
    D = np.eye(2) * 100.0
    s = np.array([[1e-3, 0.0]])
    N = np.array([[-2.0, 0.0]])  # pushing back along −x (F_x < 0) raises Γ
    plain = solve_disc_friction(D, s, np.zeros((1, 2)), [0.5], [1e-6])
    coupled = solve_disc_friction(D, s, np.zeros((1, 2)), [0.5], [1e-6], normal_response=N,
                                  tolerance=1e-16, max_sweeps=1000)
    assert np.linalg.norm(plain.F) == pytest.approx(0.5e-6) and not plain.sticking[0]
    # the stopping force −1e-5 raises Γ to 2.1e-5, whose disc (1.05e-5) now holds it: stick
    np.testing.assert_allclose(coupled.F, [[-1e-5, 0.0]], rtol=1e-9)
    assert coupled.sticking[0] and np.abs(coupled.slip).max() < 1e-12
    assert coupled.gamma[0] == pytest.approx(1e-6 - 2.0 * coupled.F[0, 0])


def test_bad_input_is_named():
    D, s0, F0, mu, gamma = random_problem(0, c=3)
    with pytest.raises(ValueError, match="D must have shape"):
        solve_disc_friction(D[:4, :4], s0, F0, mu, gamma)
    with pytest.raises(ValueError, match="must be ≥ 0"):
        solve_disc_friction(D, s0, F0, -mu, gamma)
    with pytest.raises(ValueError, match="non-finite"):
        solve_disc_friction(D * np.nan, s0, F0, mu, gamma)


def test_delassus_compliance_predicts_the_qp_response():
    """T P Tᵀ δF equals the change of the QP's slips when the friction changes by Tᵀ δF (fixed
    working set), and Z δF the change of the contact multipliers."""
    rng = np.random.default_rng(2)
    N, mE, mI = 60, 12, 10
    w = rng.uniform(0.5, 2.0, N)
    A_E = sp.random(mE, N, density=0.2, random_state=1, format="csr") + sp.eye(mE, N, format="csr")
    A_I = sp.csr_matrix(np.eye(mI, N, k=20))
    c_E, h = rng.normal(size=mE) * 0.1, -np.abs(rng.normal(size=mI)) * 0.1  # all contacts pushed
    T = sp.csr_matrix(np.eye(4, N, k=40))
    qp = SolverActiveSet(regularization=0.0)
    f0 = rng.normal(size=N) * 0.01
    dF = rng.normal(size=4) * 1e-3
    a = qp.solve_qp(w, f0, A_E, c_E, A_I, h, np.arange(mI))
    W = a.working
    assert W.size >= 5
    b = qp.solve_qp(w, f0 + T.T @ dF, A_E, c_E, A_I, h, W)
    assert np.array_equal(b.working, W)
    D, Z = WorkingFactor(w, A_E, A_I, W, regularization=0.0).compliance(T)
    np.testing.assert_allclose(T @ (b.dx - a.dx), D @ dF, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(b.gamma[W] - a.gamma[W], Z[mE:] @ dF, rtol=1e-8, atol=1e-15)
    assert np.linalg.eigvalsh(D).min() > -1e-12


def test_the_working_set_reached_by_bordered_updates_has_the_compliance_of_its_own_factor():
    """A QP started from a working set that differs from its final one: the compliance of its final state
    (bordered updates of the starting factor) equals that of a factorization of the final working set, and the
    next QP warm-started from that state solves in one step with the same result as a cold start."""
    rng = np.random.default_rng(5)
    N, mE, mI = 60, 12, 10
    w = rng.uniform(0.5, 2.0, N)
    A_E = sp.random(mE, N, density=0.2, random_state=3, format="csr") + sp.eye(mE, N, format="csr")
    A_I = sp.csr_matrix(np.eye(mI, N, k=20) + 0.3 * np.eye(mI, N, k=21))
    c_E, h = rng.normal(size=mE) * 0.1, -np.abs(rng.normal(size=mI)) * 0.1
    T = sp.csr_matrix(np.eye(6, N, k=20))
    solver = SolverActiveSet(regularization=0.0)
    start = np.array([0, 1, 2, 7, 8, 9])  # far from the final working set: rows enter and leave
    factor = solver.factorize(w, A_E, A_I, start)
    f = rng.normal(size=N) * 0.01
    a = solver.solve_qp(w, f, A_E, c_E, A_I, h, start, factor=factor)
    assert a.state is not None and a.added + a.removed >= 2 and not np.array_equal(a.working, start)
    D, rows, Z = a.state.contact_compliance(T)
    D_ref, rows_ref, Z_ref = WorkingFactor(w, A_E, A_I, a.working, regularization=0.0).contact_compliance(T)
    order = np.argsort(rows)
    assert np.array_equal(rows[order], rows_ref)
    np.testing.assert_allclose(D, D_ref, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(Z[order], Z_ref, rtol=1e-8, atol=1e-13)
    g = f + T.T @ (rng.normal(size=6) * 1e-3)  # another linear term, same matrices
    warm = solver.solve_qp(w, g, A_E, c_E, A_I, h, start, factor=factor, start=a.state)
    cold = solver.solve_qp(w, g, A_E, c_E, A_I, h, a.working)
    np.testing.assert_allclose(warm.dx, cold.dx, rtol=1e-9, atol=1e-14)
    assert warm.factorizations == 0 and warm.added + warm.removed <= 1
