"""Axis-aligned (in reference coordinates) box obstacle, e.g. a table."""

from __future__ import annotations

import numpy as np

from isocloth.contact.obstacles._checks import vector3
from isocloth.contact.obstacles.base import Obstacle

__all__ = ["ObstacleBox"]


class ObstacleBox(Obstacle):
    """Solid box |x − center|ᵢ ≤ hᵢ with the exact signed distance.

    With q = |p − c| − h (component-wise):
    d(p) = ‖max(q, 0)‖ + min(maxᵢ qᵢ, 0).

    Normal: outside, sign(p − c) ⊙ max(q, 0)/‖max(q, 0)‖ (the direction to the closest face, edge
    or corner); inside (and on the surface), sign(p − c)ᵢ eᵢ for the face i of largest qᵢ (the first
    such i on ties, e.g. x before y before z); sign(0) is taken as +1. Orient or tilt the box with
    ``MotionStatic(Pose(rotation, translation))``.

    Parameters
    ----------
    center : (3,) array_like
        Box centre [m] (default origin).
    half_extents : (3,) array_like
        Half side lengths (hx, hy, hz) [m], each > 0. A 1 m × 0.6 m table top 2 cm thick at
        height 0.75 m: ``ObstacleBox((0, 0, 0.74), (0.5, 0.3, 0.01))``.
    **kwargs
        ``mu``, ``thickness``, ``motion``, ``name`` (see :class:`Obstacle`).

    Raises
    ------
    ValueError
        Any half extent ≤ 0 or not finite; ``center`` not a finite 3-vector.
    """

    kind = "box"

    def __init__(self, center=(0.0, 0.0, 0.0), half_extents=(0.5, 0.5, 0.5), **kwargs):
        super().__init__(**kwargs)
        self.center = vector3(center, "center")
        h = vector3(half_extents, "half_extents")
        if np.any(h <= 0.0):
            raise ValueError(f"half_extents must all be > 0, got {h.tolist()}")
        self.half_extents = h

    def _parts(self, q: np.ndarray):
        r = q - self.center
        sgn = np.where(r < 0.0, -1.0, 1.0)
        d = np.abs(r) - self.half_extents
        return r, sgn, d

    def _sdf_local(self, q: np.ndarray) -> np.ndarray:
        _, _, d = self._parts(q)
        return np.linalg.norm(np.maximum(d, 0.0), axis=1) + np.minimum(d.max(axis=1), 0.0)

    def _grad_local(self, q: np.ndarray) -> np.ndarray:
        _, sgn, d = self._parts(q)
        pos = np.maximum(d, 0.0)
        n_out = np.linalg.norm(pos, axis=1)
        outside = n_out > 0.0
        g = np.zeros_like(q)
        g[outside] = sgn[outside] * pos[outside] / n_out[outside, None]
        inside = ~outside
        i = np.argmax(d[inside], axis=1)
        rows = np.flatnonzero(inside)
        g[rows, i] = sgn[rows, i]
        return g

    def _corners_local(self):
        """The 8 corners (vertex k: bit i of k set for +h_i) and the 12 edges joining corners that
        differ in one bit."""
        bits = (np.arange(8)[:, None] >> np.arange(3)) & 1
        vertices = self.center + (2.0 * bits - 1.0) * self.half_extents
        segments = np.array([(k, k | (1 << i)) for k in range(8) for i in range(3) if not k >> i & 1])
        return vertices, segments, np.arange(8)

    def _closest_local(self, q: np.ndarray) -> np.ndarray:
        r, sgn, d = self._parts(q)
        c = self.center + np.clip(r, -self.half_extents, self.half_extents)  # exact outside
        inside = d.max(axis=1) <= 0.0
        if np.any(inside):  # push to the face of largest qᵢ (the nearest face)
            rows = np.flatnonzero(inside)
            i = np.argmax(d[inside], axis=1)
            c[rows, i] = self.center[i] + sgn[rows, i] * self.half_extents[i]
        return c
