"""Continuous collision detection (CCD) of node–face and edge–edge pairs (seed 000 §3.1, §3.3;
thesis §3.3.1, §3.3.3).

Vertices move on straight lines over a step, x(t) = xⁿ + (t/Δt)(xⁿ⁺¹ − xⁿ). Four points become
coplanar when the cubic (seed 000 eq. 4, thesis eq. 3.3)

    det(x̃1 + t ṽ1, x̃2 + t ṽ2, x̃3 + t ṽ3) = a3 t³ + a2 t² + a1 t + a0 = 0,  x̃_i = x_i − x4, ṽ_i = v_i − v4,

has a root t_c ∈ [0, Δt]; at that time the pair collides if the node lies in the triangle (node–face)
or the two edges cross (edge–edge). The roots are found robustly: [0, Δt] is cut at the
cubic's critical points into monotone pieces, each sign change is bisected, and a piece end with
|f| below a rounding-level threshold counts as a root (double roots: grazing contact). Vanishing
leading coefficients (quadratic, linear, constant cases) need no special branch. When all four
coefficients vanish (coplanar motion, e.g. parallel edges or motion inside a plane) the candidate
times are the ends of the step and the times where a vertex crosses the line of an edge. A root
is accepted when the closest-point distance of the pair at that time is below 10⁻⁶·L (L the
size of the configuration), so rounding never hides a crossing.

Proximity (§3.3): during detection the two primitives are moved towards each other by ωτ0 each
along their start-time normal (ω ≈ 0.5, τ0 the thickness), so a pair is caught once it comes
within 2ωτ0, before it crosses. A second test flags pairs closer than τ0 at the end positions.

The batch kernels used by :mod:`isocloth.contact.self_collision` live in ``_ccd_kernels``; this
module offers the single-pair API (tests, debugging).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isocloth.contact._ccd_kernels import (
    coplanarity_coefficients as _coef_kernel,
    cubic_roots_unit,
    edge_edge as _edge_edge_kernel,
    point_triangle_weights,
    segment_segment_params,
    vertex_face as _vertex_face_kernel,
)
from isocloth.contact.obstacles._checks import finite_points

__all__ = [
    "CCDHit",
    "coplanarity_coefficients",
    "coplanarity_times",
    "vertex_face_ccd",
    "edge_edge_ccd",
    "closest_point_triangle",
    "closest_points_segments",
]


def _dt(dt) -> float:
    dt = float(dt)
    if not dt > 0.0 or not np.isfinite(dt):
        raise ValueError(f"dt must be a finite time step > 0 [s], got {dt}")
    return dt


@dataclass(frozen=True)
class CCDHit:
    """A detected pair.

    Attributes
    ----------
    time : float [s], collision time in [0, Δt] (Δt for a proximity hit)
    weights : (4,) float64, signed weights w_i; the constraint is H = ν·Σ w_i x_i ≥ τ0
        (node–face: (1, −u, −v, −w); edge–edge: (1 − α, α, −(1 − β), −β))
    normal : (3,) float64, unit ν, oriented so that H(φⁿ) ≥ 0 (CCD) or along the end side (proximity)
    proximity : bool, found by the end-position distance test rather than by CCD
    distance : float [m], distance of the (unshifted) primitives at ``time``
    """

    time: float
    weights: np.ndarray
    normal: np.ndarray
    proximity: bool
    distance: float

    def value(self, x: np.ndarray) -> float:
        """H = ν·Σ w_i x_i [m] for the pair's four points x (4, 3) (no thickness subtracted)."""
        return float(self.normal @ (self.weights @ np.asarray(x, dtype=np.float64)))


def coplanarity_coefficients(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Coefficients (a3, a2, a1, a0) of the coplanarity cubic (seed 000 eq. 4).

    Parameters
    ----------
    x : (4, 3) float64 [m], positions x1..x4 at tⁿ
    v : (4, 3) float64 [m/s], velocities v1..v4

    Returns
    -------
    (4,) float64, in units m³/s³, m³/s², m³/s, m³
    """
    x = finite_points(x, "x", 4)
    v = finite_points(v, "v", 4)
    out = np.empty(4)
    _coef_kernel(x[0], x[1], x[2], x[3], v[0], v[1], v[2], v[3], out)
    return out


def coplanarity_times(x: np.ndarray, v: np.ndarray, dt: float) -> np.ndarray:
    """Roots t ∈ [0, Δt] (ascending) of the coplanarity cubic; empty when the cubic vanishes
    identically (coplanar motion) — use :func:`vertex_face_ccd` / :func:`edge_edge_ccd` there.

    Parameters
    ----------
    x : (4, 3) float64 [m], positions at tⁿ; v : (4, 3) float64 [m/s]; dt : float [s]
    """
    dt = _dt(dt)
    x = finite_points(x, "x", 4)
    d = finite_points(v, "v", 4) * dt
    c = np.empty(4)
    L = _coef_kernel(x[0], x[1], x[2], x[3], d[0], d[1], d[2], d[3], c)
    eps = 1e-12 * max(L, 1e-300) ** 3
    if np.abs(c).max() <= eps:
        return np.zeros(0)
    out = np.empty(4)
    k = cubic_roots_unit(c, eps, out)
    return out[:k] * dt


def _hit(res: np.ndarray, dt: float) -> CCDHit | None:
    if res[0] == 0.0:
        return None
    return CCDHit(time=float(res[1]) * dt, weights=res[2:6].copy(), normal=res[6:9].copy(),
                  proximity=bool(res[0] == 2.0), distance=float(res[9]))


def vertex_face_ccd(node0, face0, node1, face1, dt: float, *, thickness: float = 0.0, omega: float = 0.0,
                    proximity: bool = False) -> CCDHit | None:
    """Node–face continuous collision test over one step.

    Parameters
    ----------
    node0, node1 : (3,) float64 [m], node at tⁿ and tⁿ⁺¹
    face0, face1 : (3, 3) float64 [m], triangle corners at tⁿ and tⁿ⁺¹
    dt : float [s]
    thickness : float [m], τ0 ≥ 0
    omega : float, proximity parameter ω ∈ [0, 0.5] (seed 000 §3.3)
    proximity : bool, also report a node within τ0 of the triangle at tⁿ⁺¹

    Returns
    -------
    CCDHit or None
    """
    dt = _dt(dt)
    p0 = finite_points(np.reshape(node0, (1, 3)), "node0", 1)[0]
    p1 = finite_points(np.reshape(node1, (1, 3)), "node1", 1)[0]
    f0 = finite_points(face0, "face0", 3)
    f1 = finite_points(face1, "face1", 3)
    res = np.empty(10)
    _vertex_face_kernel(p0, f0[0], f0[1], f0[2], p1, f1[0], f1[1], f1[2], float(omega), float(thickness),
                        bool(proximity), 0, res)
    return _hit(res, dt)


def edge_edge_ccd(edge_a0, edge_b0, edge_a1, edge_b1, dt: float, *, thickness: float = 0.0, omega: float = 0.0,
                  proximity: bool = False, obstacle: bool = False) -> CCDHit | None:
    """Edge–edge continuous collision test over one step.

    Parameters
    ----------
    edge_a0, edge_a1 : (2, 3) float64 [m], first edge at tⁿ and tⁿ⁺¹
    edge_b0, edge_b1 : (2, 3) float64 [m], second edge at tⁿ and tⁿ⁺¹
    dt : float [s]; thickness : float [m]; omega : float; proximity : bool
    obstacle : bool, one edge belongs to an obstacle chain (relaxes the proximity test's
        interior-parameter rule)

    Returns
    -------
    CCDHit or None (weights ordered as edge a's two ends, then edge b's)
    """
    dt = _dt(dt)
    a0 = finite_points(edge_a0, "edge_a0", 2)
    a1 = finite_points(edge_a1, "edge_a1", 2)
    b0 = finite_points(edge_b0, "edge_b0", 2)
    b1 = finite_points(edge_b1, "edge_b1", 2)
    res = np.empty(10)
    _edge_edge_kernel(a0[0], a0[1], b0[0], b0[1], a1[0], a1[1], b1[0], b1[1], float(omega), float(thickness),
                      bool(proximity), bool(obstacle), res)
    return _hit(res, dt)


def closest_point_triangle(p, triangle) -> tuple[np.ndarray, float]:
    """Barycentric weights (3,) of the point of a closed triangle (3, 3) closest to p (3,), and
    the distance [m]."""
    t = finite_points(triangle, "triangle", 3)
    w = np.empty(3)
    d = point_triangle_weights(np.asarray(p, dtype=np.float64).reshape(3), t[0], t[1], t[2], w)
    return w, float(d)


def closest_points_segments(seg_a, seg_b) -> tuple[float, float, float]:
    """Parameters (α, β) ∈ [0, 1]² of the closest points of two segments (2, 3), and the distance."""
    a = finite_points(seg_a, "seg_a", 2)
    b = finite_points(seg_b, "seg_b", 2)
    st = np.empty(2)
    d = segment_segment_params(a[0], a[1], b[0], b[1], st)
    return float(st[0]), float(st[1]), float(d)
