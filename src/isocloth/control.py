"""Per-step control: where the grasped nodes must be, and the trajectories that say so.

A :class:`Grasp` holds a set of nodes rigidly (one gripper, or a hanger holding two corners)
and moves them by a :class:`Trajectory`, a function of time returning a displacement [m] from
the nodes' initial positions (optionally a rotation about a centre). ``ControlSchedule.at(t)``
gives the :class:`Control` for a step; users driving the cloth from their own code (e.g. an RL
policy) may build ``Control`` objects directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = [
    "Control", "Grasp", "ControlSchedule", "Trajectory", "TrajectoryFixed", "TrajectoryWaypoints",
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
        Positions [m] of the grasped nodes, in ``ClothModel.grasp_nodes`` order.
    """

    t: float
    grasp_targets: np.ndarray


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
    interpolation : "linear" | "cubic" (C² natural cubic spline, scipy) | "smoothstep"
        (each segment eased with 3s² − 2s³, zero velocity at every waypoint).
    Outside [times[0], times[-1]] the end values are held.
    """

    times: tuple
    points: tuple
    interpolation: str = "linear"

    def __post_init__(self):
        t = np.asarray(self.times, dtype=float)
        p = np.asarray(self.points, dtype=float)
        if t.ndim != 1 or t.size < 1 or p.shape != (t.size, 3):
            raise ValueError(f"waypoints need times (w,) and points (w, 3); got {t.shape} and {p.shape}")
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
    """

    amplitude: tuple
    frequency: float
    phase: float = 0.0
    start: float = 0.0
    duration: float | None = None

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
        if self.rate <= 0:
            raise ValueError("rate must be > 0 Hz")
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
    """

    axis: tuple
    center: tuple
    angular_velocity: float
    start: float = 0.0
    max_angle: float | None = None

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
    """A Python callable ``f(t) -> (3,) or (k, 3)`` displacement [m]."""

    function: Callable[[float], np.ndarray]

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
    trajectory : Trajectory (displacement from the nodes' initial positions).
    name : str
    """

    nodes: tuple
    trajectory: Trajectory = field(default_factory=TrajectoryFixed)
    name: str = "grasp"


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

    def at(self, t: float) -> Control:
        """Grasp targets at time t [s]."""
        out = np.empty_like(self.initial_positions)
        start = 0
        for g in self.grasps:
            k = len(g.nodes)
            x0 = self.initial_positions[start:start + k]
            out[start:start + k] = x0 + g.trajectory.displacement(t, x0)
            start += k
        return Control(t=float(t), grasp_targets=out)

    def describe(self) -> list[dict]:
        return [{"name": g.name, "nodes": list(map(int, g.nodes)), "trajectory": g.trajectory.describe()}
                for g in self.grasps]
