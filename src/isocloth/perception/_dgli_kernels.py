"""Compiled kernels of :mod:`isocloth.perception.dgli` (numba)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def _inner(x, y, z, d0, d1, d2) -> float:
    """∫₀¹ dt / ‖(x, y, z) + t d‖³ in closed form (see ``dgli._inner_scalar``; finite arguments)."""
    a = d0 * d0 + d1 * d1 + d2 * d2
    b = 2.0 * (x * d0 + y * d1 + z * d2)
    c = x * x + y * y + z * z
    if a == 0.0:
        return c ** -1.5 if c > 0.0 else math.inf
    if c == 0.0 or a + b + c <= 0.0:
        return math.inf
    cx, cy, cz = d1 * z - d2 * y, d2 * x - d0 * z, d0 * y - d1 * x
    delta = 4.0 * (cx * cx + cy * cy + cz * cz)
    if delta > 1e-14 * a * c:
        return 2.0 * ((2.0 * a + b) / math.sqrt(a + b + c) - b / math.sqrt(c)) / delta
    t0 = -b / (2.0 * a)
    if 0.0 <= t0 <= 1.0:
        return math.inf
    return -((1.0 - t0) / abs(1.0 - t0) ** 3 - (-t0) / abs(t0) ** 3) / (2.0 * a ** 1.5)


@njit(cache=True)
def inner_at(s, w0, w1, w2, m0, m1, m2, d0, d1, d2) -> float:
    """The inner integral at the outer parameter s: :func:`_inner` of w + s m and d (scalars; the
    integrand of the adaptive fallback)."""
    return _inner(w0 + s * m0, w1 + s * m1, w2 + s * m2, d0, d1, d2)


@njit(cache=True)
def outer_rule(w, m, d, s, wt, out) -> None:
    """For k segment pairs (w, m, d (k, 3)): Σ_q wt_q inner(w + s_q m, d) into out (k,)."""
    for k in range(w.shape[0]):
        acc = 0.0
        for q in range(s.size):
            acc += wt[q] * inner_at(s[q], w[k, 0], w[k, 1], w[k, 2], m[k, 0], m[k, 1], m[k, 2], d[k, 0], d[k, 1], d[k, 2])
        out[k] = acc


def two_rules(kernel, w: np.ndarray, m: np.ndarray, d: np.ndarray, rule1, rule2) -> tuple[np.ndarray, np.ndarray]:
    """(coarse, fine) (k,) float64: ``kernel`` (:func:`outer_rule` or :func:`product_rule`) of the k
    segment pairs with each of the two rules (nodes, weights) on [0, 1]."""
    w, m, d = (np.ascontiguousarray(v) for v in (w, m, d))
    out = np.empty((2, w.shape[0]))
    for r, (s, wt) in enumerate((rule1, rule2)):
        kernel(w, m, d, s, wt, out[r])
    return out[0], out[1]


@njit(cache=True)
def product_rule(w, m, d, s, wt, out) -> None:
    """For k segment pairs: ∫₀¹∫₀¹ ds dt / ‖w + s m + t d‖³ by the product rule of (s, wt) into out (k,)."""
    for k in range(w.shape[0]):
        acc = 0.0
        for i in range(s.size):
            px, py, pz = w[k, 0] + s[i] * m[k, 0], w[k, 1] + s[i] * m[k, 1], w[k, 2] + s[i] * m[k, 2]
            row = 0.0
            for j in range(s.size):
                x, y, z = px + s[j] * d[k, 0], py + s[j] * d[k, 1], pz + s[j] * d[k, 2]
                row += wt[j] * (x * x + y * y + z * z) ** -1.5
            acc += wt[i] * row
        out[k] = acc


# --- closed form: 𝒢 as the solid angle of the parallelogram {C + t CD − A − s AB} seen from the origin ---
# The parallelogram p00 = C − A, p01 = D − A, p11 = D − B, p10 = C − B is split along p00–p11 into two
# triangles; the solid angle of a triangle (a, b, c) is Ω = 2 atan2(N, D) (Van Oosterom & Strackee 1983),
# N = a·(b × c), D = |a||b||c| + (a·b)|c| + (a·c)|b| + (b·c)|a|, well conditioned at N = 0 (flat cloth).
# Both triangles have N = −𝒱, so 𝒢 = −(Ω₁ + Ω₂)/4π.


@njit(cache=True)
def _angle_step(ax, ay, az, bx, by, bz, cx, cy, cz, s) -> float:
    """atan2(N₁, D₁) − atan2(N₀, D₀) of the triangle (a, b, c) when b moves by s e3, from the
    increments δN, δD (no difference of nearly equal numbers: exact to rounding for any s); +inf
    where the origin lies on the flat triangle (the segments meet)."""
    la = math.sqrt(ax * ax + ay * ay + az * az)
    lb = math.sqrt(bx * bx + by * by + bz * bz)
    lc = math.sqrt(cx * cx + cy * cy + cz * cz)
    n0 = ax * (by * cz - bz * cy) + ay * (bz * cx - bx * cz) + az * (bx * cy - by * cx)
    ab, ac, bc = ax * bx + ay * by + az * bz, ax * cx + ay * cy + az * cz, bx * cx + by * cy + bz * cz
    d0 = la * lb * lc + ab * lc + ac * lb + bc * la
    if n0 == 0.0 and d0 <= 0.0:
        return math.inf
    dn = s * (cx * ay - cy * ax)  # a·(e3 × c) s
    lb1 = math.sqrt(bx * bx + by * by + (bz + s) * (bz + s))
    dlb = (2.0 * s * bz + s * s) / (lb1 + lb)
    dd = (la * lc + ac) * dlb + s * (az * lc + cz * la)
    return math.atan2(dn * d0 - n0 * dd, d0 * (d0 + dd) + n0 * (n0 + dn))


@njit(cache=True)
def _dgli_pair(A, B, C, D, eps) -> float:
    """dGLI of one segment pair (points (3,)): [𝒢(B + ε e3, D + ε e3) − 𝒢]/ε (eq. 7.7)."""
    p00 = (C[0] - A[0], C[1] - A[1], C[2] - A[2])
    p01 = (D[0] - A[0], D[1] - A[1], D[2] - A[2])
    p11 = (D[0] - B[0], D[1] - B[1], D[2] - B[2])
    p10 = (C[0] - B[0], C[1] - B[1], C[2] - B[2])
    # triangle (p00, p01, p11): p01 moves up; triangle (p11, p10, p00) (cyclic order of (p00, p11, p10)): p10 down
    step = (_angle_step(p00[0], p00[1], p00[2], p01[0], p01[1], p01[2], p11[0], p11[1], p11[2], eps)
            + _angle_step(p11[0], p11[1], p11[2], p10[0], p10[1], p10[2], p00[0], p00[1], p00[2], -eps))
    if math.isinf(step):
        return math.inf  # the segments meet
    return -step / (2.0 * math.pi * eps)


@njit(cache=True)
def dgli_pairs(A, B, C, D, eps, out) -> None:
    """dGLI of k segment pairs (A, B, C, D (k, 3)) into out (k,)."""
    for k in range(A.shape[0]):
        out[k] = _dgli_pair(A[k], B[k], C[k], D[k], eps)


@njit(cache=True)
def coordinates_frames(P, seg, eps, clip, out) -> None:
    """dGLI of every segment pair i < j (row-major) of every frame: P (F, n, 3), seg (m, 2),
    out (F, m(m − 1)/2); |values| above clip (> 0) clipped, clip ≤ 0: none."""
    m = seg.shape[0]
    for f in range(P.shape[0]):
        q = 0
        for i in range(m):
            for j in range(i + 1, m):
                v = _dgli_pair(P[f, seg[i, 0]], P[f, seg[i, 1]], P[f, seg[j, 0]], P[f, seg[j, 1]], eps)
                if clip > 0.0:
                    v = min(max(v, -clip), clip)
                out[f, q] = v
                q += 1


@njit(cache=True)
def _angle_rate(a, b, c, da, db, dc) -> float:
    """d/dλ atan2(N, D) of the triangle (a, b, c) moving with (da, db, dc) (all (3,)); +inf where the
    origin lies on its boundary (N = D = 0)."""
    la, lb, lc = math.sqrt(a @ a), math.sqrt(b @ b), math.sqrt(c @ c)
    bxc, dbxc, bxdc = np.cross(b, c), np.cross(db, c), np.cross(b, dc)
    n = a @ bxc
    d = la * lb * lc + (a @ b) * lc + (a @ c) * lb + (b @ c) * la
    if n == 0.0 and d <= 0.0:
        return math.inf
    dla = (a @ da) / la
    dlb = (b @ db) / lb
    dlc = (c @ dc) / lc
    dn = da @ bxc + a @ dbxc + a @ bxdc
    dd = (dla * lb * lc + la * dlb * lc + la * lb * dlc + (da @ b + a @ db) * lc + (a @ b) * dlc
          + (da @ c + a @ dc) * lb + (a @ c) * dlb + (db @ c + b @ dc) * la + (b @ c) * dla)
    return (d * dn - n * dd) / (n * n + d * d)


@njit(cache=True)
def gli_rates(A, B, C, D, vA, vB, vC, vD, out) -> None:
    """∂_v𝒢 of k segment pairs (all (k, 3)) into out (k,), the exact derivative of the closed form."""
    for k in range(A.shape[0]):
        p00, p01, p11, p10 = C[k] - A[k], D[k] - A[k], D[k] - B[k], C[k] - B[k]
        v00, v01, v11, v10 = vC[k] - vA[k], vD[k] - vA[k], vD[k] - vB[k], vC[k] - vB[k]
        rate = _angle_rate(p00, p01, p11, v00, v01, v11) + _angle_rate(p00, p11, p10, v00, v11, v10)
        out[k] = math.inf if math.isinf(rate) else -rate / (2.0 * math.pi)
