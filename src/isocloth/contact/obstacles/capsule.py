"""Capsule obstacle: all points within ``radius`` of a segment (e.g. a stick or a rod)."""

from __future__ import annotations

import numpy as np

from isocloth.contact.obstacles._checks import any_perpendicular, positive, safe_normalize, vector3
from isocloth.contact.obstacles.base import Obstacle

__all__ = ["ObstacleCapsule"]


class ObstacleCapsule(Obstacle):
    """Capsule around the segment [a, b]: d(p) = ‖p − π(p)‖ − radius (exact).

    π(p) = a + s (b − a), s = clip(⟨p − a, b − a⟩ / ‖b − a‖², 0, 1), is the closest segment point;
    ∇d = (p − π)/‖p − π‖. On the segment itself the normal is a fixed unit vector perpendicular to
    b − a (+z for a degenerate segment a = b, which is a sphere).

    Parameters
    ----------
    a, b : (3,) array_like
        Segment end points [m] (reference coordinates).
    radius : float
        Radius [m], > 0.
    **kwargs
        ``mu``, ``thickness``, ``motion``, ``name`` (see :class:`Obstacle`).

    Raises
    ------
    ValueError
        ``radius`` ≤ 0 or not finite; ``a``/``b`` not finite 3-vectors.
    """

    kind = "capsule"

    def __init__(self, a=(0.0, 0.0, 0.0), b=(1.0, 0.0, 0.0), radius: float = 0.1, **kwargs):
        super().__init__(**kwargs)
        self.a = vector3(a, "a")
        self.b = vector3(b, "b")
        self.radius = positive(radius, "radius")
        ab = self.b - self.a
        L2 = float(ab @ ab)
        self._ab, self._L2 = ab, L2
        self._perp = any_perpendicular(ab / np.sqrt(L2)) if L2 > 0.0 else np.array([0.0, 0.0, 1.0])

    def _axis_local(self):
        """The segment [a, b] and the radius: the capsule is the set within it."""
        return self.a, self.b, self.radius

    def _segment_points(self, q: np.ndarray) -> np.ndarray:
        if self._L2 == 0.0:
            return np.broadcast_to(self.a, q.shape)
        s = np.clip((q - self.a) @ self._ab / self._L2, 0.0, 1.0)
        return self.a + s[:, None] * self._ab

    def _sdf_local(self, q: np.ndarray) -> np.ndarray:
        return np.linalg.norm(q - self._segment_points(q), axis=1) - self.radius

    def _grad_local(self, q: np.ndarray) -> np.ndarray:
        return safe_normalize(q - self._segment_points(q), self._perp)

    def _closest_local(self, q: np.ndarray) -> np.ndarray:
        c = self._segment_points(q)
        return c + self.radius * safe_normalize(q - c, self._perp)
