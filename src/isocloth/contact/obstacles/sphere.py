"""Sphere obstacle (e.g. the rotating sphere of thesis §3.6.2)."""

from __future__ import annotations

import numpy as np

from isocloth.contact.obstacles._checks import positive, safe_normalize, vector3
from isocloth.contact.obstacles.base import Obstacle

__all__ = ["ObstacleSphere"]

_UP = np.array([0.0, 0.0, 1.0])


class ObstacleSphere(Obstacle):
    """Solid ball: d(p) = ‖p − center‖ − radius (exact), ∇d = (p − c)/‖p − c‖ (+z at the centre).

    Parameters
    ----------
    center : (3,) array_like
        Centre [m] in reference coordinates (default origin).
    radius : float
        Radius [m], > 0.
    **kwargs
        ``mu``, ``thickness``, ``motion``, ``name`` (see :class:`Obstacle`). For a sphere spinning in
        place use ``MotionRotation(center=center, ...)``.

    Raises
    ------
    ValueError
        ``radius`` ≤ 0 or not finite; ``center`` not a finite 3-vector.
    """

    kind = "sphere"

    def __init__(self, center=(0.0, 0.0, 0.0), radius: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self.center = vector3(center, "center")
        self.radius = positive(radius, "radius")

    def _sdf_local(self, q: np.ndarray) -> np.ndarray:
        return np.linalg.norm(q - self.center, axis=1) - self.radius

    def _axis_local(self):
        """A ball is a bar of zero length: its centre and radius (a ball smaller than a cloth face
        can pass through it between the nodes, :meth:`axis_feature`)."""
        return self.center, self.center, self.radius

    def _grad_local(self, q: np.ndarray) -> np.ndarray:
        return safe_normalize(q - self.center, _UP)

    def _closest_local(self, q: np.ndarray) -> np.ndarray:
        return self.center + self.radius * self._grad_local(q)
