"""Thin (codimensional) moving obstacles: segments and points (seed 000 §6.3, §7.4).

A surface obstacle is handled per cloth node through its signed distance (thesis §3.2), but a
thin stick or the tip of a needle passes between the nodes. Such obstacles are given as vertices
with segments (checked against cloth edges, edge–edge) and points (checked against cloth faces,
node–face), with the same continuous detection and frozen-normal constraints as self-collisions
(:mod:`isocloth.contact.self_collision`): H = ν·(Σ w_i x_i) ≥ τ, τ the obstacle's radius.

Vertex motion: a rigid :class:`~isocloth.contact.obstacles.motion.Motion` of reference vertices,
or sampled vertex trajectories (times (F,), positions (F, k, 3)) linearly interpolated (and held
constant outside the sampled interval), as for a stick recorded by motion capture (seed 000 §7.4,
Remark 7.3).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from isocloth.contact.obstacles._checks import nonnegative, positive
from isocloth.contact.obstacles.motion import Motion, MotionStatic

__all__ = ["ObstacleCodim", "ObstacleSegments", "ObstaclePoints", "read_seg"]


def _vertices(value, name: str) -> np.ndarray:
    v = np.array(value, dtype=np.float64)
    if v.ndim == 1 and v.shape[0] == 3:
        v = v[None, :]
    if v.ndim != 2 or v.shape[1] != 3 or v.shape[0] == 0:
        raise ValueError(f"{name} must have shape (k, 3) with k >= 1, got {np.shape(value)}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite")
    return v


def _index_array(value, k: int, cols: int, name: str, count: int) -> np.ndarray:
    a = np.zeros((0, k) if cols else (0,), dtype=np.int64) if value is None else np.asarray(value)
    if a.size == 0:
        return np.zeros((0, k) if cols else (0,), dtype=np.int64)
    if not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must hold integer vertex indices, got dtype {a.dtype}")
    a = a.astype(np.int64).reshape((-1, k) if cols else (-1,))
    if a.min() < 0 or a.max() >= count:
        raise ValueError(f"{name} holds vertex indices outside [0, {count})")
    return a


def _check_segment_lengths(v: np.ndarray, segments: np.ndarray) -> None:
    """ValueError naming the first segment of zero length in vertices v (k, 3) or frames (F, k, 3)."""
    if not len(segments):
        return
    frames = v[None] if v.ndim == 2 else v
    zero = np.argwhere(np.all(frames[:, segments[:, 0]] == frames[:, segments[:, 1]], axis=2))
    if zero.size:
        f, j = (int(c) for c in zero[0])
        a, b = (int(c) for c in segments[j])
        when = f" in frame {f}" if v.ndim == 3 else ""
        raise ValueError(f"segment {j} has zero length: its vertices {a} and {b} coincide{when} (at "
                         f"{frames[f, a].tolist()}); remove the repeated vertex (a closed chain joins its last "
                         "vertex to its first by itself)")


class ObstacleCodim:
    """Vertices moving in time, with segments (edge–edge) and points (node–face).

    Parameters
    ----------
    vertices : (k, 3) array_like [m]
        Reference vertex positions (moved by ``motion``); ignored when ``trajectory`` is given
        (pass None).
    segments : (m, 2) array_like int, optional
        Vertex index pairs tested against cloth edges.
    points : (p,) array_like int, optional
        Vertex indices tested against cloth faces; default: the vertices used by fewer than two
        segments (free ends and isolated vertices).
    radius : float [m]
        Thickness τ > 0 of the constraint H ≥ τ (the stick radius, seed 000 Remark 7.2).
    mu : float
        Friction coefficient μ ≥ 0 against the cloth (default 0: polished stick, §7.4).
    motion : Motion, optional
        Rigid motion of ``vertices`` (static by default).
    times : (F,) array_like [s], trajectory : (F, k, 3) array_like [m], optional
        Sampled vertex positions instead of ``vertices`` + ``motion``.
    name : str, optional

    Raises
    ------
    ValueError
        Bad shapes, non-finite values, indices out of range, a segment of zero length (its two
        vertices coincide, in any trajectory frame), non-increasing ``times``, radius ≤ 0, mu < 0,
        or both ``motion`` and ``trajectory`` given.
    """

    kind = "codim"

    def __init__(self, vertices=None, segments=None, points=None, *, radius: float, mu: float = 0.0,
                 motion: Motion | None = None, times=None, trajectory=None, name: str | None = None):
        self.radius = positive(radius, "radius")
        self.mu = nonnegative(mu, "mu")
        if trajectory is not None:
            if motion is not None:
                raise ValueError("give either motion or times/trajectory, not both")
            tr = np.array(trajectory, dtype=np.float64)
            ts = np.array(times, dtype=np.float64).reshape(-1) if times is not None else None
            if tr.ndim != 3 or tr.shape[2] != 3 or tr.shape[0] == 0:
                raise ValueError(f"trajectory must have shape (F, k, 3), got {tr.shape}")
            if ts is None or ts.shape[0] != tr.shape[0]:
                raise ValueError("times must be given with one entry per trajectory frame")
            if not (np.all(np.isfinite(tr)) and np.all(np.isfinite(ts))):
                raise ValueError("times and trajectory must be finite")
            if ts.shape[0] > 1 and np.any(np.diff(ts) <= 0):
                raise ValueError("times must be strictly increasing")
            self._times, self._traj = ts, tr
            self._ref = tr[0].copy()
            self.motion = None
        else:
            self._ref = _vertices(vertices, "vertices")
            self._times = self._traj = None
            motion = MotionStatic() if motion is None else motion
            if not isinstance(motion, Motion):
                raise ValueError(f"motion must be a Motion instance, got {type(motion).__name__}")
            self.motion = motion
        k = self._ref.shape[0]
        self.segments = _index_array(segments, 2, True, "segments", k)
        _check_segment_lengths(self._ref if self._traj is None else self._traj, self.segments)
        if points is None:
            deg = np.bincount(self.segments.ravel(), minlength=k)
            points = np.flatnonzero(deg < 2)
        self.points = _index_array(points, 1, False, "points", k)
        if name is not None and not isinstance(name, str):
            raise ValueError(f"name must be a str, got {type(name).__name__}")
        self.name = self.kind if name is None else name

    @property
    def vertex_count(self) -> int:
        return int(self._ref.shape[0])

    @property
    def is_static(self) -> bool:
        return self._traj is None and self.motion.is_static

    def vertices_at(self, t: float) -> np.ndarray:
        """Vertex positions (k, 3) float64 [m] at time t [s]."""
        if self._traj is not None:
            ts = self._times
            if ts.shape[0] == 1 or t <= ts[0]:
                return self._traj[0].copy()
            if t >= ts[-1]:
                return self._traj[-1].copy()
            i = int(np.searchsorted(ts, t, side="right")) - 1
            f = (t - ts[i]) / (ts[i + 1] - ts[i])
            return (1.0 - f) * self._traj[i] + f * self._traj[i + 1]
        pose = self.motion.pose(t)
        return self._ref.copy() if pose.is_identity else pose.apply(self._ref)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, vertices={self.vertex_count}, "
                f"segments={len(self.segments)}, points={len(self.points)}, radius={self.radius}, mu={self.mu})")


class ObstacleSegments(ObstacleCodim):
    """A set of segments (e.g. the Codim-IPC needle bed), see :class:`ObstacleCodim`."""

    kind = "segments"

    @classmethod
    def from_seg(cls, path: str | os.PathLike, *, radius: float, scale: float = 1.0, motion: Motion | None = None,
                 **kwargs) -> "ObstacleSegments":
        """Segments read from a Codim-IPC ``.seg`` file (see :func:`read_seg`), scaled by ``scale``.

        Codim-IPC files are y up; pass e.g. ``motion=MotionStatic(Pose(rotation_matrix((1, 0, 0),
        np.pi / 2)))`` to make y point along +z.
        """
        v, s = read_seg(path)
        return cls(positive(scale, "scale") * v, s, radius=radius, motion=motion, **kwargs)

    @classmethod
    def needle_bed(cls, *, radius: float = 0.001, translation=(0.0, 0.0, 0.0), **kwargs) -> "ObstacleSegments":
        """The Codim-IPC needle bed (Li, Kaufman, Jiang 2021; packaged ``needleBed10x10.seg``,
        Apache-2.0): 100 needles 0.1 m long on a 0.1 m grid, turned z up (tips at z = 0 before
        ``translation`` [m]). The tips are the upper ends (point obstacles); the lower ends rest on
        the ground and are not points.
        """
        from importlib import resources

        from isocloth.contact.obstacles.motion import Pose, rotation_matrix

        path = Path(str(resources.files("isocloth") / "data" / "meshes" / "codim_ipc" / "needleBed10x10.seg"))
        v, s = read_seg(path)
        pose = Pose(rotation_matrix((1.0, 0.0, 0.0), np.pi / 2), translation)
        v = pose.apply(v)
        v[np.abs(v) < 1e-12] = 0.0  # cos(π/2) rounding
        top = np.where(v[s[:, 0], 2] >= v[s[:, 1], 2], s[:, 0], s[:, 1])
        return cls(v, s, top, radius=radius, **kwargs)


class ObstaclePoints(ObstacleCodim):
    """Point obstacles, e.g. needle peaks (seed 000 §6.3), checked against cloth faces.

    Parameters
    ----------
    points : (k, 3) array_like [m], reference positions
    radius, mu, motion, times, trajectory, name : see :class:`ObstacleCodim`
    """

    kind = "points"

    def __init__(self, points=None, *, radius: float, **kwargs):
        if kwargs.get("trajectory") is not None:
            k = np.shape(kwargs["trajectory"])[1]
        else:
            k = _vertices(points, "points").shape[0]
        super().__init__(points, None, np.arange(k), radius=radius, **kwargs)

    @classmethod
    def from_needles(cls, needles, *, radius: float | None = None, xlim=None, ylim=None, **kwargs) -> "ObstaclePoints":
        """The peaks (thesis eq. 3.17) of an :class:`~isocloth.contact.obstacles.needles.ObstacleNeedles`
        inside its extent, moving with it; radius defaults to the needles' thickness (> 0 required)."""
        pts = needles.peaks(0.0, xlim, ylim)
        pose0 = needles.motion.pose(0.0)
        ref = pts if pose0.is_identity else pose0.apply_inverse(pts)
        r = needles.thickness if radius is None else radius
        return cls(ref, radius=r, mu=kwargs.pop("mu", needles.mu), motion=needles.motion, **kwargs)


def read_seg(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read a Codim-IPC segment file: ``v x y z`` lines, then ``s i j`` lines (1-based indices).

    Returns
    -------
    vertices : (k, 3) float64; segments : (m, 2) int64 (0-based)

    Raises
    ------
    ValueError
        Malformed line, or an index out of range. OSError if the file cannot be read.
    """
    verts: list[list[float]] = []
    segs: list[list[int]] = []
    for no, line in enumerate(Path(path).read_text().splitlines(), 1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        try:
            if parts[0] == "v" and len(parts) >= 4:
                verts.append([float(parts[1]), float(parts[2]), float(parts[3])])
            elif parts[0] == "s" and len(parts) >= 3:
                segs.append([int(parts[1]) - 1, int(parts[2]) - 1])
            else:
                raise ValueError
        except ValueError:
            raise ValueError(f"{path}:{no}: expected 'v x y z' or 's i j', got {line.strip()!r}") from None
    v = np.array(verts, dtype=np.float64).reshape(-1, 3)
    s = np.array(segs, dtype=np.int64).reshape(-1, 2)
    if s.size and (s.min() < 0 or s.max() >= len(v)):
        raise ValueError(f"{path}: segment index out of range 1..{len(v)}")
    return v, s
