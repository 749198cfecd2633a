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
