"""Intersection checker: exact triangle–triangle tests between cloth faces, independent of the solver.

Used to verify that a simulation never interpenetrates (zero intersecting face pairs at
every saved frame). Candidate pairs come from the broad phase (closed boxes of the triangles);
each is decided by exact orientation predicates (see ``_intersection_kernels``: floating-point
filter with Shewchuk's error bounds and an exact expansion-arithmetic fallback), so the answer
does not depend on a tolerance.

What counts as an intersection (closed triangles, touching counts):

* triangles with no common node: they share a point;
* triangles with one common node v: they share a point other than v;
* triangles with a common edge: never (they overlap only when folded flat onto each other).

No library wheel fits: trimesh has no triangle–triangle test, python-fcl's is a floating-point
test with tolerances, and libigl's exact self-intersection test lives in its GPL/CGAL module
(isocloth is MIT).

Quads are split into triangles (``Mesh.triangulated_faces``: triangles, then quads' 0-1-2 halves,
then 0-2-3 halves) and results are reported per mesh face: face indices count triangles first,
then quads (the element order used elsewhere, e.g. ``topology.element_areas``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from isocloth.contact._intersection_kernels import pairs_intersect_kernel, triangles_intersect
from isocloth.contact.broadphase import box_pairs, swept_boxes

__all__ = [
    "triangles_intersect_exact",
    "self_intersections",
    "face_intersections",
    "IntersectionReport",
    "check_trajectory",
]


def triangles_intersect_exact(tri_a, tri_b) -> bool:
    """Whether two closed triangles share a point (exact; touching counts).

    Parameters
    ----------
    tri_a, tri_b : (3, 3) array_like [m], the corners (rows) of each triangle

    Raises
    ------
    ValueError
        A triangle is not (3, 3) or holds non-finite values.
    """
    A = np.ascontiguousarray(tri_a, dtype=np.float64)
    B = np.ascontiguousarray(tri_b, dtype=np.float64)
    for name, T in (("tri_a", A), ("tri_b", B)):
        if T.shape != (3, 3) or not np.all(np.isfinite(T)):
            raise ValueError(f"{name} must be a finite (3, 3) array of corners, got shape {T.shape}")
    return bool(triangles_intersect(A[0], A[1], A[2], B[0], B[1], B[2]))


def self_intersections(x: np.ndarray, triangles: np.ndarray, *, vertex_adjacent: bool = True) -> np.ndarray:
    """Pairs of intersecting triangles of one configuration.

    Parameters
    ----------
    x : (n, 3) float64 [m], node positions
    triangles : (t, 3) int64
    vertex_adjacent : bool
        Also test pairs sharing exactly one node (default True); pairs sharing an edge are never
        reported.

    Returns
    -------
    (p, 2) int64
        Triangle index pairs (i < j), sorted.

    Raises
    ------
    ValueError
        Bad shapes, non-finite positions or node ids out of range.
    """
    tri = np.ascontiguousarray(triangles, dtype=np.int64)
    if tri.ndim != 2 or tri.shape[1] != 3:
        raise ValueError(f"triangles must have shape (t, 3), got {tri.shape}")
    lo, hi = swept_boxes(x, x, tri, 0.0)
    if vertex_adjacent:
        pairs = box_pairs((lo, hi))
        shared = (tri[pairs[:, 0], :, None] == tri[pairs[:, 1], None, :]).sum(axis=(1, 2))
        pairs = pairs[shared < 2]
    else:
        pairs = box_pairs((lo, hi), vertices_a=tri)
    if pairs.shape[0] == 0:
        return pairs
    hit = np.zeros(pairs.shape[0], dtype=np.bool_)
    pairs_intersect_kernel(np.ascontiguousarray(x, dtype=np.float64), tri, pairs, hit)
    return pairs[hit]


def _split_faces(triangles, quads) -> tuple[np.ndarray, np.ndarray]:
    t = np.zeros((0, 3), dtype=np.int64) if triangles is None else np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    q = np.zeros((0, 4), dtype=np.int64) if quads is None else np.asarray(quads, dtype=np.int64).reshape(-1, 4)
    tri = np.concatenate([t, q[:, [0, 1, 2]], q[:, [0, 2, 3]]])
    nq = q.shape[0]
    owner = np.concatenate([np.arange(t.shape[0]), t.shape[0] + np.arange(nq), t.shape[0] + np.arange(nq)])
    return tri, owner


def face_intersections(x: np.ndarray, triangles=None, quads=None, *, vertex_adjacent: bool = True) -> np.ndarray:
    """Intersecting pairs of mesh faces (triangles and quads) of one configuration.

    Quads are tested as their two triangles (diagonal 0–2); a pair of triangle halves maps to
    its faces, duplicates and the two halves of one quad removed.

    Parameters
    ----------
    x : (n, 3) float64 [m]
    triangles : (t, 3) int64, optional
    quads : (q, 4) int64, optional
    vertex_adjacent : bool, see :func:`self_intersections`

    Returns
    -------
    (p, 2) int64
        Face index pairs (i < j; triangles 0..t−1, then quads t..t+q−1), sorted, unique.
    """
    tri, owner = _split_faces(triangles, quads)
    pairs = self_intersections(x, tri, vertex_adjacent=vertex_adjacent)
    f = np.sort(owner[pairs], axis=1)
    f = f[f[:, 0] != f[:, 1]]
    return np.unique(f, axis=0) if f.size else np.zeros((0, 2), dtype=np.int64)


@dataclass
class IntersectionReport:
    """Intersecting face pairs of every checked frame of a trajectory.

    Attributes
    ----------
    frames : (F,) int64, indices of the checked frames
    times : (F,) float64 [s]
    pairs : list of F arrays (p_f, 2) int64, face pairs per frame (see :func:`face_intersections`)
    face_count : int
    """

    frames: np.ndarray
    times: np.ndarray
    pairs: list = field(default_factory=list)
    face_count: int = 0

    @property
    def counts(self) -> np.ndarray:
        """(F,) int64, number of intersecting pairs per checked frame."""
        return np.array([len(p) for p in self.pairs], dtype=np.int64)

    @property
    def ok(self) -> bool:
        """True when no checked frame has an intersecting pair."""
        return bool(np.all(self.counts == 0))

    def to_dict(self) -> dict:
        """JSON-serialisable summary (frames with intersections only)."""
        bad = [{"frame": int(f), "time": float(t), "pairs": p.tolist()}
               for f, t, p in zip(self.frames, self.times, self.pairs) if len(p)]
        return {"frames_checked": int(len(self.frames)), "face_count": int(self.face_count),
                "frames_with_intersections": len(bad), "total_pairs": int(self.counts.sum()),
                "intersections": bad}


def check_trajectory(traj, every: int = 1, *, vertex_adjacent: bool = True, progress=None) -> IntersectionReport:
    """Check every ``every``-th frame of a :class:`~isocloth.io.trajectory.Trajectory`;
    ``progress`` (callable(done, total) or None) is called after each frame.

    Raises
    ------
    ValueError
        ``every`` < 1, or a frame holds non-finite positions.
    """
    if int(every) < 1:
        raise ValueError(f"every must be >= 1, got {every}")
    frames = np.arange(0, traj.positions.shape[0], int(every), dtype=np.int64)
    pairs = []
    for k, f in enumerate(frames):
        pairs.append(face_intersections(traj.positions[f], traj.triangles, traj.quads, vertex_adjacent=vertex_adjacent))
        if progress is not None:
            progress(k + 1, frames.size)
    return IntersectionReport(frames=frames, times=np.asarray(traj.times)[frames], pairs=pairs,
                              face_count=int(traj.triangles.shape[0] + traj.quads.shape[0]))
