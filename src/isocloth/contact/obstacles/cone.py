"""Solid right circular cone (the conical obstacle of Li et al. 2018, Fig. 9)."""

from __future__ import annotations

import numpy as np

from isocloth.contact.obstacles._checks import any_perpendicular, positive, unit_vector3, vector3
from isocloth.contact.obstacles.base import Obstacle, rim_polygon

__all__ = ["ObstacleCone"]


class ObstacleCone(Obstacle):
    """Cone of base radius R and height H, its apex at ``apex``, its axis ``axis`` (from the base's
    centre to the apex), with the exact signed distance, base and rim included.

    In the half-plane of a point, with h its height above the base along the axis and ρ its distance
    from the axis, the cone is the triangle {ρ ≥ 0, h ≥ 0, ρ/R + h/H ≤ 1}; the distance is that to its
    base segment (h = 0, ρ ≤ R) or its slant segment from (R, 0) to (0, H), whichever is nearer,
    negative inside. The normal is the direction to (outside) or from (inside) the nearest point in
    the half-plane, lifted to 3-D with the radial direction e_ρ (a fixed perpendicular on the
    axis); on the surface the segment's outward normal.

    Parameters
    ----------
    apex : (3,) array_like
        Apex [m] in reference coordinates.
    axis : (3,) array_like
        Unit direction from the base's centre to the apex (default +z: standing on its base).
    radius : float
        Base radius R [m], > 0.
    height : float
        Height H [m], > 0.
    **kwargs
        ``mu``, ``thickness``, ``motion``, ``name`` (see :class:`Obstacle`).

    Raises
    ------
    ValueError
        ``radius`` or ``height`` ≤ 0 or not finite; ``axis`` zero or not unit; ``apex`` not finite.
    """

    kind = "cone"

    def __init__(self, apex=(0.0, 0.0, 1.0), axis=(0.0, 0.0, 1.0), radius: float = 0.5, height: float = 1.0,
                 **kwargs):
        super().__init__(**kwargs)
        self.apex = vector3(apex, "apex")
        self.axis = unit_vector3(axis, "axis")
        self.radius = positive(radius, "radius")
        self.height = positive(height, "height")
        self._perp = any_perpendicular(self.axis)
        self._slant_normal = np.array([self.height, self.radius]) / np.hypot(self.height, self.radius)

    def _corners_local(self):
        """The apex (point 0) and the base's rim (an inscribed polygon)."""
        rim, segments = rim_polygon(self.apex - self.height * self.axis, self.axis, self._perp, self.radius, 1)
        return np.vstack([self.apex, rim]), segments, np.zeros(1, dtype=np.int64)

    def _half_plane(self, q: np.ndarray):
        """(ρ, h) (k, 2) of reference points and their radial directions e_ρ (k, 3)."""
        r = q - (self.apex - self.height * self.axis)
        h = r @ self.axis
        radial = r - h[:, None] * self.axis
        rho = np.linalg.norm(radial, axis=1)
        e_rho = np.tile(self._perp, (len(q), 1))
        off = rho > 1e-300
        e_rho[off] = radial[off] / rho[off, None]
        return np.stack([rho, h], axis=1), e_rho

    def _nearest(self, p: np.ndarray):
        """Nearest boundary points (k, 2) in the half-plane, their distances (k,), the segments' outward
        normals there (k, 2) and whether p is inside (k,)."""
        R, H = self.radius, self.height
        best, dist, normal = None, None, None
        for a, b, n in (((0.0, 0.0), (R, 0.0), (0.0, -1.0)), ((R, 0.0), (0.0, H), tuple(self._slant_normal))):
            a, b = np.array(a), np.array(b)
            s = np.clip((p - a) @ (b - a) / ((b - a) @ (b - a)), 0.0, 1.0)
            c = a + s[:, None] * (b - a)
            d = np.linalg.norm(p - c, axis=1)
            if best is None:
                best, dist, normal = c, d, np.tile(n, (len(p), 1))
            else:
                closer = d < dist
                best[closer], dist[closer], normal[closer] = c[closer], d[closer], n
        inside = (p[:, 1] >= 0.0) & (p[:, 0] / R + p[:, 1] / H <= 1.0)
        return best, dist, normal, inside

    def _sdf_local(self, q: np.ndarray) -> np.ndarray:
        p, _ = self._half_plane(q)
        _, dist, _, inside = self._nearest(p)
        return np.where(inside, -dist, dist)

    def _grad_local(self, q: np.ndarray) -> np.ndarray:
        p, e_rho = self._half_plane(q)
        c, dist, g2, inside = self._nearest(p)
        away = dist > 1e-14 * (self.radius + self.height)
        g2[away] = np.where(inside[away, None], c[away] - p[away], p[away] - c[away]) / dist[away, None]
        return g2[:, :1] * e_rho + g2[:, 1:] * self.axis

    def _closest_local(self, q: np.ndarray) -> np.ndarray:
        p, e_rho = self._half_plane(q)
        c, *_ = self._nearest(p)
        return self.apex - self.height * self.axis + c[:, :1] * e_rho + c[:, 1:] * self.axis
