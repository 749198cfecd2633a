"""Finite solid cylinder with flat caps (e.g. the frictional cylinder of thesis §3.6.1)."""

from __future__ import annotations

import numpy as np

from isocloth.contact.obstacles._checks import any_perpendicular, positive, unit_vector3, vector3
from isocloth.contact.obstacles.base import RIM_SEGMENTS, Obstacle, rim_polygon

__all__ = ["ObstacleCylinder"]


class ObstacleCylinder(Obstacle):
    """Finite cylinder {ρ ≤ R, |h| ≤ H} with the exact signed distance, caps and rims included.

    With h = ⟨p − c, a⟩ (axial coordinate), ρ = ‖(p − c) − h a‖ (radial distance) and
    w = (ρ − R, |h| − H): d(p) = ‖max(w, 0)‖ + min(max(w₀, w₁), 0).

    Normal: in the (ρ, h) half-plane, max(w, 0)/‖max(w, 0)‖ outside (lateral side, cap or rim);
    inside, the radial direction when w₀ ≥ w₁ (the side is at least as close) else ±a. Radial
    direction e_ρ = (p − c − h a)/ρ, replaced on the axis by a fixed vector perpendicular to a;
    the cap sign is +a for h ≥ 0.

    Parameters
    ----------
    center : (3,) array_like
        Centre of the axis segment [m] (default origin).
    axis : (3,) array_like
        Unit axis direction (default +z; a lying cylinder: (1, 0, 0)).
    radius : float
        Radius R [m], > 0.
    half_height : float
        Half length H [m] along the axis, > 0.
    **kwargs
        ``mu``, ``thickness``, ``motion``, ``name`` (see :class:`Obstacle`).

    Raises
    ------
    ValueError
        ``radius`` or ``half_height`` ≤ 0; ``axis`` zero or not unit; ``center`` not finite.
    """

    kind = "cylinder"

    def __init__(self, center=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), radius: float = 0.1,
                 half_height: float = 0.5, **kwargs):
        super().__init__(**kwargs)
        self.center = vector3(center, "center")
        self.axis = unit_vector3(axis, "axis")
        self.radius = positive(radius, "radius")
        self.half_height = positive(half_height, "half_height")
        self._perp = any_perpendicular(self.axis)

    def _corners_local(self):
        """The two rims (inscribed polygons); no points."""
        ends = [rim_polygon(self.center + s * self.half_height * self.axis, self.axis, self._perp, self.radius,
                            i * RIM_SEGMENTS) for i, s in enumerate((-1.0, 1.0))]
        return (np.vstack([v for v, _ in ends]), np.vstack([e for _, e in ends]), np.zeros(0, dtype=np.int64))

    def _axis_local(self):
        """The axis segment c ± H a and R: the cylinder lies within R of it (its rims at exactly R)."""
        return self.center - self.half_height * self.axis, self.center + self.half_height * self.axis, self.radius

    def _frame(self, q: np.ndarray):
        r = q - self.center
        h = r @ self.axis
        radial = r - h[:, None] * self.axis
        rho = np.linalg.norm(radial, axis=1)
        e_rho = np.empty_like(q)
        on_axis = rho <= 1e-300
        e_rho[~on_axis] = radial[~on_axis] / rho[~on_axis, None]
        e_rho[on_axis] = self._perp
        s_h = np.where(h < 0.0, -1.0, 1.0)
        w = np.stack([rho - self.radius, np.abs(h) - self.half_height], axis=1)
        return h, rho, e_rho, s_h, w

    def _sdf_local(self, q: np.ndarray) -> np.ndarray:
        *_, w = self._frame(q)
        return np.linalg.norm(np.maximum(w, 0.0), axis=1) + np.minimum(w.max(axis=1), 0.0)

    def _grad_local(self, q: np.ndarray) -> np.ndarray:
        _, _, e_rho, s_h, w = self._frame(q)
        pos = np.maximum(w, 0.0)
        n = np.linalg.norm(pos, axis=1)
        outside = n > 0.0
        g2 = np.zeros_like(w)  # components along (e_rho, s_h a)
        g2[outside] = pos[outside] / n[outside, None]
        side = ~outside & (w[:, 0] >= w[:, 1])
        cap = ~outside & ~side
        g2[side, 0] = 1.0
        g2[cap, 1] = 1.0
        return g2[:, :1] * e_rho + (g2[:, 1] * s_h)[:, None] * self.axis

    def _closest_local(self, q: np.ndarray) -> np.ndarray:
        h, rho, e_rho, s_h, w = self._frame(q)
        rho_c = np.minimum(rho, self.radius)
        h_c = np.clip(h, -self.half_height, self.half_height)
        inside = w.max(axis=1) <= 0.0
        side = inside & (w[:, 0] >= w[:, 1])
        cap = inside & ~side
        rho_c[side] = self.radius
        h_c[cap] = s_h[cap] * self.half_height
        return self.center + rho_c[:, None] * e_rho + h_c[:, None] * self.axis
