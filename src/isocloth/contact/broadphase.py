"""Broad phase of collision detection: swept bounding boxes and a uniform-grid spatial hash.

Continuous collision detection (seed 000 §3.1, thesis §3.3.1) only tests node–face and edge–edge
pairs that come close during a step. The thesis compares centres of mass of coarse meshes; here
every primitive gets the axis-aligned box of its vertices at the start and at the end of the
motion (the swept box: vertices move on straight lines, so the box holds the primitive at every
intermediate time), grown by an inflation distance (half the detection distance, e.g. τ0/2), and
overlapping boxes are found with a spatial hash. Pairs of primitives sharing a node (adjacent
primitives) are excluded.

Cost: O(k + p) for k boxes entered in O(1) cells each and p candidate pairs, plus a sort of the
cell entries (see benchmarks/bench_collision.py).
"""

from __future__ import annotations

import numpy as np

from isocloth.contact._broadphase_kernels import (
    box_pairs_kernel,
    self_candidates_kernel,
    swept_boxes_kernel,
    sweep_pairs_kernel,
)
from isocloth.contact.obstacles._checks import finite_points

__all__ = ["swept_boxes", "box_pairs", "mesh_edges", "candidate_pairs", "CandidatePairs"]

_MAX_CELLS_PER_AXIS = 1 << 20
_SWEEP_LIMIT = 4000  # boxes up to which sort-and-sweep beats the grid (measured, bench_collision.py)


def _prims(p, name: str, n: int) -> np.ndarray:
    a = np.asarray(p)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must be a (k, m) integer array of vertex ids, got {a.dtype} {a.shape}")
    a = np.ascontiguousarray(a, dtype=np.int64)
    if a.size and (a.max() >= n or a.min() < -1):
        raise ValueError(f"{name} holds vertex ids outside [0, {n}) (−1 pads)")
    return a


def _motion(x0, x1, inflation: float) -> tuple[np.ndarray, np.ndarray]:
    """Checked start / end positions (n, 3) float64 of one step and a checked box inflation ≥ 0."""
    x0 = finite_points(x0, "x0")
    x1 = finite_points(x1, "x1")
    if x0.shape != x1.shape:
        raise ValueError(f"x0 and x1 must have the same shape, got {x0.shape} and {x1.shape}")
    if not inflation >= 0.0:
        raise ValueError(f"inflation must be >= 0, got {inflation}")
    return x0, x1


def swept_boxes(x0: np.ndarray, x1: np.ndarray, primitives: np.ndarray,
                inflation: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Swept axis-aligned boxes of primitives moving linearly from ``x0`` to ``x1``.

    Parameters
    ----------
    x0, x1 : (N, 3) float64 [m]
        Vertex positions at the start and the end of the motion (pass the same array twice
        for static boxes).
    primitives : (k,) or (k, m) int64
        Vertex ids of each primitive (nodes (k,), edges (k, 2), triangles (k, 3)); −1 pads.
    inflation : float [m]
        Distance ≥ 0 added on every side.

    Returns
    -------
    lo, hi : (k, 3) float64 [m]

    Raises
    ------
    ValueError
        Shapes differ, positions not finite, ids out of range, or ``inflation`` < 0.
    """
    x0, x1 = _motion(x0, x1, inflation)
    return _swept(x0, x1, _prims(primitives, "primitives", x0.shape[0]), float(inflation))


def _swept(x0: np.ndarray, x1: np.ndarray, p: np.ndarray, inflation: float) -> tuple[np.ndarray, np.ndarray]:
    """swept_boxes without argument checks (x0, x1 C-contiguous float64, p (k, m) int64)."""
    p = p if p.ndim == 2 else p[:, None]
    lo = np.empty((p.shape[0], 3))
    hi = np.empty((p.shape[0], 3))
    swept_boxes_kernel(x0, x1, p, inflation, lo, hi)
    return lo, hi


def box_pairs(boxes_a: tuple[np.ndarray, np.ndarray], boxes_b: tuple[np.ndarray, np.ndarray] | None = None, *,
              vertices_a: np.ndarray | None = None, vertices_b: np.ndarray | None = None,
              cell_size: float | None = None) -> np.ndarray:
    """All pairs of overlapping (closed) boxes, skipping pairs whose primitives share a vertex.

    Parameters
    ----------
    boxes_a : (lo, hi), each (ka, 3) float64
    boxes_b : (lo, hi), each (kb, 3) float64, optional
        Omitted: self query within A (pairs i < j).
    vertices_a, vertices_b : (ka, m) / (kb, m') int64, optional
        Vertex ids of the primitives (−1 = none); pairs sharing an id are excluded. For an
        A × B query the ids of both sets must refer to the same vertex numbering.
    cell_size : float [m], optional
        Grid cell size; default the median box extent (doubled while the grid would hold more
        than 16 entries per box).

    Returns
    -------
    (p, 2) int64
        Pairs (i, j), i into A and j into B (or into A with i < j), sorted lexicographically.
    """
    lo_a, hi_a = (np.ascontiguousarray(b, dtype=np.float64) for b in boxes_a)
    same = boxes_b is None
    if same:
        lo, hi = lo_a, hi_a
    else:
        lo_b, hi_b = (np.ascontiguousarray(b, dtype=np.float64) for b in boxes_b)
        lo, hi = np.concatenate([lo_a, lo_b]), np.concatenate([hi_a, hi_b])
    n_a = lo_a.shape[0]
    k = lo.shape[0]
    if k == 0 or (not same and n_a in (0, k)):
        return np.zeros((0, 2), dtype=np.int64)

    def ids(v, count):
        if v is None:
            return np.full((count, 1), -1, dtype=np.int64)
        v = np.asarray(v, dtype=np.int64)
        return v[:, None] if v.ndim == 1 else v

    va = ids(vertices_a, n_a)
    if same:
        verts = np.ascontiguousarray(va)
    else:
        vb = ids(vertices_b, k - n_a)
        m = max(va.shape[1], vb.shape[1])
        verts = np.full((k, m), -1, dtype=np.int64)
        verts[:n_a, :va.shape[1]] = va
        verts[n_a:, :vb.shape[1]] = vb
    h = 0.0 if cell_size is None else float(cell_size)
    if cell_size is not None and not h > 0:
        raise ValueError(f"cell_size must be > 0, got {cell_size}")
    if cell_size is None and k <= _SWEEP_LIMIT:
        return sweep_pairs_kernel(lo, hi, verts, n_a, same)
    return box_pairs_kernel(lo, hi, verts, n_a, same, h, float(_MAX_CELLS_PER_AXIS))


def mesh_edges(triangles: np.ndarray) -> np.ndarray:
    """Unique edges (e, 2) int64 (sorted node pairs, lexicographic order) of triangles (t, 3)."""
    t = np.asarray(triangles, dtype=np.int64)
    e = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    e.sort(axis=1)
    return np.unique(e, axis=0) if e.size else np.zeros((0, 2), dtype=np.int64)


class CandidatePairs:
    """Node–face and edge–edge candidate pairs of one broad-phase query.

    Attributes
    ----------
    vertex_face : (p, 2) int64, (node, triangle index)
    edge_edge : (q, 2) int64, (edge index, edge index), first < second
    """

    def __init__(self, vertex_face: np.ndarray, edge_edge: np.ndarray):
        self.vertex_face = vertex_face
        self.edge_edge = edge_edge

    def __repr__(self) -> str:
        return f"CandidatePairs(vertex_face={len(self.vertex_face)}, edge_edge={len(self.edge_edge)})"


def candidate_pairs(x0: np.ndarray, x1: np.ndarray, triangles: np.ndarray, edges: np.ndarray | None = None,
                    inflation: float = 0.0, nodes: np.ndarray | None = None) -> CandidatePairs:
    """Self-collision candidates of a triangle mesh moving linearly from ``x0`` to ``x1``.

    Node–face pairs (node not a corner of the triangle) and edge–edge pairs (no shared node)
    whose swept boxes, grown by ``inflation``, overlap. Two primitives that come within
    2·``inflation`` of each other (in every coordinate) at a common time are always reported.

    Parameters
    ----------
    x0, x1 : (n, 3) float64 [m], node positions at the start / end of the step
    triangles : (t, 3) int64 (quads split first, see ``Mesh.triangulated_faces``)
    edges : (e, 2) int64, optional; default :func:`mesh_edges` of ``triangles``
    inflation : float [m], ≥ 0 (half the detection distance)
    nodes : (k,) int64, optional; nodes tested against faces (default: all nodes of ``triangles``)

    Returns
    -------
    CandidatePairs
    """
    x0, x1 = _motion(x0, x1, inflation)
    tri = _prims(triangles, "triangles", x0.shape[0])
    ed = mesh_edges(tri) if edges is None else _prims(edges, "edges", x0.shape[0])
    nd = np.unique(tri) if nodes is None else np.ascontiguousarray(nodes, dtype=np.int64)
    return CandidatePairs(*self_candidates_kernel(x0, x1, nd, tri, ed, float(inflation), _SWEEP_LIMIT))
