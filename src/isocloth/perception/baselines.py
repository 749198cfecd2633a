"""The four baseline representations of thesis §7.4.3, against which the dGLI cloth coordinates
are compared: pairwise minimal distances of the same boundary segments ("Edges"), pairwise corner
distances ("Corners"), and discrete Fréchet and Hausdorff distances between boundary curves after
centring and a rigid alignment (Kabsch, ``scipy.spatial.transform.Rotation.align_vectors``)."""

from __future__ import annotations

import numba as nb
import numpy as np
from scipy.spatial.distance import directed_hausdorff, pdist
from scipy.spatial.transform import Rotation

__all__ = ["aligned", "boundary_frechet", "boundary_hausdorff", "corner_distances", "edge_distances",
           "segment_distance"]


def segment_distance(P0, P1, Q0, Q1) -> np.ndarray:
    """Smallest distance (k,) float64 [m] between segments P0P1 and Q0Q1 ((k, 3) or (3,) each):
    the clamped closest parameters of the two lines (Ericson, *Real-Time Collision Detection*,
    §5.1.9), then each parameter re-clamped against the other's."""
    P0, P1, Q0, Q1 = np.broadcast_arrays(*(np.atleast_2d(np.asarray(a, dtype=np.float64)) for a in (P0, P1, Q0, Q1)))
    d1, d2, r = P1 - P0, Q1 - Q0, P0 - Q0
    a, e = np.einsum("kd,kd->k", d1, d1), np.einsum("kd,kd->k", d2, d2)
    b, c, f = np.einsum("kd,kd->k", d1, d2), np.einsum("kd,kd->k", d1, r), np.einsum("kd,kd->k", d2, r)
    denom = a * e - b * b
    safe = np.where(denom > 1e-300, denom, 1.0)
    s = np.where(denom > 1e-12 * np.maximum(a * e, 1e-300), np.clip((b * f - c * e) / safe, 0.0, 1.0), 0.0)
    t = np.divide(b * s + f, e, out=np.zeros_like(s), where=e > 0)
    t_c = np.clip(t, 0.0, 1.0)
    s = np.where(t != t_c, np.clip(np.divide(b * t_c - c, a, out=np.zeros_like(s), where=a > 0), 0.0, 1.0), s)
    # degenerate segments (Ericson's first cases): Q a point, then P a point
    point_q = e <= 1e-300
    s = np.where(point_q, np.clip(np.divide(-c, a, out=np.zeros_like(s), where=a > 0), 0.0, 1.0), s)
    t_c = np.where(point_q, 0.0, t_c)
    point_p = a <= 1e-300
    s = np.where(point_p, 0.0, s)
    t_c = np.where(point_p & ~point_q, np.clip(np.divide(f, e, out=np.zeros_like(s), where=e > 0), 0.0, 1.0), t_c)
    return np.linalg.norm(P0 + s[:, None] * d1 - Q0 - t_c[:, None] * d2, axis=1)


def edge_distances(x, segments) -> np.ndarray:
    """"Edges": the minimal distances (m(m − 1)/2,) [m] between every pair i < j of the segments
    (m, 2) node pairs, in the order of the dGLI cloth coordinates."""
    x, seg = np.asarray(x, dtype=np.float64), np.asarray(segments, dtype=np.int64)
    i, j = np.triu_indices(seg.shape[0], k=1)
    return segment_distance(x[seg[i, 0]], x[seg[i, 1]], x[seg[j, 0]], x[seg[j, 1]])


def corner_distances(x, corners) -> np.ndarray:
    """"Corners": the 6 pairwise distances [m] of the 4 corner nodes (scipy ``pdist`` order)."""
    return pdist(np.asarray(x, dtype=np.float64)[np.asarray(corners, dtype=np.int64)])


def aligned(P, Q) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q) (k, 3) float64 [m] centred, Q rotated onto P: the rotation minimising the summed
    squared distances of corresponding points (Kabsch; ``Rotation.align_vectors``)."""
    P, Q = np.asarray(P, dtype=np.float64), np.asarray(Q, dtype=np.float64)
    P, Q = P - P.mean(axis=0), Q - Q.mean(axis=0)
    rot, _ = Rotation.align_vectors(P, Q)
    return P, rot.apply(Q)


@nb.njit(cache=True)
def _frechet_table(d: np.ndarray) -> float:
    """The coupling table of the discrete Fréchet distance (Eiter & Mannila 1994) for the point
    distances d (p, q); returns its last entry."""
    p, q = d.shape
    c = np.empty_like(d)
    c[0, 0] = d[0, 0]
    for i in range(1, p):
        c[i, 0] = max(c[i - 1, 0], d[i, 0])
    for j in range(1, q):
        c[0, j] = max(c[0, j - 1], d[0, j])
    for i in range(1, p):
        for j in range(1, q):
            c[i, j] = max(min(c[i - 1, j], c[i - 1, j - 1], c[i, j - 1]), d[i, j])
    return c[p - 1, q - 1]


def boundary_frechet(P, Q) -> float:
    """Discrete Fréchet distance [m] between boundary curves P (p, 3) and Q (q, 3) after
    :func:`aligned` (needs p = q), by the dynamic programme of Eiter & Mannila (1994)."""
    P, Q = aligned(P, Q)
    return float(_frechet_table(np.linalg.norm(P[:, None] - Q[None], axis=2)))


def boundary_hausdorff(P, Q) -> float:
    """Discrete Hausdorff distance [m] between boundary curves P and Q (k, 3) after :func:`aligned`
    (scipy ``directed_hausdorff`` both ways)."""
    P, Q = aligned(P, Q)
    return float(max(directed_hausdorff(P, Q)[0], directed_hausdorff(Q, P)[0]))
