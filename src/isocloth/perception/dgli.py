"""The Gauss linking integral (GLI) of segments, its directional derivative (dGLI) and the dGLI
cloth coordinates (Coltraro et al., thesis §7.2–7.3).

GLI of two curves (eq. 7.1): (1/4π) ∫∫ (γ2 − γ1)·[γ2′ × γ1′] / ‖γ2 − γ1‖³. For two segments AB and CD
(eq. 7.3, Klenin & Langowski 2000) it is the signed solid angle

    𝒢(A, B, C, D) = sign(𝒱) [arcsin(n_A·n_D) + arcsin(n_D·n_B) + arcsin(n_B·n_C) + arcsin(n_C·n_A)] / 4π,

n_A = AC × AD, n_B = BD × BC, n_C = BC × AC, n_D = AD × BD (normalised), with the sign of the triple
product 𝒱 = AC·[CD × AB] (eq. 7.4; the thesis' eq. 7.3 omits this sign factor of Klenin & Langowski,
without which dGLI could not change sign). Equivalently (eq. 7.5) 𝒢 = 𝒱·ℐ with
ℐ = (1/4π) ∫₀¹∫₀¹ ds dt / ‖C + t CD − A − s AB‖³.

dGLI of two segments (Definition 14, eq. 7.7): the derivative of 𝒢 when B and D move along e3 = +z,
the one-sided difference [𝒢(A, B + εe3, C, D + εe3) − 𝒢(A, B, C, D)] / ε with ε = 1e-8 (Remark
7.3.2). It is evaluated on a third closed form that stays well conditioned where the arcsin form
loses every digit (coplanar segments: cloth lying flat, its arguments ±1): 𝒢 is the solid angle
Ω / 4π of the parallelogram {C + t CD − A − s AB} seen from the origin, −(Ω₁ + Ω₂)/4π for its two
triangles, each Ω = 2 atan2(N, D) (Van Oosterom & Strackee 1983), and the difference of 𝒢 is formed
from the increments of N and D (``_dgli_kernels``), so that no digits cancel for any ε. Where the
step would carry one segment through the other (closer than ε), 𝒢's jump by ±1 is not counted: the
difference is taken on the continuous branch. An end point close to the other segment makes dGLI
grow as 1/distance (Remark 7.3.3): values beyond ±``clip`` are clipped.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_CLIP", "cloth_coordinates", "coordinate_matrix", "corner_adjacent_segments",
           "dgli", "directional_derivative", "inverse_cube_integral", "polyline_gli", "segment_gli", "sequence_coordinates",
           "sheet_segments", "tetrahedron_volume"]

DEFAULT_CLIP = 100.0
"""|dGLI| [1/m] clipped at this value (Remark 7.3.3 clips nearly intersecting segments without giving
the threshold; docs/design/perception.md). dGLI scales as 1/length: for cloth far smaller than a
metre pass a larger ``clip`` (or None)."""

def _points(*arrays) -> list[np.ndarray]:
    out = [np.atleast_2d(np.asarray(a, dtype=np.float64)) for a in arrays]
    shape = np.broadcast_shapes(*(a.shape for a in out))
    if len(shape) != 2 or shape[1] != 3:
        raise ValueError(f"segment end points must be (3,) or (k, 3) arrays, got shapes {[a.shape for a in out]}")
    return [np.broadcast_to(a, shape) for a in out]


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=1, keepdims=True)
    return np.divide(v, n, out=np.zeros_like(v), where=n > 0)


def tetrahedron_volume(A, B, C, D) -> np.ndarray:
    """𝒱 = AC·[CD × AB] (k,) float64 [m³], six times the signed volume of the tetrahedron ABCD
    (eq. 7.4); A, B, C, D (k, 3) or (3,) [m]."""
    A, B, C, D = _points(A, B, C, D)
    return np.einsum("kd,kd->k", C - A, np.cross(D - C, B - A))


def segment_gli(A, B, C, D) -> np.ndarray:
    """GLI (k,) float64 of the segments AB and CD (eq. 7.3 with Klenin & Langowski's sign):
    dimensionless, in [−1/2, 1/2]; 0 for coplanar segments. A, B, C, D (k, 3) or (3,) [m].

    Raises
    ------
    ValueError
        If the points are not (3,) or (k, 3).
    """
    A, B, C, D = _points(A, B, C, D)
    AC, AD, BC, BD = C - A, D - A, C - B, D - B
    nA, nB = _unit(np.cross(AC, AD)), _unit(np.cross(BD, BC))
    nC, nD = _unit(np.cross(BC, AC)), _unit(np.cross(AD, BD))
    total = sum(np.arcsin(np.clip(np.einsum("kd,kd->k", a, b), -1.0, 1.0))
                for a, b in ((nA, nD), (nD, nB), (nB, nC), (nC, nA)))
    return np.sign(tetrahedron_volume(A, B, C, D)) * total / (4.0 * np.pi)


def polyline_gli(P, Q) -> float:
    """GLI of two polylines (eq. 7.2), the sum of the segment GLIs; P (p, 3) and Q (q, 3) [m] are
    their vertices (a closed curve repeats its first vertex at the end). For two closed curves it
    is their linking number (an integer).

    Raises
    ------
    ValueError
        If a polyline has fewer than two vertices or is not (k, 3).
    """
    P, Q = np.asarray(P, dtype=np.float64), np.asarray(Q, dtype=np.float64)
    if P.ndim != 2 or Q.ndim != 2 or P.shape[1] != 3 or Q.shape[1] != 3 or len(P) < 2 or len(Q) < 2:
        raise ValueError(f"polylines must be (k ≥ 2, 3) arrays, got shapes {P.shape} and {Q.shape}")
    i, j = np.meshgrid(np.arange(len(P) - 1), np.arange(len(Q) - 1), indexing="ij")
    i, j = i.ravel(), j.ravel()
    return float(segment_gli(P[i], P[i + 1], Q[j], Q[j + 1]).sum())


_GAUSS = {q: ((x + 1.0) / 2.0, w / 2.0) for q, (x, w) in
          ((q, np.polynomial.legendre.leggauss(q)) for q in (48, 96))}
"""Gauss–Legendre nodes and weights on [0, 1] of the outer integral (48 and 96 points)."""

INVERSE_CUBE_RTOL = 1e-11
"""Relative agreement of the 48- and 96-point rules below which :func:`inverse_cube_integral` takes
the 96-point value; pairs above it (nearly touching segments) are integrated adaptively."""


def inverse_cube_integral(A, B, C, D) -> np.ndarray:
    """ℐ = (1/4π) ∫₀¹∫₀¹ ds dt / ‖C + t CD − A − s AB‖³ (k,) [1/m³] of eq. 7.5: the inner integral
    in closed form (``_dgli_kernels.inner_at``: with Q(t) = α t² + β t + γ and Δ = 4αγ − β² the
    antiderivative 2(2αt + β) / (Δ √Q), or its limit on the line of the other segment), the outer one by Gauss–Legendre rules of 48 and 96 points
    for all pairs at once; where the two differ by more than ``INVERSE_CUBE_RTOL`` (nearly collinear
    segments, whose closed form cancels) the 48² and 96² product rules; where those differ too (close
    segments) adaptively (relative accuracy 1e-12, ``scipy.integrate.quad``); +inf for segments that
    meet (they share a point). 𝒢 = 𝒱·ℐ."""
    import warnings

    from scipy import integrate

    from isocloth.perception._dgli_kernels import inner_at, outer_rule, product_rule, two_rules
    from isocloth.perception.baselines import segment_distance

    A, B, C, D = _points(A, B, C, D)
    out = np.full(A.shape[0], np.inf)  # segments that meet: ℐ diverges
    scale = np.maximum(np.linalg.norm(B - A, axis=1), np.linalg.norm(D - C, axis=1))
    apart = np.flatnonzero(segment_distance(A, B, C, D) > 1e-12 * np.maximum(scale, 1e-300))
    w, m, d = C[apart] - A[apart], A[apart] - B[apart], D[apart] - C[apart]
    coarse, fine = two_rules(outer_rule, w, m, d, _GAUSS[48], _GAUSS[96])
    out[apart] = fine
    hard = ~(np.abs(fine - coarse) <= INVERSE_CUBE_RTOL * np.abs(fine))
    if hard.any():
        # (nearly) collinear segments, where the closed form of the inner integral cancels: both integrals
        # by the product rules (fixed nodes, so that ℐ(ε) − ℐ of dgli is a difference of one smooth rule)
        coarse2, fine2 = two_rules(product_rule, w[hard], m[hard], d[hard], _GAUSS[48], _GAUSS[96])
        out[apart[hard]] = fine2
        hard[hard] = ~(np.abs(fine2 - coarse2) <= INVERSE_CUBE_RTOL * np.abs(fine2))
    hard = apart[hard]
    with warnings.catch_warnings():
        # nearly intersecting segments: ℐ ~ 1/distance², reached only to a few digits (clipped by dgli)
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        for k in hard:
            out[k] = integrate.quad(inner_at, 0.0, 1.0, args=tuple((C[k] - A[k]).tolist() + (A[k] - B[k]).tolist()
                                                                        + (D[k] - C[k]).tolist()),
                                    epsabs=0.0, epsrel=1e-12, limit=400)[0]
    return out / (4.0 * np.pi)


def directional_derivative(A, B, C, D, vA, vB, vC, vD) -> np.ndarray:
    """∂_v𝒢 (k,) float64 [1/m] (Definition 13): the derivative of the segment GLI when the points
    move along v = (vA, vB, vC, vD) (each (3,) or (k, 3), unit [m/m]), the exact derivative of the
    solid-angle form (module docstring); +inf for segments that meet.

    Raises
    ------
    ValueError
        If the points or directions are not (3,) or (k, 3).
    """
    from isocloth.perception._dgli_kernels import gli_rates

    pts = [np.ascontiguousarray(p) for p in _points(A, B, C, D, vA, vB, vC, vD)]
    out = np.empty(pts[0].shape[0])
    gli_rates(*pts, out)
    return out


def _check_step_and_clip(epsilon: float, clip: float | None) -> None:
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon}")
    if clip is not None and not clip > 0:
        raise ValueError(f"clip must be > 0 or None, got {clip}")


def dgli(A, B, C, D, *, epsilon: float = 1e-8, clip: float | None = DEFAULT_CLIP) -> np.ndarray:
    """dGLI (k,) float64 [1/m] of the segments AB and CD (Definition 14, eq. 7.7): the one-sided
    difference of 𝒢 = 𝒱·ℐ when B and D move by ``epsilon`` [m] along +z (Remark 7.3.2),
    [𝒱(ε) − 𝒱]/ε · ℐ(ε) + 𝒱 · [ℐ(ε) − ℐ]/ε, clipped to ±``clip`` (Remark 7.3.3; None: no clipping);
    segments that meet give +clip (+inf without clipping).
    Symmetric in (AB) ↔ (CD) and invariant under translations and rotations about z.

    Raises
    ------
    ValueError
        If ``epsilon`` ≤ 0, ``clip`` ≤ 0, or the points are not (3,) or (k, 3).
    """
    _check_step_and_clip(epsilon, clip)
    from isocloth.perception._dgli_kernels import dgli_pairs

    A, B, C, D = (np.ascontiguousarray(p) for p in _points(A, B, C, D))
    out = np.empty(A.shape[0])
    dgli_pairs(A, B, C, D, float(epsilon), out)
    return out if clip is None else np.clip(out, -clip, clip)


def corner_adjacent_segments(boundary: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """The eight boundary segments next to the corner segments (thesis Fig. 7.2): at each corner
    the two boundary edges that meet there are the corner segments, and the next edge along the
    boundary on each side is taken, in the order of the boundary loop.

    Parameters
    ----------
    boundary : (b,) int64, the nodes of the closed boundary loop in order (first not repeated)
    corners : (4,) int64, the corner nodes (on the loop)

    Returns
    -------
    (8, 2) int64, node pairs (start, end) of the segments, each oriented along the loop.

    Raises
    ------
    ValueError
        If a corner is not on the loop, or a side has fewer than five edges.
    """
    loop = np.asarray(boundary, dtype=np.int64)
    b = loop.size
    pos = {int(n): i for i, n in enumerate(loop)}
    try:
        at = sorted(pos[int(c)] for c in corners)
    except KeyError as exc:
        raise ValueError(f"corner node {exc.args[0]} is not on the boundary loop") from None
    sides = np.diff(at + [at[0] + b])
    if len(at) != 4 or sides.min() < 5:
        raise ValueError(f"need 4 corners with at least 5 boundary edges between them (two segments per side that "
                         f"share no node), got sides of {sides.tolist()} edges")
    starts = sorted({(i - 2) % b for i in at} | {(i + 1) % b for i in at}, key=lambda i: (i - at[0]) % b)
    return np.array([[loop[i], loop[(i + 1) % b]] for i in starts], dtype=np.int64)


def cloth_coordinates(x, segments, *, epsilon: float = 1e-8, clip: float | None = DEFAULT_CLIP) -> np.ndarray:
    """The dGLI cloth coordinates (Definition 15, eq. 7.8): dGLI(S_i, S_j) of every pair i < j of
    the segments, in row-major upper-triangle order, m(m − 1)/2 values (28 for the default eight).

    Parameters
    ----------
    x : (n, 3) float64 [m], node positions (z up: the table normal)
    segments : (m, 2) int64, node pairs of the ordered boundary segments
        (:func:`corner_adjacent_segments`)
    epsilon, clip : see :func:`dgli`

    Returns
    -------
    (m(m − 1)/2,) float64 [1/m]

    Raises
    ------
    ValueError
        If ``segments`` is not (m ≥ 2, 2) with valid node indices, or x is not (n, 3).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != 3:
        raise ValueError(f"x must be (n, 3), got shape {x.shape}")
    return sequence_coordinates(x[None], segments, epsilon=epsilon, clip=clip)[0]


def sequence_coordinates(positions, segments, *, epsilon: float = 1e-8, clip: float | None = DEFAULT_CLIP) -> np.ndarray:
    """:func:`cloth_coordinates` of every frame of positions (F, n, 3) float64 [m]: (F, m(m − 1)/2)
    float64 [1/m].

    Raises
    ------
    ValueError
        If positions is not (F, n, 3) or the segments do not fit it (see :func:`cloth_coordinates`).
    """
    from isocloth.perception._dgli_kernels import coordinates_frames

    P = np.ascontiguousarray(positions, dtype=np.float64)
    if P.ndim != 3 or P.shape[2] != 3:
        raise ValueError(f"positions must be (F, n, 3), got shape {P.shape}")
    seg = np.ascontiguousarray(segments, dtype=np.int64)
    if seg.ndim != 2 or seg.shape[1] != 2 or seg.shape[0] < 2 or seg.min() < 0 or seg.max() >= P.shape[1]:
        raise ValueError(f"segments must be (m ≥ 2, 2) node indices below {P.shape[1]}, got shape {seg.shape}")
    _check_step_and_clip(epsilon, clip)
    if not np.isfinite(P[:, np.unique(seg)]).all():
        raise ValueError("positions of the boundary segments hold NaN or Inf: the configuration is not a cloth state")
    m = seg.shape[0]
    out = np.empty((P.shape[0], m * (m - 1) // 2))
    coordinates_frames(P, seg, float(epsilon), 0.0 if clip is None else float(clip), out)
    return out


def coordinate_matrix(coordinates, m: int | None = None) -> np.ndarray:
    """The upper-triangular (m, m) float64 matrix view of cloth coordinates (m(m − 1)/2,) (zero
    diagonal and lower triangle).

    Raises
    ------
    ValueError
        If the length is not m(m − 1)/2 for an integer m.
    """
    c = np.asarray(coordinates, dtype=np.float64).ravel()
    if m is None:
        m = int(round((1 + np.sqrt(1 + 8 * c.size)) / 2))
    if m * (m - 1) // 2 != c.size:
        raise ValueError(f"{c.size} coordinates are not m(m − 1)/2 for m = {m}")
    out = np.zeros((m, m))
    out[np.triu_indices(m, k=1)] = c
    return out


def sheet_segments(mesh) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The default segments of a rectangular sheet: (segments (8, 2) int64 of
    :func:`corner_adjacent_segments`, its 4 corner nodes (``isocloth.mesh.topology.corner_nodes``),
    its boundary loop (b,) int64).

    Raises
    ------
    ValueError
        If the mesh has not exactly one boundary loop with four corners.
    """
    from isocloth.mesh.topology import boundary_loops, corner_nodes

    loops = boundary_loops(mesh)
    corners = np.asarray(corner_nodes(mesh), dtype=np.int64)
    if len(loops) != 1 or corners.size != 4:
        raise ValueError(f"the dGLI cloth coordinates need a sheet with one boundary loop and 4 corners; this mesh "
                         f"has {len(loops)} loops and {corners.size} corners: pass the segments explicitly")
    return corner_adjacent_segments(loops[0], corners), corners, np.asarray(loops[0], dtype=np.int64)
