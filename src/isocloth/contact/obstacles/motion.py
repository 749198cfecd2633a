"""Rigid poses and kinematic motion schedules of obstacles.

A pose maps reference (body) coordinates to world coordinates, x = R x₀ + T. A motion is a
time-dependent pose t ↦ (R(t), T(t)) together with the rigid velocity field it induces at world
points, v(x, t) = ω(t) × (x − c) + v_c(t) (thesis §3.6.2: the rotating sphere's surface velocity
enters the relative tangential velocity of friction). Units: m, s, rad.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np

from isocloth.contact.obstacles._checks import (
    finite_scalar,
    points3,
    positive_or_inf,
    unit_vector3,
    vector3,
)

__all__ = [
    "Pose",
    "rotation_matrix",
    "Motion",
    "MotionStatic",
    "MotionTranslation",
    "MotionWaypoints",
    "MotionRotation",
    "MotionComposite",
]


def rotation_matrix(axis, angle: float) -> np.ndarray:
    """Rotation by ``angle`` [rad] about the unit ``axis`` (3,) (right-hand rule, Rodrigues).

    Returns
    -------
    (3, 3) float64

    Raises
    ------
    ValueError
        If ``axis`` is not a unit vector or ``angle`` is not finite.
    """
    a = unit_vector3(axis, "axis")
    th = finite_scalar(angle, "angle")
    K = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + math.sin(th) * K + (1.0 - math.cos(th)) * (K @ K)


class Pose:
    """Rigid transform x_world = R x_ref + T.

    Parameters
    ----------
    rotation : (3, 3) array_like, optional
        Proper rotation matrix (orthonormal, det +1, tolerance 1e-8); identity by default.
    translation : (3,) array_like, optional
        Translation T [m]; zero by default.

    Raises
    ------
    ValueError
        ``rotation`` is not a proper rotation, or ``translation`` is not a finite 3-vector.
    """

    __slots__ = ("rotation", "translation")

    def __init__(self, rotation=None, translation=None):
        R = np.eye(3) if rotation is None else np.array(rotation, dtype=np.float64)
        if R.shape != (3, 3) or not np.all(np.isfinite(R)):
            raise ValueError(f"rotation must be a finite (3, 3) matrix, got shape {R.shape}")
        if np.abs(R.T @ R - np.eye(3)).max() > 1e-8 or np.linalg.det(R) < 0.0:
            raise ValueError("rotation must be orthonormal with determinant +1")
        self.rotation = R
        self.translation = np.zeros(3) if translation is None else vector3(translation, "translation")

    @classmethod
    def identity(cls) -> "Pose":
        return cls()

    @property
    def is_identity(self) -> bool:
        return bool(np.array_equal(self.rotation, np.eye(3)) and not np.any(self.translation))

    def apply(self, points) -> np.ndarray:
        """Reference → world: (k, 3) → (k, 3) [m]."""
        return points3(points) @ self.rotation.T + self.translation

    def apply_inverse(self, points) -> np.ndarray:
        """World → reference: (k, 3) → (k, 3) [m]."""
        return (points3(points) - self.translation) @ self.rotation

    def rotate(self, vectors) -> np.ndarray:
        """Rotate free vectors (normals, velocities) reference → world: (k, 3) → (k, 3)."""
        return points3(vectors, "vectors") @ self.rotation.T

    def rotate_inverse(self, vectors) -> np.ndarray:
        """Rotate free vectors world → reference: (k, 3) → (k, 3)."""
        return points3(vectors, "vectors") @ self.rotation

    def compose(self, inner: "Pose") -> "Pose":
        """The pose x ↦ self(inner(x)) (``inner`` applied first)."""
        return Pose(self.rotation @ inner.rotation, self.rotation @ inner.translation + self.translation)

    def inverse(self) -> "Pose":
        return Pose(self.rotation.T, -self.rotation.T @ self.translation)

    def __repr__(self) -> str:
        return f"Pose(rotation={self.rotation.tolist()}, translation={self.translation.tolist()})"


class Motion(ABC):
    """Kinematic schedule of a rigid obstacle: a pose and a velocity field for every time t [s]."""

    @abstractmethod
    def pose(self, t: float) -> Pose:
        """Pose (reference → world) at time ``t`` [s]."""

    @abstractmethod
    def velocity_at(self, points, t: float) -> np.ndarray:
        """Rigid-body velocity v = ω × (p − c) + v_c [m/s], (k, 3), of world points ``points`` (k, 3) at ``t``."""

    @property
    def is_static(self) -> bool:
        """True when the pose never changes (lets obstacles skip velocity work)."""
        return False


class MotionStatic(Motion):
    """No motion; an optional fixed ``pose`` places (e.g. tilts) the obstacle once and for all."""

    def __init__(self, pose: Pose | None = None):
        if pose is not None and not isinstance(pose, Pose):
            raise ValueError(f"pose must be a Pose or None, got {type(pose).__name__}")
        self._pose = Pose() if pose is None else pose

    def pose(self, t: float) -> Pose:
        return self._pose

    def velocity_at(self, points, t: float) -> np.ndarray:
        return np.zeros_like(points3(points))

    @property
    def is_static(self) -> bool:
        return True


class MotionTranslation(Motion):
    """Constant-velocity translation during [start, start + duration), at rest before and after.

    T(t) = velocity · clip(t − start, 0, duration).

    Parameters
    ----------
    velocity : (3,) array_like
        Translation velocity [m/s].
    start : float
        Start time [s] (default 0).
    duration : float
        Duration [s], > 0; ``inf`` (default) never stops.

    Raises
    ------
    ValueError
        Non-finite ``velocity``/``start``, or ``duration`` ≤ 0.
    """

    def __init__(self, velocity, start: float = 0.0, duration: float = math.inf):
        self.velocity = vector3(velocity, "velocity")
        self.start = finite_scalar(start, "start")
        self.duration = positive_or_inf(duration, "duration")

    def _active(self, t: float) -> bool:
        return self.start <= t < self.start + self.duration

    def pose(self, t: float) -> Pose:
        tau = min(max(float(t) - self.start, 0.0), self.duration)
        return Pose(translation=self.velocity * tau)

    def velocity_at(self, points, t: float) -> np.ndarray:
        p = points3(points)
        v = self.velocity if self._active(float(t)) else np.zeros(3)
        return np.broadcast_to(v, p.shape).copy()


class MotionWaypoints(Motion):
    """Piecewise-linear translation through waypoints (held constant before the first and after the last).

    Parameters
    ----------
    times : (m,) array_like
        Strictly increasing times [s], m ≥ 1.
    translations : (m, 3) array_like
        Translation T [m] at each time.

    Notes
    -----
    The velocity is the slope of the segment [tᵢ, tᵢ₊₁) containing t (right-continuous), zero
    outside [t₀, t_m).

    Raises
    ------
    ValueError
        Mismatched shapes, non-finite values or times that are not strictly increasing.
    """

    def __init__(self, times, translations):
        tt = np.asarray(times, dtype=np.float64).reshape(-1)
        T = np.asarray(translations, dtype=np.float64)
        if tt.size < 1 or not np.all(np.isfinite(tt)) or np.any(np.diff(tt) <= 0.0):
            raise ValueError("times must be a non-empty, finite, strictly increasing sequence")
        if T.shape != (tt.size, 3) or not np.all(np.isfinite(T)):
            raise ValueError(f"translations must be a finite ({tt.size}, 3) array, got shape {T.shape}")
        self.times, self.translations = tt, T

    def pose(self, t: float) -> Pose:
        T = np.array([np.interp(float(t), self.times, self.translations[:, i]) for i in range(3)])
        return Pose(translation=T)

    def velocity_at(self, points, t: float) -> np.ndarray:
        p = points3(points)
        t = float(t)
        v = np.zeros(3)
        if self.times.size > 1 and self.times[0] <= t < self.times[-1]:
            i = int(np.searchsorted(self.times, t, side="right")) - 1
            v = (self.translations[i + 1] - self.translations[i]) / (self.times[i + 1] - self.times[i])
        return np.broadcast_to(v, p.shape).copy()


class MotionRotation(Motion):
    """Rotation about a fixed axis through ``center`` at constant angular velocity, until ``max_angle``.

    θ(t) = ω · clip(t − start, 0, max_angle / |ω|);  x = R(axis, θ) (x₀ − c) + c;
    v(x) = ω axis × (x − c) while rotating, else 0.

    Parameters
    ----------
    axis : (3,) array_like
        Unit rotation axis (default z).
    center : (3,) array_like
        A point c on the axis [m], in reference coordinates (default origin).
    angular_velocity : float
        Signed angular speed ω [rad/s] (right-hand rule about ``axis``).
    start : float
        Start time [s] (default 0).
    max_angle : float
        Total rotation angle |θ| [rad] after which the body stops, > 0; ``inf`` (default) never stops.
        Example: the rotating sphere of thesis §3.6.2 is ``angular_velocity=π, max_angle=π``.

    Raises
    ------
    ValueError
        Non-unit ``axis``, non-finite ``center``/``angular_velocity``/``start``, ``max_angle`` ≤ 0.
    """

    def __init__(self, axis=(0.0, 0.0, 1.0), center=(0.0, 0.0, 0.0), angular_velocity: float = 0.0,
                 start: float = 0.0, max_angle: float = math.inf):
        self.axis = unit_vector3(axis, "axis")
        self.center = vector3(center, "center")
        self.angular_velocity = finite_scalar(angular_velocity, "angular_velocity")
        self.start = finite_scalar(start, "start")
        self.max_angle = positive_or_inf(max_angle, "max_angle")
        w = abs(self.angular_velocity)
        self.duration = math.inf if w == 0.0 else self.max_angle / w

    def angle(self, t: float) -> float:
        """Rotation angle θ(t) [rad]."""
        tau = min(max(float(t) - self.start, 0.0), self.duration)
        return self.angular_velocity * tau

    def pose(self, t: float) -> Pose:
        R = rotation_matrix(self.axis, self.angle(t))
        return Pose(R, self.center - R @ self.center)

    def velocity_at(self, points, t: float) -> np.ndarray:
        p = points3(points)
        t = float(t)
        if not (self.start <= t < self.start + self.duration) or self.angular_velocity == 0.0:
            return np.zeros_like(p)
        # The axis passes through the moved center; for a pure rotation the center is fixed.
        return np.cross(self.angular_velocity * self.axis, p - self.center)


class MotionComposite(Motion):
    """Composition of motions, applied in the given order: pose(t) = Mₙ(t) ∘ … ∘ M₁(t).

    E.g. ``MotionComposite(MotionRotation(center=c, ...), MotionTranslation(v))`` spins a body about
    its own reference center c while carrying it along v.

    The velocity of a world point x follows from differentiating x = Aₙ(y), y = A_{<n}(x₀):
    v(x) = vₙ(x) + Rₙ v_{<n}(Aₙ⁻¹ x), applied recursively.

    Raises
    ------
    ValueError
        If no motions are given or an item is not a ``Motion``.
    """

    def __init__(self, *motions: Motion):
        if len(motions) == 1 and isinstance(motions[0], (list, tuple)):
            motions = tuple(motions[0])
        if not motions or not all(isinstance(m, Motion) for m in motions):
            raise ValueError("motions must be one or more Motion instances")
        self.motions = tuple(motions)

    def pose(self, t: float) -> Pose:
        P = Pose()
        for m in self.motions:
            P = m.pose(t).compose(P)
        return P

    def velocity_at(self, points, t: float) -> np.ndarray:
        y = points3(points)
        v = np.zeros_like(y)
        R_acc = np.eye(3)
        for m in reversed(self.motions):
            v += m.velocity_at(y, t) @ R_acc.T
            P = m.pose(t)
            y = P.apply_inverse(y)
            R_acc = R_acc @ P.rotation
        return v

    @property
    def is_static(self) -> bool:
        return all(m.is_static for m in self.motions)
