"""Infinite plane obstacle (half-space); the default is the floor z = 0."""

from __future__ import annotations

import numpy as np

from isocloth.contact.obstacles._checks import unit_vector3, vector3
from isocloth.contact.obstacles.base import Obstacle

__all__ = ["ObstaclePlane"]


class ObstaclePlane(Obstacle):
    """Half-space {x : ⟨x − point, normal⟩ ≤ 0}; the free side is where ``normal`` points.

    d(p) = ⟨p − point, normal⟩ (exact signed distance), ∇d = normal.

    Parameters
    ----------
    point : (3,) array_like
        Any point on the plane [m] (default origin).
    normal : (3,) array_like
        Unit outward normal (default +z, so the default obstacle is the floor z = 0).
    **kwargs
        ``mu``, ``thickness``, ``motion``, ``name`` (see :class:`Obstacle`).

    Raises
    ------
    ValueError
        ``normal`` zero or not of unit length (|‖n‖ − 1| > 1e-6); ``point`` not a finite 3-vector.
    """

    kind = "plane"

    def __init__(self, point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), **kwargs):
        super().__init__(**kwargs)
        self.point = vector3(point, "point")
        self.normal = unit_vector3(normal, "normal")

    def _sdf_local(self, q: np.ndarray) -> np.ndarray:
        return (q - self.point) @ self.normal

    def _grad_local(self, q: np.ndarray) -> np.ndarray:
        return np.broadcast_to(self.normal, q.shape).copy()
