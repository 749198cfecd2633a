"""Per-step control: where the grasped nodes must be, and the trajectories that say so.

A :class:`Grasp` holds a set of nodes rigidly (one gripper, or a hanger holding two corners)
and moves them by a :class:`Trajectory`, a function of time returning a displacement [m] from
the nodes' initial positions (optionally a rotation about a centre). ``ControlSchedule.at(t)``
gives the :class:`Control` for a step; users driving the cloth from their own code (e.g. an RL
policy) may build ``Control`` objects directly, or let a :class:`GraspController` grasp, move and
release nodes at run time.

Grasps need not last the whole run: a :class:`Grasp` with ``start`` / ``end`` holds its nodes only
for steps ending in [start, end), and a ``Control`` may name its own grasped nodes. Grasped nodes
are prescribed positions, eliminated from the dynamics (thesis §2.5); the stepper switches between
the models of the grasp sets (``ClothModel.with_grasped_nodes``) without rebuilding anything else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = [
    "Control", "Grasp", "ControlSchedule", "GraspController", "nodes_near", "surface_point", "grasp_node_indices", "Trajectory", "TrajectoryFixed", "TrajectoryWaypoints",
    "TrajectorySinusoid", "TrajectorySampled", "TrajectoryCallable", "TrajectoryRotation",
]


@dataclass(frozen=True)
class Control:
    """Targets for one step.

    Attributes
    ----------
    t : float
        Time [s] the targets refer to (the end of the step).
    grasp_targets : (g, 3) float64
        Positions [m] of the grasped nodes at t, in the order of ``grasp_nodes``.
    grasp_nodes : (g,) int64 or None
        The nodes held in this step (distinct node indices; g = 0: none, the cloth is free).
        None: the model's own grasped nodes (``ClothModel.grasp_nodes``). Nodes not held in the
        previous step are attached at their targets; nodes held before and missing now are
        released with the velocity of their last step.
    """

    t: float
    grasp_targets: np.ndarray
    grasp_nodes: np.ndarray | None = None

    def validated(self, node_count: int, default_nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(nodes (g,) int64, targets (g, 3) float64) of this control for a model of ``node_count``
        nodes whose own grasped nodes are ``default_nodes``.

        Raises
        ------
        ValueError naming the problem: targets that are not a (g, 3) array of finite positions, node
        indices that are not integers in 0..n−1 or that repeat.
        """
        if self.grasp_nodes is None:
            nodes = np.asarray(default_nodes, dtype=np.int64)
        else:
            nodes = grasp_node_indices(self.grasp_nodes, node_count)
        try:
            targets = np.asarray(self.grasp_targets, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError("control.grasp_targets must be an array of positions [m]") from None
        if targets.shape != (nodes.size, 3):
            raise ValueError(f"control.grasp_targets must have shape {(nodes.size, 3)} (one position per grasped "
                             f"node), got {targets.shape}")
        if not np.isfinite(targets).all():
            k = int(np.flatnonzero(~np.isfinite(targets).all(axis=1))[0])
            raise ValueError(f"control.grasp_targets must be finite positions [m]; row {k} (grasped node "
                             f"{int(nodes[k])}) is {targets[k].tolist()}")
        return nodes, targets


def grasp_node_indices(nodes, node_count: int) -> np.ndarray:
    """``nodes`` as (g,) int64 node indices of a model of ``node_count`` nodes.

    Raises
    ------
    ValueError if they are not a 1-D array of integers in 0..n−1 or one repeats.
    """
    raw = np.asarray(nodes)
    if raw.ndim != 1 or (raw.size and not np.issubdtype(raw.dtype, np.integer)):
        raise ValueError(f"control.grasp_nodes must be a 1-D array of node indices, got {raw.dtype} array "
                         f"of shape {raw.shape}")
    out = raw.astype(np.int64)
    bad = out[(out < 0) | (out >= node_count)]
    if bad.size:
        raise ValueError(f"control.grasp_nodes names node {int(bad[0])}, outside 0..{node_count - 1}")
    uniq, counts = np.unique(out, return_counts=True)
    if np.any(counts > 1):
        raise ValueError(f"control.grasp_nodes names node {int(uniq[counts > 1][0])} twice; a node is "
                         "held by one target")
    return out


def _finite_array(value, what: str, shape: tuple | None = None) -> np.ndarray:
    """``value`` as a float64 array (of ``shape`` when given; -1 matches any length) whose entries are all
    finite.

    Raises
    ------
    ValueError naming ``what``, the expected shape and the first offending entry.
    """
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        of_shape = "" if shape is None else f" of shape {shape}"
        raise ValueError(f"{what} must be numbers{of_shape}, got {value!r}") from None
    if shape is not None and (a.ndim != len(shape) or any(k not in (-1, n) for k, n in zip(shape, a.shape))):
        raise ValueError(f"{what} must have shape {shape}, got {a.shape}")
    bad = np.argwhere(~np.isfinite(a))
    if bad.size:
        index = int(bad[0][0]) if a.ndim == 1 else tuple(int(i) for i in bad[0])
        where = f" (entry {index} is {a[tuple(bad[0])]})" if a.ndim else ""
        raise ValueError(f"{what} must be finite numbers, got {value!r}{where}: replace NaN and inf by numbers")
    return a


def _finite_number(value, what: str, minimum: float | None = None, strict: bool = False) -> float:
    """``value`` as a finite float (> or ≥ ``minimum`` when given); ValueError naming ``what`` otherwise."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {value!r}") from None
    if not np.isfinite(v):
        raise ValueError(f"{what} must be a finite number, got {value!r}")
    if minimum is not None and (v <= minimum if strict else v < minimum):
        raise ValueError(f"{what} must be {'>' if strict else '>='} {minimum:g}, got {value!r}")
    return v


class Trajectory:
    """Base class: ``displacement(t, x0)`` → (k, 3) float64 [m] for nodes starting at x0 (k, 3)."""

    def displacement(self, t: float, x0: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def describe(self) -> dict:
        return {"type": type(self).__name__}


@dataclass(frozen=True)
class TrajectoryFixed(Trajectory):
    """Nodes held still."""

    def displacement(self, t, x0):
        return np.zeros_like(x0)


@dataclass(frozen=True)
class TrajectoryWaypoints(Trajectory):
    """Piecewise interpolation of displacement waypoints.

    Parameters
    ----------
    times : (w,) float64 [s], strictly increasing.
    points : (w, 3) float64 [m], displacements at those times (the first is usually 0).
    interpolation : "linear" | "cubic" (C² cubic spline with zero velocity at the
        first and last waypoints, scipy's clamped ``CubicSpline``) | "smoothstep"
        (each segment eased with 3s² − 2s³, zero velocity at every waypoint).
    Outside [times[0], times[-1]] the end values are held.

    Raises
    ------
    ValueError
        If times or points are not numbers of shapes (w,) and (w, 3) with w ≥ 1, contain NaN or inf
        (the message names the waypoint), the times do not increase strictly, or the interpolation is
        unknown.
    """

    times: tuple
    points: tuple
    interpolation: str = "linear"

    def __post_init__(self):
        try:
            t = np.asarray(self.times, dtype=float)
            p = np.asarray(self.points, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"waypoints need times (w,) and points (w, 3) of numbers; got times {self.times!r} "
                             f"and points {self.points!r}") from None
        if t.ndim != 1 or t.size < 1 or p.shape != (t.size, 3):
            raise ValueError(f"waypoints need times (w,) and points (w, 3); got {t.shape} and {p.shape}")
        bad = np.flatnonzero(~np.isfinite(t))
        if bad.size:
            raise ValueError(f"waypoint times must be finite times [s]; waypoint {int(bad[0])} has time "
                             f"{t[bad[0]]}: replace NaN and inf by times")
        bad = np.flatnonzero(~np.isfinite(p).all(axis=1))
        if bad.size:
            raise ValueError(f"waypoint points must be finite displacements [m]; waypoint {int(bad[0])} (at t = "
                             f"{t[bad[0]]:g} s) is {p[bad[0]].tolist()}: replace NaN and inf by numbers")
        if np.any(np.diff(t) <= 0):
            raise ValueError("waypoint times must be strictly increasing")
        if self.interpolation not in ("linear", "cubic", "smoothstep"):
            raise ValueError(f"interpolation must be linear, cubic or smoothstep, not {self.interpolation!r}")

    def _value(self, t: float) -> np.ndarray:
        ts = np.asarray(self.times, dtype=float)
        ps = np.asarray(self.points, dtype=float)
        if t <= ts[0]:
            return ps[0]
        if t >= ts[-1]:
            return ps[-1]
        if self.interpolation == "cubic" and ts.size >= 3:
            from scipy.interpolate import CubicSpline

            return CubicSpline(ts, ps, bc_type="clamped")(t)
        i = int(np.searchsorted(ts, t, side="right") - 1)
        s = (t - ts[i]) / (ts[i + 1] - ts[i])
        if self.interpolation == "smoothstep":
            s = s * s * (3 - 2 * s)
        return (1 - s) * ps[i] + s * ps[i + 1]

    def displacement(self, t, x0):
        return np.broadcast_to(self._value(t), x0.shape).copy()

    def describe(self):
        return {"type": "waypoints", "times": list(map(float, self.times)),
                "points": np.asarray(self.points, float).tolist(), "interpolation": self.interpolation}


@dataclass(frozen=True)
class TrajectorySinusoid(Trajectory):
    """Shaking: d(t) = a (cos(2π f (t − t0) + φ) − cos φ) for t ≥ t0, 0 before.

    With φ = 0 this is the WAM experiment's x(t) = A cos(2π f t) + c (thesis eq. 4.1 / paper
    eq. 23) shifted so that it starts at the initial position, from rest.

    Parameters
    ----------
    amplitude : (3,) [m]; frequency f [Hz]; phase φ [rad]; start t0 [s]; duration [s] or None
        (after t0 + duration the displacement is held).

    Raises
    ------
    ValueError
        If the amplitude is not three finite numbers, the frequency, phase or start is not a finite
        number, the frequency is < 0 Hz or the duration is not None or a finite number ≥ 0 s.
    """

    amplitude: tuple
    frequency: float
    phase: float = 0.0
    start: float = 0.0
    duration: float | None = None

    def __post_init__(self):
        _finite_array(self.amplitude, "sinusoid amplitude [m]", (3,))
        _finite_number(self.frequency, "sinusoid frequency [Hz]", 0.0)
        _finite_number(self.phase, "sinusoid phase [rad]")
        _finite_number(self.start, "sinusoid start [s]")
        if self.duration is not None:
            _finite_number(self.duration, "sinusoid duration [s]", 0.0)

    def _value(self, t):
        a = np.asarray(self.amplitude, dtype=float)
        if t <= self.start:
            return np.zeros(3)
        if self.duration is not None:
            t = min(t, self.start + self.duration)
        w = 2 * np.pi * self.frequency
        return a * (np.cos(w * (t - self.start) + self.phase) - np.cos(self.phase))

    def displacement(self, t, x0):
        return np.broadcast_to(self._value(t), x0.shape).copy()

    def describe(self):
        return {"type": "sinusoid", "amplitude": list(map(float, self.amplitude)),
                "frequency": self.frequency, "phase": self.phase, "start": self.start,
                "duration": self.duration}


@dataclass(frozen=True)
class TrajectorySampled(Trajectory):
    """Displacements sampled at a fixed rate, interpolated linearly (e.g. recorded mocap).

    Parameters
    ----------
    rate : float [Hz]
    samples : (s, 3) or (s, k, 3) float64 [m] (per-node samples for k nodes)
    start : float [s], time of the first sample. Values are held outside the samples.

    Raises
    ------
    ValueError
        If the samples do not have one of those shapes or contain NaN or inf, the rate is not a finite
        number > 0 Hz or the start is not a finite number.
    """

    rate: float
    samples: np.ndarray = field(repr=False)
    start: float = 0.0

    def __post_init__(self):
        s = np.asarray(self.samples, dtype=float)
        if s.ndim not in (2, 3) or s.shape[-1] != 3 or s.shape[0] < 1:
            raise ValueError(f"samples must have shape (s, 3) or (s, k, 3); got {s.shape}")
        if not np.isfinite(s).all():
            raise ValueError("samples contain NaN or inf: fill gaps before using them to drive a grasp")
        _finite_number(self.rate, "rate [Hz]", 0.0, strict=True)
        _finite_number(self.start, "sampled trajectory start [s]")
        object.__setattr__(self, "samples", s)

    def displacement(self, t, x0):
        u = (t - self.start) * self.rate
        s = self.samples
        if u <= 0:
            v = s[0]
        elif u >= s.shape[0] - 1:
            v = s[-1]
        else:
            i = int(np.floor(u))
            f = u - i
            v = (1 - f) * s[i] + f * s[i + 1]
        return np.broadcast_to(v, x0.shape).copy()

    def describe(self):
        return {"type": "sampled", "rate": self.rate, "sample_count": int(self.samples.shape[0])}


@dataclass(frozen=True)
class TrajectoryRotation(Trajectory):
    """Rigid rotation about an axis through ``center`` with angle θ(t) = ω (t − t0), clamped to
    [0, max_angle], composed with an optional translation trajectory.

    Parameters
    ----------
    axis : (3,) direction; center : (3,) [m]; angular_velocity ω [rad/s]; start t0 [s];
    max_angle [rad] or None; then : optional Trajectory added after the rotation.

    Raises
    ------
    ValueError
        If the axis is not three finite numbers of nonzero length, the centre not three finite
        numbers, the angular velocity or start not a finite number, or max_angle not None or a
        finite number.
    """

    axis: tuple
    center: tuple
    angular_velocity: float
    start: float = 0.0
    max_angle: float | None = None

    def __post_init__(self):
        axis = _finite_array(self.axis, "rotation axis", (3,))
        if not np.linalg.norm(axis) > 0:
            raise ValueError(f"rotation axis must be a direction of nonzero length, got {list(self.axis)}: "
                             "give e.g. [0, 0, 1] for the vertical axis")
        _finite_array(self.center, "rotation center [m]", (3,))
        _finite_number(self.angular_velocity, "rotation angular_velocity [rad/s]")
        _finite_number(self.start, "rotation start [s]")
        if self.max_angle is not None:
            _finite_number(self.max_angle, "rotation max_angle [rad]")

    def displacement(self, t, x0):
        theta = self.angular_velocity * max(0.0, t - self.start)
        if self.max_angle is not None:
            theta = float(np.clip(theta, -abs(self.max_angle), abs(self.max_angle)))
        k = np.asarray(self.axis, dtype=float)
        k = k / np.linalg.norm(k)
        c = np.asarray(self.center, dtype=float)
        r = x0 - c
        cos, sin = np.cos(theta), np.sin(theta)
        rot = r * cos + np.cross(k, r) * sin + np.outer(r @ k, k) * (1 - cos)  # Rodrigues
        return rot - r

    def describe(self):
        return {"type": "rotation", "axis": list(map(float, self.axis)),
                "center": list(map(float, self.center)), "angular_velocity": self.angular_velocity,
                "start": self.start, "max_angle": self.max_angle}


@dataclass(frozen=True)
class TrajectoryCallable(Trajectory):
    """A Python callable ``f(t) -> (3,) or (k, 3)`` displacement [m].

    Raises
    ------
    TypeError
        At construction, if ``function`` is not callable.
    ValueError
        From :meth:`displacement`, if the callable returns a shape that does not broadcast to the
        nodes or a non-finite displacement.
    """

    function: Callable[[float], np.ndarray]

    def __post_init__(self):
        if not callable(self.function):
            raise TypeError(f"TrajectoryCallable needs a function of time t [s] returning a displacement [m], "
                            f"got {type(self.function).__name__} {self.function!r}")

    def displacement(self, t, x0):
        d = np.asarray(self.function(t), dtype=float)
        try:
            d = np.broadcast_to(d, x0.shape).copy()
        except ValueError:
            raise ValueError(f"trajectory callable returned shape {d.shape}; expected (3,) or {x0.shape}") from None
        if not np.isfinite(d).all():
            raise ValueError(f"trajectory callable returned a non-finite displacement at t = {t}")
        return d

    def describe(self):
        return {"type": "callable", "name": getattr(self.function, "__name__", "?")}


@dataclass(frozen=True)
class Grasp:
    """Nodes held together by one gripper and moved by one trajectory.

    Attributes
    ----------
    nodes : (k,) int64 node indices.
    trajectory : Trajectory (displacement from the nodes' positions when the grasp starts: their
        initial positions for ``start`` = 0).
    name : str
    start, end : float [s], the grasp holds its nodes in the steps that end at a time t with
        start ≤ t < end (end None: to the end of the run); outside, the nodes are free.
    """

    nodes: tuple
    trajectory: Trajectory = field(default_factory=TrajectoryFixed)
    name: str = "grasp"
    start: float = 0.0
    end: float | None = None

    def __post_init__(self):
        if not np.isfinite(self.start) or self.start < 0:
            raise ValueError(f"grasp {self.name!r}: start must be a time >= 0 s, got {self.start!r}")
        if self.end is not None and not (np.isfinite(self.end) and self.end > self.start):
            raise ValueError(f"grasp {self.name!r}: end must be a time after start ({self.start:g} s), got {self.end!r}")

    def holds(self, t: float) -> bool:
        """Whether the grasp holds its nodes in the step ending at t [s]."""
        return self.start <= t + 1e-12 and (self.end is None or t < self.end - 1e-12)


@dataclass(frozen=True)
class ControlSchedule:
    """The grasps of a model and their trajectories; ``at(t)`` → Control.

    Attributes
    ----------
    grasps : tuple of Grasp
    node_ids : (g,) int64, the grasped nodes in order (concatenation of the grasps' nodes)
    initial_positions : (g, 3) float64 [m]
    """

    grasps: tuple
    node_ids: np.ndarray
    initial_positions: np.ndarray

    @property
    def timed(self) -> bool:
        """Whether some grasp starts after 0 s or ends: the grasped nodes then change during the run."""
        return any(g.start > 0 or g.end is not None for g in self.grasps)

    def anchors(self, t: float, x: np.ndarray, anchors: np.ndarray | None) -> np.ndarray:
        """Positions (g, 3) float64 [m] the trajectories start from, for the step ending at t [s]:
        ``anchors`` (the previous step's; None: the initial positions, NaN for grasps that start
        later) with the grasps that start holding at t anchored at their nodes' positions in ``x``
        (n, 3), the positions at the start of that step."""
        out = np.array(self.initial_positions if anchors is None else anchors, dtype=np.float64, copy=True)
        if anchors is None:
            self._rows(out, lambda g: g.start > 0, np.nan)
        first = 0
        for g in self.grasps:
            k = len(g.nodes)
            block = out[first:first + k]
            if g.holds(t) and np.isnan(block).any():
                block[:] = x[list(g.nodes)]
            first += k
        return out

    def for_step(self, t: float, x: np.ndarray, anchors: np.ndarray | None) -> tuple[Control, np.ndarray | None]:
        """The Control of the step ending at t [s] from positions x (n, 3) [m] at its start, and the anchors
        to carry to the next step (timed grasps take their nodes where they are when they start; see
        :meth:`anchors`); ``anchors`` is returned unchanged without timed grasps."""
        if not self.timed:
            return self.at(t), anchors
        anchors = self.anchors(t, x, anchors)
        return self.at(t, anchors), anchors

    def _rows(self, out: np.ndarray, which, value) -> None:
        first = 0
        for g in self.grasps:
            k = len(g.nodes)
            if which(g):
                out[first:first + k] = value
            first += k

    def at(self, t: float, anchors: np.ndarray | None = None) -> Control:
        """Grasp targets at time t [s]. ``anchors`` (g, 3) [m]: the positions the trajectories
        start from (:meth:`anchors`; default the initial positions). With timed grasps the Control
        names the nodes held at t (``Control.grasp_nodes``)."""
        base = self.initial_positions if anchors is None else np.asarray(anchors, dtype=np.float64)
        out = np.empty_like(self.initial_positions)
        held = np.ones(self.node_ids.size, dtype=bool)
        start = 0
        for g in self.grasps:
            k = len(g.nodes)
            x0 = base[start:start + k]
            out[start:start + k] = x0 + g.trajectory.displacement(t, x0)
            held[start:start + k] = g.holds(t)
            start += k
        if not self.timed:
            return Control(t=float(t), grasp_targets=out)
        if np.isnan(out[held]).any():
            raise ValueError("a grasp that starts after 0 s needs the anchors of ControlSchedule.anchors "
                             "(the positions of its nodes when it starts)")
        return Control(t=float(t), grasp_targets=out[held], grasp_nodes=self.node_ids[held])

    def describe(self) -> list[dict]:
        return [{"name": g.name, "nodes": list(map(int, g.nodes)), "trajectory": g.trajectory.describe(),
                 "start": g.start, "end": g.end} for g in self.grasps]


def nodes_near(x: np.ndarray, point, radius: float | None = None) -> np.ndarray:
    """Nodes a gripper at ``point`` (3,) [m] takes from positions x (n, 3) [m]: every node within
    ``radius`` [m] (sorted), or, for None or when none is that close, the nearest node (1,) int64.

    Raises
    ------
    ValueError if the point is not a finite (3,) position or the radius is not > 0.
    """
    p = np.asarray(point, dtype=np.float64)
    if p.shape != (3,) or not np.isfinite(p).all():
        raise ValueError(f"a grasp point must be a finite position (3,) [m], got {np.asarray(point).tolist()}")
    if radius is not None and not (np.isfinite(radius) and radius > 0):
        raise ValueError(f"a gripper radius must be > 0 m, got {radius!r}")
    d = np.linalg.norm(np.asarray(x, dtype=np.float64) - p, axis=1)
    if radius is not None:
        inside = np.flatnonzero(d <= radius)
        if inside.size:
            return inside.astype(np.int64)
    return np.array([int(np.argmin(d))], dtype=np.int64)


def surface_point(mesh, x: np.ndarray, point) -> tuple[np.ndarray, np.ndarray]:
    """The point of the cloth surface at positions x (n, 3) [m] nearest to ``point`` (3,) [m], as
    the nodes (3,) int64 of its triangle (quads split along their 0–2 diagonal) and its barycentric
    weights there (3,) float64 (≥ 0, sum 1): Σ w_i x[nodes_i] is the point.

    Raises
    ------
    ValueError if the point is not a finite (3,) position or x does not fit the mesh.
    """
    import trimesh

    p = np.asarray(point, dtype=np.float64)
    if p.shape != (3,) or not np.isfinite(p).all():
        raise ValueError(f"a grasp point must be a finite position (3,) [m], got {np.asarray(point).tolist()}")
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (mesh.node_count, 3) or not np.isfinite(x).all():
        raise ValueError(f"surface_point needs finite positions of shape ({mesh.node_count}, 3), got {x.shape}")
    faces = mesh.triangulated_faces()
    tris = x[faces]
    closest = trimesh.triangles.closest_point(tris, np.broadcast_to(p, (faces.shape[0], 3)))
    face = int(np.argmin(np.linalg.norm(closest - p, axis=1)))
    nodes = faces[face].astype(np.int64)
    w = trimesh.triangles.points_to_barycentric(tris[face][None], closest[face][None])[0]
    w = np.clip(w, 0.0, None)
    return nodes, w / w.sum()


class GraspController:
    """Grasps that a program opens, moves and closes while it steps the cloth (a robot policy).

    ``grasp`` attaches nodes (given, those near a point, or the triangle under a point of the
    surface) where they are, ``move_to`` / ``move_by`` set where a grasp takes them in the next step,
    ``release`` lets them go, and :meth:`control` gives the :class:`Control` of the next step::

        hand = GraspController(model.node_count)
        h = hand.grasp(state.x, point=(0.5, 0.5, 0.0))
        hand.move_by(h, (0.0, 0.0, 0.01))
        state, info = stepper.step(state, hand.control(state.t + stepper.dt))
        hand.release(h)

    A grasp's nodes move rigidly with it (a gripper's fingers). Its grasp point is a weighted mean
    of its nodes: the centroid, or a point inside a face by its barycentric weights
    (``grasp(x, point=p, surface=mesh)``); ``move_to`` places the grasp point.
    A node belongs to one grasp at a time. ``StepInfo.grasp_forces`` holds the force of each held
    node in :attr:`nodes` order (``grasp_force(info, handle)`` sums a grasp's).
    """

    def __init__(self, node_count: int) -> None:
        self.node_count = int(node_count)
        # handle -> (nodes (k,), targets (k, 3), weights (k,) of the grasp point)
        self._grasps: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._next = 0

    def grasp(self, x: np.ndarray, *, nodes=None, point=None, radius: float | None = None, weights=None,
              surface=None) -> int:
        """Attach nodes at their positions in x (n, 3) [m]; returns the grasp's handle.

        ``nodes`` (k,) int, optionally with ``weights`` (k,) of its grasp point (≥ 0, summing to 1;
        default the centroid); or the nodes near ``point`` (:func:`nodes_near` with ``radius``); or,
        with ``surface`` (the cloth's Mesh), the triangle of the surface point nearest to ``point``
        with its barycentric weights (:func:`surface_point`): the grasp point is then that point.

        Raises
        ------
        ValueError if neither or both of nodes and point are given, x is not (n, 3) and finite, a node
        index is out of range or repeated, the weights do not fit the nodes, or a node is already
        held by another grasp.
        """
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (self.node_count, 3) or not np.isfinite(x).all():
            raise ValueError(f"grasp needs the current positions, a finite ({self.node_count}, 3) array")
        if (nodes is None) == (point is None):
            raise ValueError("grasp needs either nodes or a point")
        if surface is not None:
            if nodes is not None or radius is not None or weights is not None:
                raise ValueError("a grasp on the surface takes a point only (no nodes, radius or weights)")
            nodes, weights = surface_point(surface, x, point)
        if nodes is None:
            if weights is not None:
                raise ValueError("weights go with nodes (or use surface= for a point on a face)")
            idx = nodes_near(x, point, radius)
        else:
            raw = np.asarray(nodes, dtype=np.int64).ravel()
            idx = np.unique(raw)
            if idx.size == 0:
                raise ValueError("a grasp needs at least one node")
            if idx.min() < 0 or idx.max() >= self.node_count:
                raise ValueError(f"grasp node {int(idx[(idx < 0) | (idx >= self.node_count)][0])} is outside "
                                 f"0..{self.node_count - 1}")
            if weights is not None:
                w = np.asarray(weights, dtype=np.float64).ravel()
                if idx.size != raw.size or w.shape != raw.shape or not np.isfinite(w).all() or (w < 0).any() \
                        or not abs(w.sum() - 1.0) <= 1e-9:
                    raise ValueError(f"grasp weights must be one per distinct node, >= 0 and sum to 1; got nodes "
                                     f"{raw.tolist()} and weights {np.asarray(weights).tolist()}")
                weights = w[np.argsort(raw)]
        taken = np.intersect1d(idx, self.nodes)
        if taken.size:
            raise ValueError(f"node {int(taken[0])} is already held by another grasp; release it first")
        handle = self._next
        self._next += 1
        w = np.full(idx.size, 1.0 / idx.size) if weights is None else np.asarray(weights, dtype=np.float64)
        self._grasps[handle] = (idx, x[idx].copy(), w)
        return handle

    def _get(self, handle: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if handle not in self._grasps:
            raise ValueError(f"no open grasp with handle {handle!r} (open: {sorted(self._grasps)})")
        return self._grasps[handle]

    def grasp_point(self, handle: int) -> np.ndarray:
        """(3,) float64 [m], where the grasp takes its grasp point in the next step."""
        _, targets, w = self._get(handle)
        return w @ targets

    def move_to(self, handle: int, targets) -> None:
        """Targets (3,) — of the grasp point, the nodes following rigidly — or (k, 3) per node [m] for
        the next step."""
        nodes, old, w = self._get(handle)
        t = np.asarray(targets, dtype=np.float64)
        if t.shape == (3,):
            t = old + (t - w @ old)
        if t.shape != old.shape or not np.isfinite(t).all():
            raise ValueError(f"grasp {handle} needs finite targets of shape (3,) or {old.shape} [m], got "
                             f"{np.asarray(targets).tolist()}")
        self._grasps[handle] = (nodes, t, w)

    def move_by(self, handle: int, displacement) -> None:
        """Move the grasp's targets by ``displacement`` (3,) [m]."""
        nodes, old, w = self._get(handle)
        d = np.asarray(displacement, dtype=np.float64)
        if d.shape != (3,) or not np.isfinite(d).all():
            raise ValueError(f"a grasp displacement must be a finite (3,) vector [m], got {np.asarray(displacement).tolist()}")
        self._grasps[handle] = (nodes, old + d, w)

    def lag(self, handle: int, x: np.ndarray) -> float:
        """Largest distance [m] of the grasp's nodes in positions x (n, 3) float64 [m] from their
        targets: 0 while the grasp holds them, > 0 after a step that held its grasps back
        (``StepInfo.grasp_lag``).

        Raises
        ------
        ValueError for an unknown handle or x not of shape (n, 3).
        """
        if np.shape(x) != (self.node_count, 3):
            raise ValueError(f"lag needs the current positions, a ({self.node_count}, 3) array, got shape {np.shape(x)}")
        nodes, targets, _ = self._get(handle)
        return float(np.linalg.norm(np.asarray(x, dtype=np.float64)[nodes] - targets, axis=1).max())

    def release(self, handle: int) -> None:
        """Let the grasp's nodes go (from the next step on)."""
        self._get(handle)
        del self._grasps[handle]

    @property
    def handles(self) -> list[int]:
        return sorted(self._grasps)

    @property
    def nodes(self) -> np.ndarray:
        """(g,) int64, the held nodes in the order of :meth:`control`."""
        parts = [self._grasps[h][0] for h in self.handles]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def control(self, t: float) -> Control:
        """The Control of the step ending at t [s]."""
        parts = [self._grasps[h][1] for h in self.handles]
        targets = np.concatenate(parts) if parts else np.zeros((0, 3))
        return Control(t=float(t), grasp_targets=targets, grasp_nodes=self.nodes)

    def grasp_force(self, info, handle: int) -> np.ndarray:
        """(3,) float64 [N], the force the grasp ``handle`` exerted on the cloth in the step of
        ``info`` (a StepInfo of a step driven by :meth:`control`, the grasps unchanged since)."""
        nodes, _, _ = self._get(handle)
        held = self.nodes
        pos = np.flatnonzero(np.isin(held, nodes))
        return np.asarray(info.grasp_forces, dtype=np.float64)[pos].sum(axis=0)
