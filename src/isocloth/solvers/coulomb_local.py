"""Exact Coulomb friction at one contact: the Signorini–Coulomb law on the second-order cone, the
modified Fischer–Burmeister function that is zero exactly on it, and the local solver of the nodal
Gauss–Seidel (Li et al. 2018 §4.3; Daviet, Bertails-Descoubes & Boissieux 2011, Appendix A).

One contact: a relative velocity u = (u_N, u_T) and an impulse r = (r_N, r_T) in the contact frame
(normal first) satisfy the law C_μ (Li et al. 2018 §4.1) when they

- take off:  r = 0 and u_N ≥ 0,
- stick:     u = 0 and ‖r_T‖ ≤ μ r_N,
- or slide:  u_N = 0, ‖r_T‖ = μ r_N and r_T = −α u_T for some α > 0.

With the De Saxcé change of variable ũ = u + μ‖u_T‖ e_N (Li eq. 10) and the symmetrisation
û = (ũ_N, μ ũ_T), r̂ = (μ r_N, r_T) (Li eq. 12) the law is the complementarity û ∈ K, r̂ ∈ K, û·r̂ = 0 on
the self-dual cone K = {(a_0, ā): a_0 ≥ ‖ā‖}, and that holds exactly where the Fischer–Burmeister
function of the cone's Jordan algebra vanishes (Fukushima, Luo & Tseng 2002):

    f(x, y) = x + y − (x∘x + y∘y)^{1/2},   x∘y = (x·y, x_0 ȳ + y_0 x̄).

The local problem couples u and r linearly, u = M_u z + c_u and r = M_r z + c_r in an unknown z: the
primal problem of Li eq. 11 has z = u (r = W u + d), the dual one z = r (u = W r + d). The solver
tries the two closed-form cases first (take-off, stick), then μ = 0 (frictionless sliding), then
Newton's method on z ↦ f(û(z), r̂(z)/w) with a backtracking line search on ‖f‖. The impulse is
divided by a mass scale w [kg] so that the residual is a velocity [m/s]; the law is invariant under
this positive scaling.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["contact_residual", "coulomb_residual", "fischer_burmeister", "solve_local"]

LOCAL_TOLERANCE = 1e-13
"""Relative tolerance of the local Newton method: ‖f‖ ≤ LOCAL_TOLERANCE × (1 + scale of the data)."""


@njit(cache=True)
def _jordan_sqrt(z0, z1, z2, det):
    """(z)^{1/2} in the Jordan algebra of the 3-D second-order cone (spectral decomposition), z ∈ K,
    given det(z) = z0² − ‖z̄‖² computed without cancellation: the small eigenvalue is
    det(z)/(z0 + ‖z̄‖), not z0 − ‖z̄‖ (which loses every digit on the cone's boundary)."""
    nz = math.sqrt(z1 * z1 + z2 * z2)
    big = z0 + nz
    s2 = math.sqrt(max(big, 0.0))
    s1 = math.sqrt(max(det / big, 0.0)) if big > 0.0 else 0.0
    if nz > 0.0:
        h = 0.5 * (s2 - s1) / nz
        return 0.5 * (s1 + s2), h * z1, h * z2
    return 0.5 * (s1 + s2), 0.0, 0.0


@njit(cache=True)
def _det(a):
    """a0² − ‖ā‖² as (a0 − ‖ā‖)(a0 + ‖ā‖)."""
    n = math.sqrt(a[1] * a[1] + a[2] * a[2])
    return (a[0] - n) * (a[0] + n)


@njit(cache=True)
def _fb(x, y, out):
    """out ← f(x, y) (3,); returns the square root q (3-tuple) for the Jacobian."""
    z0 = x[0] * x[0] + x[1] * x[1] + x[2] * x[2] + y[0] * y[0] + y[1] * y[1] + y[2] * y[2]
    z1 = 2.0 * (x[0] * x[1] + y[0] * y[1])
    z2 = 2.0 * (x[0] * x[2] + y[0] * y[2])
    # det(x∘x + y∘y) = det(x)² + det(y)² + 2(‖x‖²‖y‖² − 4 x0 y0 x̄·ȳ): no cancellation on the cone's boundary
    xx = x[0] * x[0] + x[1] * x[1] + x[2] * x[2]
    yy = y[0] * y[0] + y[1] * y[1] + y[2] * y[2]
    det = _det(x) ** 2 + _det(y) ** 2 + 2.0 * (xx * yy - 4.0 * x[0] * y[0] * (x[1] * y[1] + x[2] * y[2]))
    q0, q1, q2 = _jordan_sqrt(z0, z1, z2, det)
    out[0] = x[0] + y[0] - q0
    out[1] = x[1] + y[1] - q1
    out[2] = x[2] + y[2] - q2
    return q0, q1, q2


@njit(cache=True)
def _arrow_inverse(q0, q1, q2, out):
    """out ← L_q⁻¹ (3, 3), L_q = [[q0, q̄ᵀ], [q̄, q0 I]] the Jordan product matrix (q∘p = L_q p),
    regularised where q reaches the cone's boundary (a non-smooth point of f)."""
    qq = q1 * q1 + q2 * q2
    det = q0 * q0 - qq
    floor = 1e-14 * (q0 * q0 + 1e-300)
    if det < floor:
        det = floor
    if q0 < 1e-300:
        q0 = 1e-300
    c = 1.0 / (q0 * det)
    out[0, 0] = c * q0 * q0
    out[0, 1] = -c * q0 * q1
    out[0, 2] = -c * q0 * q2
    out[1, 0] = out[0, 1]
    out[2, 0] = out[0, 2]
    out[1, 1] = c * (det + q1 * q1)
    out[2, 2] = c * (det + q2 * q2)
    out[1, 2] = c * q1 * q2
    out[2, 1] = out[1, 2]


@njit(cache=True)
def _arrow(x, out):
    """out ← L_x (3, 3)."""
    out[0, 0] = x[0]
    out[0, 1] = x[1]
    out[0, 2] = x[2]
    out[1, 0] = x[1]
    out[2, 0] = x[2]
    out[1, 1] = x[0]
    out[2, 2] = x[0]
    out[1, 2] = 0.0
    out[2, 1] = 0.0


@njit(cache=True)
def _hat(Mu, cu, Mr, cr, z, mu, w, uh, rh, u, r):
    """u, r of z; û (Li eqs. 10, 12) and r̂/w."""
    for a in range(3):
        u[a] = cu[a] + Mu[a, 0] * z[0] + Mu[a, 1] * z[1] + Mu[a, 2] * z[2]
        r[a] = cr[a] + Mr[a, 0] * z[0] + Mr[a, 1] * z[1] + Mr[a, 2] * z[2]
    uT = math.sqrt(u[1] * u[1] + u[2] * u[2])
    uh[0] = u[0] + mu * uT
    uh[1] = mu * u[1]
    uh[2] = mu * u[2]
    rh[0] = mu * r[0] / w
    rh[1] = r[1] / w
    rh[2] = r[2] / w
    return uT


@njit(cache=True)
def _residual(Mu, cu, Mr, cr, z, mu, w, g):
    uh, rh, u, r = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    _hat(Mu, cu, Mr, cr, z, mu, w, uh, rh, u, r)
    _fb(uh, rh, g)
    return math.sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2])


@njit(cache=True)
def _newton(Mu, cu, Mr, cr, mu, w, z, tol, max_iter):
    """Newton's method with backtracking on z ↦ f(û(z), r̂(z)/w); z updated in place. Returns
    (‖f‖, iterations)."""
    g, gt, zt = np.empty(3), np.empty(3), np.empty(3)
    uh, rh, u, r = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    Lq, Lx, Ly = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    Du, Dr, J = np.zeros((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    norm = 0.0
    for it in range(max_iter):
        uT = _hat(Mu, cu, Mr, cr, z, mu, w, uh, rh, u, r)
        q0, q1, q2 = _fb(uh, rh, g)
        norm = math.sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2])
        if norm <= tol:
            return norm, it
        # ∂f/∂x = I − L_q⁻¹ L_x, ∂f/∂y = I − L_q⁻¹ L_y (from q∘q = x∘x + y∘y)
        _arrow_inverse(q0, q1, q2, Lq)
        _arrow(uh, Lx)
        _arrow(rh, Ly)
        fx = np.eye(3) - Lq @ Lx
        fy = np.eye(3) - Lq @ Ly
        # dû/du (Li eq. 10, 12): rows (1, μ u_Tᵀ/‖u_T‖), (0, μ I); dr̂/dr = diag(μ, 1, 1)/w
        Du[:] = 0.0
        Du[0, 0] = 1.0
        if uT > 0.0:
            Du[0, 1] = mu * u[1] / uT
            Du[0, 2] = mu * u[2] / uT
        Du[1, 1] = mu
        Du[2, 2] = mu
        for b in range(3):
            Dr[0, b] = mu * Mr[0, b] / w
            Dr[1, b] = Mr[1, b] / w
            Dr[2, b] = Mr[2, b] / w
        J[:] = fx @ (Du @ Mu) + fy @ Dr
        try:
            step = np.linalg.solve(J, -g)
        except Exception:  # noqa: BLE001 - a singular Jacobian: steepest descent on ½‖f‖²
            step = -(J.T @ g)
        t = 1.0
        accepted = False
        for _ in range(30):
            for a in range(3):
                zt[a] = z[a] + t * step[a]
            if _residual(Mu, cu, Mr, cr, zt, mu, w, gt) <= (1.0 - 1e-4 * t) * norm:
                accepted = True
                break
            t *= 0.5
        if not accepted:
            return norm, it
        z[:] = zt
    _hat(Mu, cu, Mr, cr, z, mu, w, uh, rh, u, r)
    _fb(uh, rh, g)
    return math.sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]), max_iter


@njit(cache=True)
def _slide_system(W, d, mu, a, primal, z):
    """The sliding candidate of parameter a ≥ 0 into z, and φ(a) whose roots are the sliding
    solutions. Primal (z = u = (0, u_T)): (W_TT + a I) u_T = −d_T, so r_T = −a u_T, and
    φ = a‖u_T‖ − μ r_N. Dual (z = r): [[W_NN, W_NT], [W_TN, W_TT + a I]] r = −d, so u_N = 0 and
    u_T = −a r_T, and φ = ‖r_T‖ − μ r_N."""
    M = W.copy()
    M[1, 1] += a
    M[2, 2] += a
    if primal:
        det = M[1, 1] * M[2, 2] - M[1, 2] * M[2, 1]
        z[0] = 0.0
        z[1] = (-d[1] * M[2, 2] + d[2] * M[1, 2]) / det
        z[2] = (-d[2] * M[1, 1] + d[1] * M[2, 1]) / det
        rN = W[0, 1] * z[1] + W[0, 2] * z[2] + d[0]
        return a * math.sqrt(z[1] * z[1] + z[2] * z[2]) - mu * rN, rN
    sol = np.linalg.solve(M, -d)
    z[:] = sol
    return math.sqrt(z[1] * z[1] + z[2] * z[2]) - mu * z[0], z[0]


@njit(cache=True)
def _slide_scan(W, d, mu, primal, z):
    """A sliding solution by bracketing φ's sign change on a log grid of the parameter (a of
    :func:`_slide_system`, 1e-10 to 1e10 times the scale of W) and bisection; z ← it. Returns
    whether one was found (with r_N > 0)."""
    scale = (W[1, 1] + W[2, 2]) / 2.0
    prev_a = 0.0
    prev_phi, rN = _slide_system(W, d, mu, 0.0, primal, z)
    for k in range(241):
        a = scale * 10.0 ** (-10.0 + k / 12.0)
        phi, rN = _slide_system(W, d, mu, a, primal, z)
        if (phi > 0.0) != (prev_phi > 0.0) and rN > 0.0:
            lo, hi, flo = prev_a, a, prev_phi
            for _ in range(200):
                mid = 0.5 * (lo + hi)
                fm, rN = _slide_system(W, d, mu, mid, primal, z)
                if (fm > 0.0) == (flo > 0.0):
                    lo, flo = mid, fm
                else:
                    hi = mid
                if hi - lo <= 1e-16 * hi:
                    break
            _slide_system(W, d, mu, 0.5 * (lo + hi), primal, z)
            return True
        prev_a, prev_phi = a, phi
    return False


@njit(cache=True)
def _slide(Mu, cu, Mr, cr, W, d, mu, w, primal, z, tol, max_iter):
    """The sliding case from the start z (3,), in place: Newton's method on f(û(z), r̂(z)/w); where it
    stalls, the sliding solution bracketed by :func:`_slide_scan` and polished, kept if it is better.
    Returns the residual [m/s]."""
    res, _ = _newton(Mu, cu, Mr, cr, mu, w, z, tol, max_iter)
    if res > tol:
        trial = z.copy()
        if _slide_scan(W, d, mu, primal, trial):
            res2, _ = _newton(Mu, cu, Mr, cr, mu, w, trial, tol, max_iter)
            if res2 < res:
                z[:] = trial
                res = res2
    return res


@njit(cache=True)
def local_primal(W, d, mu, w, u, tol_scale, max_iter):
    """Li eq. 11 at one contact: u (3,) in place such that (W u + d, u) ∈ C_μ. W (3, 3) SPD [kg],
    d (3,) [N s], w mass scale [kg]. Returns (residual [m/s], converged)."""
    # stick: u = 0 and r = d inside the cone
    if d[0] >= 0.0 and mu * d[0] >= math.sqrt(d[1] * d[1] + d[2] * d[2]):
        u[:] = 0.0
        return 0.0, True
    # take off: r = 0, u = −W⁻¹ d with u_N ≥ 0
    free = np.linalg.solve(W, -d)
    if free[0] >= 0.0:
        u[:] = free
        return 0.0, True
    tol = LOCAL_TOLERANCE * tol_scale
    if mu == 0.0:
        # frictionless contact: u_N = 0, r_T = 0, r_N = (W u + d)_N ≥ 0
        det = W[1, 1] * W[2, 2] - W[1, 2] * W[2, 1]
        u1 = (-d[1] * W[2, 2] + d[2] * W[1, 2]) / det
        u2 = (-d[2] * W[1, 1] + d[1] * W[2, 1]) / det
        # r_N = −free_N / (W⁻¹)_NN > 0 when take-off failed (only rounding could make it negative)
        u[0] = 0.0
        u[1] = u1
        u[2] = u2
        return 0.0, True
    eye = np.eye(3)
    if u[0] != 0.0 or (u[1] == 0.0 and u[2] == 0.0):
        # start sliding: u_N = 0 and the free tangential velocity
        u[0] = 0.0
        u[1] = free[1]
        u[2] = free[2]
    res = _slide(eye, np.zeros(3), W, d, W, d, mu, w, True, u, tol, max_iter)
    return res, res <= 1e3 * tol


@njit(cache=True)
def local_dual(W, d, mu, w, r, tol_scale, max_iter):
    """The dual local problem at one contact: r (3,) in place such that (r, W r + d) ∈ C_μ.
    W (3, 3) SPD [1/kg], d (3,) [m/s], w mass scale [kg]. Returns (residual [m/s], converged)."""
    # take off: r = 0, u = d with u_N ≥ 0
    if d[0] >= 0.0:
        r[:] = 0.0
        return 0.0, True
    # stick: u = 0, r = −W⁻¹ d inside the cone
    stick = np.linalg.solve(W, -d)
    if stick[0] >= 0.0 and mu * stick[0] >= math.sqrt(stick[1] * stick[1] + stick[2] * stick[2]):
        r[:] = stick
        return 0.0, True
    tol = LOCAL_TOLERANCE * tol_scale
    if mu == 0.0:
        # frictionless: r = (r_N, 0), u_N = W_NN r_N + d_N = 0
        rN = -d[0] / W[0, 0]
        r[0] = rN
        r[1] = 0.0
        r[2] = 0.0
        return 0.0, True
    if r[0] <= 0.0:
        # start on the cone: the normal impulse that stops the normal velocity, friction at the cone
        r[0] = -d[0] / W[0, 0]
        t = math.sqrt(stick[1] * stick[1] + stick[2] * stick[2])
        if t > 0.0:
            r[1] = mu * r[0] * stick[1] / t
            r[2] = mu * r[0] * stick[2] / t
    res = _slide(W, d, np.eye(3), np.zeros(3), W, d, mu, w, False, r, tol, max_iter)
    return res, res <= 1e3 * tol


@njit(cache=True)
def contact_residual(r, u, mu, w) -> float:
    """‖f(û, r̂/w)‖ [m/s] of one contact (Li eqs. 10, 12); for μ = 0, where r̂ loses r_N, the scalar
    Fischer–Burmeister function of (u_N, r_N/w) and the tangential impulse r_T/w."""
    if mu == 0.0:
        a, b = u[0], r[0] / w
        phi = a + b - math.sqrt(a * a + b * b)
        return math.sqrt(phi * phi + (r[1] * r[1] + r[2] * r[2]) / (w * w))
    uT = math.sqrt(u[1] * u[1] + u[2] * u[2])
    uh = np.array([u[0] + mu * uT, mu * u[1], mu * u[2]])
    rh = np.array([mu * r[0] / w, r[1] / w, r[2] / w])
    g = np.empty(3)
    _fb(uh, rh, g)
    return math.sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2])


def fischer_burmeister(x, y) -> np.ndarray:
    """f(x, y) = x + y − (x∘x + y∘y)^{1/2} (3,) float64 of two (3,) vectors in the Jordan algebra of
    the second-order cone (Fukushima, Luo & Tseng 2002): zero exactly when x ∈ K, y ∈ K and x·y = 0.

    Raises
    ------
    ValueError
        If x or y is not a finite (3,) vector.
    """
    x, y = (np.asarray(a, dtype=np.float64) for a in (x, y))
    if x.shape != (3,) or y.shape != (3,) or not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError(f"x and y must be finite (3,) vectors, got shapes {x.shape} and {y.shape}")
    out = np.empty(3)
    _fb(x, y, out)
    return out


def coulomb_residual(r, u, mu: float, w: float = 1.0) -> float:
    """The residual [m/s] of a contact impulse r (3,) [N s] and relative velocity u (3,) [m/s] in the
    contact frame (normal first): ‖f(û, r̂/w)‖ (Li et al. 2018 eqs. 10, 12; for μ = 0 the scalar
    function of the normal components and ‖r_T‖/w), zero exactly when (r, u) satisfy the
    Signorini–Coulomb law with friction coefficient μ; w [kg] converts the impulse to a velocity.

    Raises
    ------
    ValueError
        If μ < 0, w ≤ 0, or r, u are not finite (3,) vectors.
    """
    if not mu >= 0 or not w > 0:
        raise ValueError(f"need mu ≥ 0 and w > 0, got mu={mu}, w={w}")
    r, u = (np.asarray(a, dtype=np.float64) for a in (r, u))
    if r.shape != (3,) or u.shape != (3,) or not (np.isfinite(r).all() and np.isfinite(u).all()):
        raise ValueError(f"r and u must be finite (3,) vectors, got shapes {r.shape} and {u.shape}")
    return float(contact_residual(r, u, float(mu), float(w)))


def solve_local(W, d, mu: float, *, form: str = "primal", w: float | None = None,
                max_iter: int = 50) -> tuple[np.ndarray, np.ndarray, float, bool]:
    """Solve one contact's Signorini–Coulomb problem (Li et al. 2018 eq. 11 and §4.3).

    Parameters
    ----------
    W : (3, 3) float64, symmetric positive definite: the contact's diagonal block, Ŵ_ii [kg] of the
        primal form r = W u + d, or the Delassus block [1/kg] of the dual form u = W r + d
    d : (3,) float64, the affine term (impulse [N s] in the primal form, velocity [m/s] in the dual)
    mu : friction coefficient ≥ 0
    form : "primal" (unknown u) or "dual" (unknown r)
    w : mass scale [kg] of the residual (default: trace(W)/3 in the primal form, 3/trace(W) in the dual)
    max_iter : Newton iterations

    Returns
    -------
    (r (3,) float64 [N s], u (3,) float64 [m/s], residual [m/s], converged)

    Raises
    ------
    ValueError
        If W is not a finite SPD (3, 3) matrix, d not a finite (3,) vector, μ < 0, w ≤ 0, or form unknown.
    """
    W = np.asarray(W, dtype=np.float64)
    d = np.asarray(d, dtype=np.float64)
    if W.shape != (3, 3) or d.shape != (3,) or not (np.isfinite(W).all() and np.isfinite(d).all()):
        raise ValueError(f"W must be a finite (3, 3) matrix and d a finite (3,) vector, got {W.shape} and {d.shape}")
    if not np.allclose(W, W.T, rtol=1e-10, atol=0.0) or np.linalg.eigvalsh(0.5 * (W + W.T))[0] <= 0:
        raise ValueError("W must be symmetric positive definite (a diagonal block of Ŵ = G A Gᵀ or of the "
                         "Delassus operator)")
    if not mu >= 0:
        raise ValueError(f"the friction coefficient must be ≥ 0, got {mu}")
    if form not in ("primal", "dual"):
        raise ValueError(f"form must be 'primal' or 'dual', got {form!r}")
    if w is None:
        w = np.trace(W) / 3.0 if form == "primal" else 3.0 / np.trace(W)
    if not (np.isfinite(w) and w > 0):
        raise ValueError(f"the mass scale w must be finite and > 0 kg, got {w}")
    z = np.zeros(3)
    scale = 1.0 + float(np.abs(d).max()) * (1.0 / w if form == "primal" else 1.0)
    if form == "primal":
        res, ok = local_primal(W, d, float(mu), float(w), z, scale, int(max_iter))
        return W @ z + d, z, float(res), bool(ok)
    res, ok = local_dual(W, d, float(mu), float(w), z, scale, int(max_iter))
    return z, W @ z + d, float(res), bool(ok)
