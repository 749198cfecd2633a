"""Coulomb friction with given normal impulses: per-contact local problems, Gauss–Seidel sweeps.

The contact projection (thesis §3.4) lags the normal impulses Γ of friction by one iteration, as
seed 000 eq. 5 does. For fixed Γ the friction impulses F_i (2-vectors in the tangent plane of
contact i) and the tangential slips s_i of the next QP are related linearly,

    s = s0 + D (F − F0),

with D the tangential Delassus operator of the contacts once the working constraints are
eliminated (:meth:`~isocloth.solvers.active_set.WorkingFactor.compliance`), s0 the current slips
and F0 the friction already applied. Coulomb's law with maximal dissipation (seed 000 eq. 3 and
Remark 2.2.3; Li et al. 2018 §4.1) then says, per contact,

    ‖F_i‖ ≤ μ_i Γ_i,   and   s_i = 0 (stick)   or   F_i = −μ_i Γ_i s_i/‖s_i‖ (slide),

which are the KKT conditions of the convex problem  min ½ (F − F0)ᵀ D (F − F0) + s0ᵀ(F − F0)
over the discs ‖F_i‖ ≤ μ_i Γ_i. It is solved by block Gauss–Seidel over the contacts (Li et al.
2018 Algorithm 1, on this dual form): each contact solves its local problem exactly with its 2×2
diagonal block D_ii and the current slips of the others — stick if the force that stops the slip
lies in the disc, otherwise the minimiser on the disc boundary (a 1-D secular equation, Newton's
method as in Moré & Sorensen 1983).

:class:`FrictionImpulses` keeps the normal and friction impulses of one step of the contact
projection per row key and sets up these problems for rows with barycentric weights
(:class:`~isocloth.contact.rows.ContactRows`: node–obstacle contacts, cloth–cloth and thin-obstacle
rows): an impulse along a row acts as w_i times the impulse on node i, the slip of a row is its
weighted relative displacement, and its Coulomb disc has radius μ times the row's normal impulse.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

__all__ = ["FrictionResult", "FrictionImpulses", "solve_disc_friction"]


@dataclass
class FrictionResult:
    """Friction impulses of :func:`solve_disc_friction`.

    Attributes
    ----------
    F : (c, 2) float64, friction impulses in each contact's tangent basis (same units as s/D)
    slip : (c, 2) float64, predicted slips s0 + D (F − F0) [m]
    sweeps : int, Gauss–Seidel sweeps done
    converged : bool, largest slip change of the last sweep ≤ tolerance
    sticking : (c,) bool, contacts strictly inside their disc
    gamma : (c,) float64, normal impulses predicted for F (= the given ones without normal_response)
    """

    F: np.ndarray
    slip: np.ndarray
    sweeps: int
    converged: bool
    sticking: np.ndarray
    gamma: np.ndarray


def solve_disc_friction(D, s0, F0, mu, gamma, *, normal_response=None, tolerance: float = 1e-10,
                        max_sweeps: int = 500, regularization: float = 1e-12) -> FrictionResult:
    """Friction impulses F for given normal impulses (module docstring).

    Parameters
    ----------
    D : (2c, 2c) float64, symmetric positive semi-definite slip response [m per impulse unit]
    s0 : (c, 2) float64 [m], slips with the friction F0 applied
    F0 : (c, 2) float64, friction impulses already applied (start of the sweeps)
    mu : (c,) float64 ≥ 0, friction coefficients; gamma : (c,) float64 ≥ 0, normal impulses Γ
        with F0 applied (disc radii μ_i Γ_i)
    normal_response : (c, 2c) float64, optional, ∂Γ/∂F: the normal impulses then follow the
        friction linearly, Γ(F) = gamma + N (F − F0) (clipped at 0), and each local problem uses
        the current prediction (the normal–tangential coupling of Coulomb's law, e.g. a cloth
        whose tension, and so its pressure on a bar, depends on the friction)
    tolerance : float [m], stop when no slip changes by more than this in a sweep
    max_sweeps : int
    regularization : float, relative shift of the 2×2 blocks (rank-deficient D)

    Returns
    -------
    FrictionResult

    Raises
    ------
    ValueError
        For inconsistent shapes, a non-finite D or negative radii.
    """
    s0 = np.ascontiguousarray(s0, dtype=np.float64).reshape(-1, 2)
    c = s0.shape[0]
    F0 = np.ascontiguousarray(F0, dtype=np.float64).reshape(c, 2)
    D = np.ascontiguousarray(D, dtype=np.float64)
    mu = np.ascontiguousarray(mu, dtype=np.float64).reshape(c)
    gamma = np.ascontiguousarray(gamma, dtype=np.float64).reshape(c)
    N = np.zeros((c, 2 * c)) if normal_response is None else np.ascontiguousarray(normal_response, dtype=np.float64)
    if D.shape != (2 * c, 2 * c):
        raise ValueError(f"D must have shape {(2 * c, 2 * c)} for {c} contacts, got {D.shape}")
    if N.shape != (c, 2 * c):
        raise ValueError(f"normal_response must have shape {(c, 2 * c)}, got {N.shape}")
    if not (np.isfinite(D).all() and np.isfinite(s0).all() and np.isfinite(F0).all() and np.isfinite(N).all()):
        raise ValueError("friction problem has non-finite entries (check the contact data)")
    if (mu < 0).any() or (gamma < 0).any():
        raise ValueError("friction coefficients μ and normal impulses Γ must be ≥ 0")
    F = F0.copy()
    g = gamma.copy()
    eps = regularization * (float(np.abs(np.diag(D)).max()) if c else 0.0)
    sweeps, change = _gauss_seidel(D, N, s0.ravel().copy(), F0.ravel(), F.ravel(), mu, g, eps, tolerance,
                                   max_sweeps)
    slip = (s0.ravel() + D @ (F - F0).ravel()).reshape(c, 2)
    stick = np.linalg.norm(F, axis=1) < mu * np.maximum(g, 0.0) * (1 - 1e-9)
    return FrictionResult(F, slip, int(sweeps), bool(change <= tolerance), stick, np.maximum(g, 0.0))


@nb.njit(cache=True)
def _ratio(num, den):
    """num/den with 0/0 = 0 and x/0 = inf."""
    if num == 0.0:
        return 0.0
    if den <= 0.0:
        return np.inf
    return num / den


@nb.njit(cache=True)
def _local_disc(D00, D01, D11, b0, b1, R, eps):
    """argmin ½ xᵀ D x + bᵀ x over ‖x‖ ≤ R for a 2×2 symmetric PSD D (shifted by eps)."""
    if R <= 0.0:
        return 0.0, 0.0
    a00 = D00 + eps
    a11 = D11 + eps
    det = a00 * a11 - D01 * D01
    if det > 0.0:
        x0 = -(a11 * b0 - D01 * b1) / det
        x1 = -(-D01 * b0 + a00 * b1) / det
        if x0 * x0 + x1 * x1 <= R * R:
            return x0, x1  # stick: the force that stops the slip lies in the disc
    # boundary: (D + νI) x = −b with ‖x‖ = R, ν ≥ 0; eigen-decomposition of the 2×2 block
    tr = a00 + a11
    dd = np.sqrt(max(0.25 * (a00 - a11) ** 2 + D01 * D01, 0.0))
    l1 = 0.5 * tr - dd
    l2 = 0.5 * tr + dd
    if D01 != 0.0:
        e1x, e1y = l1 - a11, D01
    elif a00 <= a11:
        e1x, e1y = 1.0, 0.0
    else:
        e1x, e1y = 0.0, 1.0
    nrm = np.sqrt(e1x * e1x + e1y * e1y)
    e1x /= nrm
    e1y /= nrm
    e2x, e2y = -e1y, e1x
    l1 = max(l1, 0.0)
    beta1 = b0 * e1x + b1 * e1y
    beta2 = b0 * e2x + b1 * e2y
    if beta1 == 0.0 and beta2 == 0.0:
        return 0.0, 0.0
    # Newton on φ(ν) = 1/‖x(ν)‖ − 1/R from the left (monotone convergence)
    nu = 0.0
    if det <= 0.0:
        nu = max(np.sqrt(beta1 * beta1 + beta2 * beta2) / R - l2, 0.0)
    for _ in range(100):
        q1 = _ratio(beta1, l1 + nu)
        q2 = _ratio(beta2, l2 + nu)
        n2 = q1 * q1 + q2 * q2
        if not np.isfinite(n2):
            nu = max(nu, 1e-300) * 2.0 + np.sqrt(beta1 * beta1 + beta2 * beta2) / R
            continue
        norm = np.sqrt(n2)
        phi = 1.0 / norm - 1.0 / R
        # dφ/dν = (Σ q_k² / (l_k + ν)) / ‖x‖³
        dphi = (_ratio(q1 * q1, l1 + nu) + _ratio(q2 * q2, l2 + nu)) / (norm * n2)
        step = -phi / dphi
        nu_new = max(nu + step, 0.0)
        if abs(nu_new - nu) <= 1e-14 * max(nu_new, 1e-300) or abs(phi) * R < 1e-14:
            nu = nu_new
            break
        nu = nu_new
    q1 = _ratio(beta1, l1 + nu)
    q2 = _ratio(beta2, l2 + nu)
    if not (np.isfinite(q1) and np.isfinite(q2)):
        return 0.0, 0.0
    x0 = -(q1 * e1x + q2 * e2x)
    x1 = -(q1 * e1y + q2 * e2y)
    n = np.sqrt(x0 * x0 + x1 * x1)
    if n > R:  # exact radius (rounding)
        x0 *= R / n
        x1 *= R / n
    return x0, x1


@nb.njit(cache=True)
def _gauss_seidel(D, N, s0, F0, F, mu, g, eps, tol, max_sweeps):
    """Block Gauss–Seidel on the disc problem; F and the predicted normal impulses g are updated
    in place. Returns (sweeps, last max change)."""
    c = mu.shape[0]
    m = 2 * c
    r = s0.copy()  # current slips s0 + D (F − F0)
    for j in range(m):
        dj = F[j] - F0[j]
        if dj != 0.0:
            for i in range(m):
                r[i] += D[i, j] * dj
            for i in range(c):
                g[i] += N[i, j] * dj
    change = np.inf
    sweeps = 0
    while sweeps < max_sweeps:
        sweeps += 1
        change = 0.0
        for k in range(c):
            a = 2 * k
            b = a + 1
            D00, D01, D11 = D[a, a], D[a, b], D[b, b]
            # local problem in x = F_k: ½ xᵀ D_kk x + (r_k − D_kk F_k)ᵀ x
            g0 = r[a] - (D00 * F[a] + D01 * F[b])
            g1 = r[b] - (D01 * F[a] + D11 * F[b])
            x0, x1 = _local_disc(D00, D01, D11, g0, g1, mu[k] * max(g[k], 0.0), eps)
            d0 = x0 - F[a]
            d1 = x1 - F[b]
            if d0 == 0.0 and d1 == 0.0:
                continue
            F[a] = x0
            F[b] = x1
            for i in range(m):
                r[i] += D[i, a] * d0 + D[i, b] * d1
            for i in range(c):
                g[i] += N[i, a] * d0 + N[i, b] * d1
            ch = max(abs(D00 * d0 + D01 * d1), abs(D01 * d0 + D11 * d1))
            if ch > change:
                change = ch
        if change <= tol:
            break
    return sweeps, change


class FrictionImpulses:
    """Normal and friction impulses of the contact rows of one step, per row key.

    Each QP re-solves the total normal impulses: the impulses Γ_k ∇H_k applied by the previous QP
    are withdrawn in its linear term and its multipliers γ are the new totals (Γ_k = γ_k), so a
    row that stops pushing also stops carrying friction (Signorini: no normal force, no friction,
    thesis Remark 2.2.2), and the total contact impulse of the step is exactly Σ Γ_k ∇H_k + friction.
    Rows have weights w on up to four nodes (a node–obstacle contact: w = 1 on its node); an
    impulse P of a row acts as w_i P on node i. The weights a key had when its impulse was applied
    are kept with it, so a row found again with other weights is withdrawn exactly.
    """

    def __init__(self) -> None:
        self.gamma: dict[int, float] = {}  # normal impulse Γ per key (last QP, > 0 only)
        self.normal_impulse: dict[int, tuple] = {}  # (nodes, (k, 3) impulses w_i Γ ν) of the last QP
        self.force: dict[int, tuple] = {}  # (F (3,), nodes, weights): friction impulse applied so far
        self.mu: dict[int, float] = {}
        self._pending: dict[int, tuple] = {}

    def has_impulses(self) -> bool:
        return bool(self.gamma) or bool(self.force)

    def withdraw_normal(self, f) -> None:
        """Subtract the normal impulses of the last QP from the linear term f (n, 3)."""
        for nodes, imp in self.normal_impulse.values():
            f[nodes] -= imp

    def set_normal_impulse(self, rows, gamma) -> None:
        """Normal impulses of the QP just solved (multipliers γ (c,) of ``rows``, a ContactRows)."""
        g_min = 1e-9 * float(gamma.max()) if gamma.size else 0.0  # interior point: tiny positive values
        keys = rows.keys
        push = np.flatnonzero(gamma > g_min)
        self.gamma = {int(keys[r]): float(gamma[r]) for r in push}
        self.normal_impulse = {}
        for r, (nodes, wts) in zip(push, rows.supports(push)):
            self.normal_impulse[int(keys[r])] = (nodes, wts[:, None] * (float(gamma[r]) * rows.normal[r])[None, :])
        self.mu = {int(keys[r]): float(rows.mu[r]) for r in push}

    def rows(self, rows) -> np.ndarray:
        """Indices of ``rows`` that carry friction (normal impulse > 0, μ > 0)."""
        fk = np.fromiter((k for k in self.gamma if self.mu.get(k, 0.0) > 0), dtype=np.int64)
        return np.flatnonzero(np.isin(rows.keys, fk))

    def update(self, rows, x, x_prev, dt, factor, opts, f, stats) -> bool:
        """Friction impulses for the current normal impulses; adds their change to f (n, 3).

        ``rows`` : ContactRows at the current iterate; ``factor`` : the working set whose response
        the friction problem uses (a WorkingFactor of the next QP's, or the ``state`` of the QP just
        solved: anything with ``contact_compliance``; required when some row carries friction); ``opts`` : the ContactProjection
        (friction settings); ``stats`` : ContactStats (friction counters). Returns True when
        friction has settled: the pending change moves no contact point by more than
        ``opts.slip_tolerance``, or, for a contact that slips by s in the step, by more than
        ``opts.slip_relative_tolerance`` × |s|.
        """
        self._pending = {}
        keys = rows.keys
        idx = self.rows(rows)
        settled = True
        # friction of rows that no longer push (or left the detection band) is withdrawn
        for k in set(self.force) - set(keys[idx].tolist()):
            F, nodes, wts = self.force[k]
            if np.any(F != 0):
                f[nodes] -= wts[:, None] * F[None, :]
                self._pending[k] = (np.zeros(3), nodes, wts)
                settled = False
        if idx.size == 0:
            return settled
        tb = rows.tangent_basis()
        basis = tb[idx]  # (k, 2, 3)
        # the factor's own (regularised) response, without refinement: nearly dependent rows stay
        # as soft as in the QP's first solve
        D, working, Z = factor.contact_compliance(rows.tangent_jacobian(x.shape[0], idx, tb))
        # normal impulses of the friction rows per unit friction
        pos = {int(k): i for i, k in enumerate(keys[working])}
        N = np.zeros((idx.size, 2 * idx.size))
        for i, k in enumerate(keys[idx]):
            if int(k) in pos:
                N[i] = Z[pos[int(k)]]
        s0 = rows.slip(x, x_prev, dt, idx, tb)
        zero = (np.zeros(3), None, None)
        old = [self.force.get(int(k), zero) for k in keys[idx]]
        F3_old = np.array([o[0] for o in old])
        F0 = np.einsum("kij,kj->ki", basis, F3_old)
        mu = np.array([self.mu[int(k)] for k in keys[idx]])
        gamma = np.array([self.gamma[int(k)] for k in keys[idx]])
        # proximal term ½ρ‖F − F0‖² (ρ relative to the largest compliance): the friction changes only
        # where the slips ask for it; it vanishes at the fixed point (δ → 0)
        rho = opts.friction_proximal * float(np.diag(D).max()) if D.size else 0.0
        Dp = D + rho * np.eye(D.shape[0]) if rho > 0 else D
        out = solve_disc_friction(Dp, s0, F0, mu, gamma, normal_response=N if opts.normal_coupling else None,
                                  tolerance=opts.friction_tolerance, max_sweeps=opts.friction_sweeps)
        stats.friction_solves += 1
        stats.friction_sweeps += out.sweeps

        stats.sticking = int(out.sticking.sum())
        stats.sliding = int(idx.size - stats.sticking)
        F3_new = np.einsum("kij,ki->kj", basis, out.F)
        supports = rows.supports(idx)
        # apply the change: on the same support as the impulse already applied, the difference;
        # otherwise withdraw the old impulse on its support and apply the new one
        same_n, same_d = [], []
        for i, (k, (nodes, wts)) in enumerate(zip(keys[idx], supports)):
            F_old, n_old, w_old = old[i]
            if n_old is None or (np.array_equal(n_old, nodes) and np.array_equal(w_old, wts)):
                same_n.append(nodes)
                same_d.append(wts[:, None] * (F3_new[i] - F3_old[i])[None, :])
            else:
                f[n_old] -= w_old[:, None] * F_old[None, :]
                f[nodes] += wts[:, None] * F3_new[i][None, :]
            self._pending[int(k)] = (F3_new[i], nodes, wts)
        if same_n:
            np.add.at(f, np.concatenate(same_n), np.concatenate(same_d))
        # settled: the pending change moves no contact point by more than ε2, or, for a contact that
        # slips, by more than slip_relative_tolerance times its slip in the step
        moved = np.linalg.norm((D @ (out.F - F0).ravel()).reshape(-1, 2), axis=1)
        allowed = np.maximum(opts.slip_tolerance, opts.slip_relative_tolerance * np.linalg.norm(s0, axis=1))
        return settled and bool(np.all(moved <= allowed))

    def discard(self) -> None:
        """Forget the changes written by :meth:`update` (they are not applied)."""
        self._pending = {}

    def commit(self) -> None:
        """The changes written by :meth:`update` are applied by the next QP."""
        for k, v in self._pending.items():
            self.force[k] = v
        self._pending = {}
