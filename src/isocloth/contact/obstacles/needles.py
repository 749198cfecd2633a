"""Needle (egg-crate) obstacle of thesis §3.6.3, eq. 3.16–3.17 (eq. 14–15 of the contact issue)."""

from __future__ import annotations

import math

import numpy as np

from isocloth.contact.obstacles._checks import finite_scalar, points3, positive, vector3
from isocloth.contact.obstacles.base import Obstacle

__all__ = ["ObstacleNeedles"]


def _interval(value, name: str) -> tuple[float, float]:
    try:
        lo, hi = value
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (lo, hi), got {value!r}") from None
    lo, hi = finite_scalar(lo, name), finite_scalar(hi, name)
    if not lo < hi:
        raise ValueError(f"{name} must satisfy lo < hi, got ({lo}, {hi})")
    return lo, hi


class ObstacleNeedles(Obstacle):
    """Height-field needle surface z = f(x, y) = sin(c₁x) sin(c₁y) / (c₁c₂) (thesis eq. 3.16).

    The thesis writes the constraint as H = c₁c₂ z − sin(c₁x) sin(c₁y) ≥ 0. Here it is divided by
    c₁c₂ > 0 (same zero set and normal direction, value in metres):

        H(p) = (z − o_z) − f(x − o_x, y − o_y).

    **This is a height-field function, not a true distance:** H is the vertical gap to the
    surface, which over-estimates the Euclidean distance on the steep flanks (slopes up to 1/c₂).
    Its zero set, sign and normal direction are exact, which is all the linearised Signorini
    constraint needs. ``thickness`` therefore shifts the surface vertically (z ≥ f + τ).
    ``gradient`` returns the *normalised* ∇H = (−f_x, −f_y, 1)/‖·‖, which is not ∇H itself;
    contact rows (:meth:`evaluate_contact`) use the first-order distance H/‖∇H‖ with it.

    The peaks (eq. 3.17) are cusps the node-wise constraint cannot see between nodes; they are
    offered by :meth:`peaks` as point obstacles for node–face constraints against cloth triangles.

    Parameters
    ----------
    c1 : float
        Spatial frequency [1/m], > 0 (thesis: 20, i.e. a period of 2π/20 ≈ 0.314 m).
    c2 : float
        Inverse amplitude factor [1], > 0 (thesis: 0.075); peak height 1/(c₁c₂) ≈ 0.667 m.
    origin : (3,) array_like
        Reference-frame position of the field's origin [m] (default (0, 0, 0)).
    xlim, ylim : (float, float)
        Default reference-frame extent [m] in which :meth:`peaks` lists peaks (default (−1, 1)).
        The height field itself is unbounded.
    **kwargs
        ``mu``, ``thickness``, ``motion``, ``name`` (see :class:`Obstacle`).

    Raises
    ------
    ValueError
        ``c1`` or ``c2`` ≤ 0; ``origin`` not finite; ``xlim``/``ylim`` not increasing pairs.
    """

    kind = "needles"

    def __init__(self, c1: float = 20.0, c2: float = 0.075, origin=(0.0, 0.0, 0.0),
                 xlim=(-1.0, 1.0), ylim=(-1.0, 1.0), **kwargs):
        super().__init__(**kwargs)
        self.c1 = positive(c1, "c1")
        self.c2 = positive(c2, "c2")
        self.origin = vector3(origin, "origin")
        self.xlim = _interval(xlim, "xlim")
        self.ylim = _interval(ylim, "ylim")

    @property
    def peak_height(self) -> float:
        """Height 1/(c₁c₂) [m] of the peaks above ``origin``."""
        return 1.0 / (self.c1 * self.c2)

    def height(self, xy) -> np.ndarray:
        """Surface height o_z + f(x − o_x, y − o_y) [m], shape (k,), at reference points xy (k, 2)."""
        xy = np.asarray(xy, dtype=np.float64)
        if xy.ndim != 2 or xy.shape[1] != 2:
            raise ValueError(f"xy must have shape (k, 2), got {xy.shape}")
        u = self.c1 * (xy - self.origin[:2])
        return self.origin[2] + np.sin(u[:, 0]) * np.sin(u[:, 1]) * self.peak_height

    def _sdf_local(self, q: np.ndarray) -> np.ndarray:
        return q[:, 2] - self.height(q[:, :2])

    def _grad_local(self, q: np.ndarray) -> np.ndarray:
        u = self.c1 * (q[:, :2] - self.origin[:2])
        sx, sy, cx, cy = np.sin(u[:, 0]), np.sin(u[:, 1]), np.cos(u[:, 0]), np.cos(u[:, 1])
        g = np.empty_like(q)
        g[:, 0] = -cx * sy / self.c2  # −∂f/∂x
        g[:, 1] = -sx * cy / self.c2  # −∂f/∂y
        g[:, 2] = 1.0
        return g / np.linalg.norm(g, axis=1)[:, None]

    def _contact_slope(self, q: np.ndarray) -> np.ndarray:
        """‖∇H‖ = ‖(−f_x, −f_y, 1)‖ (contact rows use the first-order distance H/‖∇H‖)."""
        u = self.c1 * (q[:, :2] - self.origin[:2])
        sx, sy, cx, cy = np.sin(u[:, 0]), np.sin(u[:, 1]), np.cos(u[:, 0]), np.cos(u[:, 1])
        return np.sqrt(1.0 + (cx * sy / self.c2) ** 2 + (sx * cy / self.c2) ** 2)

    def _closest_local(self, q: np.ndarray) -> np.ndarray:
        """Vertical projection (x, y, f(x, y)): the height-field foot point, not the Euclidean closest point."""
        c = q.copy()
        c[:, 2] = self.height(q[:, :2])
        return c

    def peaks(self, t: float = 0.0, xlim=None, ylim=None) -> np.ndarray:
        """Peak (cusp) points of thesis eq. 3.17 inside the given reference-frame extent, in world coordinates.

        The maxima of sin(c₁x) sin(c₁y) (= 1) are
        (x, y) = ((2πm + π/2)/c₁, (2πn + π/2)/c₁) and ((2πm − π/2)/c₁, (2πn − π/2)/c₁), m, n ∈ ℤ,
        at z = 1/(c₁c₂), all relative to ``origin``. (Eq. 3.17 writes "±" for both coordinates;
        the signs must agree, since mixed signs give the minima z = −1/(c₁c₂).)

        Parameters
        ----------
        t : float
            Time [s] at which the pose is applied.
        xlim, ylim : (float, float), optional
            Reference-frame extent [m] (absolute, like ``origin``); defaults to the constructor's.

        Returns
        -------
        (k, 3) float64
            Geometric tips [m] (the contact ``thickness`` is not added: apply it in the node–face
            constraint, ⟨q − π, ν⟩ ≥ τ₀). Sorted by (sign, y, x) for reproducibility.
        """
        xlim = self.xlim if xlim is None else _interval(xlim, "xlim")
        ylim = self.ylim if ylim is None else _interval(ylim, "ylim")
        blocks = []
        for s in (1.0, -1.0):
            xs = self._lattice(xlim, self.origin[0], s)
            ys = self._lattice(ylim, self.origin[1], s)
            if xs.size and ys.size:
                X, Y = np.meshgrid(xs, ys)
                blocks.append(np.column_stack([X.ravel(), Y.ravel(),
                                               np.full(X.size, self.origin[2] + self.peak_height)]))
        pts = np.concatenate(blocks) if blocks else np.zeros((0, 3))
        pose = self.motion.pose(t)
        return pts if pose.is_identity or len(pts) == 0 else pose.apply(pts)

    def _lattice(self, lim: tuple[float, float], o: float, s: float) -> np.ndarray:
        """Values o + (2πm + sπ/2)/c₁ inside [lo, hi] (closed, with a 1e-12 relative tolerance)."""
        lo, hi = lim
        tol = 1e-12 * max(1.0, abs(lo), abs(hi))
        period = 2.0 * math.pi
        m_lo = math.ceil((self.c1 * (lo - o - tol) - s * math.pi / 2) / period)
        m_hi = math.floor((self.c1 * (hi - o + tol) - s * math.pi / 2) / period)
        m = np.arange(m_lo, m_hi + 1, dtype=np.float64)
        return o + (period * m + s * math.pi / 2) / self.c1

    def peak_velocities(self, t: float = 0.0, xlim=None, ylim=None) -> np.ndarray:
        """Velocities [m/s], shape (k, 3), of the points returned by :meth:`peaks` (same order)."""
        p = self.peaks(t, xlim, ylim)
        return np.zeros_like(p) if self.motion.is_static else self.motion.velocity_at(points3(p), t)
