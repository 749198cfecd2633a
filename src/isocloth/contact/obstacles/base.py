"""Abstract rigid obstacle with a signed-distance-like constraint function (thesis §3.2, eq. 3.1).

An obstacle defines H(p, t) ≥ 0 (Signorini condition) for every cloth node p, with outward normal
∇H. Subclasses implement the geometry once, in reference (local) coordinates, through
``_sdf_local`` and ``_grad_local``; this base class applies the time-dependent pose of the
obstacle's :class:`~isocloth.contact.obstacles.motion.Motion`, subtracts the contact offset
(``thickness``) and provides the obstacle's surface velocity for friction (thesis §3.6.2:
V = φ̇ − ⟨φ̇, n⟩ n − v_obstacle).

All queries are vectorised over (k, 3) float64 world points [m] at time t [s].
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from isocloth.contact.obstacles._checks import nonnegative, points3
from isocloth.contact.obstacles.motion import (
    Motion,
    MotionComposite,
    MotionRotation,
    MotionStatic,
    MotionTranslation,
    MotionWaypoints,
    Pose,
    rotation_matrix,
)

__all__ = [
    "FEATURE_MIN_RADIUS",
    "RIM_SEGMENTS",
    "Obstacle",
    "Pose",
    "rotation_matrix",
    "Motion",
    "MotionStatic",
    "MotionTranslation",
    "MotionWaypoints",
    "MotionRotation",
    "MotionComposite",
]

FEATURE_MIN_RADIUS = 1e-4
"""Smallest distance [m] kept between the cloth and an obstacle's corners and edges
(:meth:`Obstacle.features`) when the obstacle's thickness is smaller."""

RIM_SEGMENTS = 64
"""Segments of the polygon inscribed in a circular rim (cone, cylinder) as its edge: the chords lie inside the
rim by R (1 − cos(π/64)) ≈ 1.2e-3 R."""


def rim_polygon(center, axis, perp, radius: float, first: int = 0):
    """Vertices (RIM_SEGMENTS, 3) of the polygon inscribed in the circle of ``radius`` [m] about ``center`` in
    the plane normal to the unit ``axis`` (``perp`` a unit vector in that plane), and its segments
    (RIM_SEGMENTS, 2) int64 numbered from ``first``."""
    phi = 2.0 * np.pi * np.arange(RIM_SEGMENTS) / RIM_SEGMENTS
    other = np.cross(axis, perp)
    vertices = center + radius * (np.cos(phi)[:, None] * perp + np.sin(phi)[:, None] * other)
    k = np.arange(RIM_SEGMENTS)
    return vertices, first + np.column_stack([k, (k + 1) % RIM_SEGMENTS])


class Obstacle(ABC):
    """Rigid, kinematically moving obstacle.

    Parameters (keyword-only, shared by all obstacles)
    ----------
    mu : float
        Coulomb-like friction coefficient μ ≥ 0 of this obstacle (thesis eq. 3.2); default 0.
    thickness : float
        Contact offset τ ≥ 0 [m]; the constraint surface is the obstacle surface inflated by τ.
    motion : Motion, optional
        Kinematic schedule (pose and velocity field); static at the reference pose by default.
    name : str, optional
        Label for scenes and logs; defaults to the class' ``kind``.

    Raises
    ------
    ValueError
        ``mu`` or ``thickness`` negative or not finite, ``motion`` not a Motion, ``name`` not a str.

    Notes
    -----
    Subclasses implement, in reference coordinates q (k, 3):

    * ``_sdf_local(q) -> (k,)``: signed distance without the offset (positive outside);
    * ``_grad_local(q) -> (k, 3)``: its unit outward gradient, with a consistent choice at kinks
      and on the medial axis;
    * optionally ``_eval_local`` (both at once, when they share work) and ``_closest_local``
      (closest surface point; default q − φ(q) ∇φ(q), exact for true distance functions).
    """

    kind = "obstacle"

    def __init__(self, *, mu: float = 0.0, thickness: float = 0.0, motion: Motion | None = None,
                 name: str | None = None):
        self.mu = mu
        self.thickness = thickness
        if motion is None:
            motion = MotionStatic()
        if not isinstance(motion, Motion):
            raise ValueError(f"motion must be a Motion instance, got {type(motion).__name__}")
        self.motion = motion
        if name is not None and not isinstance(name, str):
            raise ValueError(f"name must be a str, got {type(name).__name__}")
        self.name = self.kind if name is None else name

    # -- validated parameters -------------------------------------------------------------
    @property
    def mu(self) -> float:
        """Friction coefficient μ ≥ 0."""
        return self._mu

    @mu.setter
    def mu(self, value) -> None:
        self._mu = nonnegative(value, "mu")

    @property
    def thickness(self) -> float:
        """Contact offset τ ≥ 0 [m] subtracted from the signed distance."""
        return self._thickness

    @thickness.setter
    def thickness(self, value) -> None:
        self._thickness = nonnegative(value, "thickness")

    # -- geometry in reference coordinates (subclasses) -----------------------------------
    @abstractmethod
    def _sdf_local(self, q: np.ndarray) -> np.ndarray:
        """Signed distance (k,) [m] of reference points q (k, 3), positive outside, no offset."""

    @abstractmethod
    def _grad_local(self, q: np.ndarray) -> np.ndarray:
        """Unit outward normal (k, 3) at reference points q (k, 3)."""

    def _eval_local(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._sdf_local(q), self._grad_local(q)

    def _closest_local(self, q: np.ndarray) -> np.ndarray:
        sd, g = self._eval_local(q)
        return q - sd[:, None] * g

    def _corners_local(self):
        """Sharp features in reference coordinates: (vertices (k, 3), segments (m, 2) int64 — the
        edges —, points (p,) int64 — the corners), or None for a smooth obstacle."""
        return None

    def features(self):
        """The obstacle's sharp corners and edges as a thin obstacle moving with it, or None.

        Contact at the cloth's nodes (the signed distance) keeps every node out, but a corner or an
        edge of the obstacle can pass between the nodes, through a face or across an edge of the
        cloth. The corners are checked against the cloth's faces and the edges against its edges by
        the continuous detection of thin obstacles (seed 000 §6.3; Li et al. 2018 §5.2 detects the
        same vertex–face and edge–edge pairs). Box: its 8 corners and 12 edges; cone: its apex and its
        base's rim; cylinder: its two rims (rims as inscribed polygons, :data:`RIM_SEGMENTS`); mesh: its
        sharp convex edges and corners. A bar thinner than a cloth edge also needs its axis
        (:meth:`axis_feature`).

        Returns
        -------
        :class:`~isocloth.contact.obstacles.codim.ObstacleCodim` or None, with this obstacle's
        motion and μ and radius max(thickness, :data:`FEATURE_MIN_RADIUS`) [m].
        """
        local = self._corners_local()
        if local is None:
            return None
        from isocloth.contact.obstacles.codim import ObstacleCodim

        vertices, segments, points = local
        return ObstacleCodim(vertices, segments, points, radius=max(self._thickness, FEATURE_MIN_RADIUS),
                             mu=self._mu, motion=self.motion, name=f"{self.name} (corners and edges)")

    def _axis_local(self):
        """The axis of a bar in reference coordinates: (a (3,), b (3,), R [m]) such that the obstacle lies
        within R of the segment [a, b] (a cylinder, a capsule; a sphere with a = b), or None for obstacles
        that are not bars."""
        return None

    def axis_feature(self, longest_edge: float):
        """The axis of a bar (cylinder, capsule; the centre of a sphere) as a thin obstacle moving with it, when the bar is thin
        enough to pass between the nodes of a cloth whose longest edge is ``longest_edge``, else None.

        Contact at the cloth's nodes (the signed distance, and :meth:`swept_passage` for fast nodes) stops
        a bar only where a node meets it. Seen along the bar, its contact surface is a disc of diameter
        D = 2ρ, ρ = R + thickness, and a face moving across it sweeps a strip of width D: the face passes
        the bar with no node meeting it only if its nodes lie on both sides of the strip, so that a side
        of the face crosses the strip and is longer than D. When D is smaller than the cloth's longest edge
        (a 2 mm bar between two rows of a sheet falling fast), the axis [a, b] becomes a
        segment of radius ρ checked against the cloth's edges (edge–edge) and its two ends against the
        cloth's faces (node–face) by the continuous detection of thin obstacles (seed 000 §6.3): the
        capsule of radius ρ around the axis, which contains the bar inflated by its thickness. For a
        capsule it is the contact surface itself; for a cylinder its rounded ends reach up to ρ beyond the
        flat ends (on the axis), less than half a cloth edge. Thicker bars are left to their nodal contacts:
        edge–edge rows there would push out the chords of a cloth draped over the bar, which the nodal
        model lets cut slightly into a curved surface, and change its results.

        Parameters
        ----------
        longest_edge : float [m]
            The cloth's longest edge ℓ (``ClothModel.longest_edge``: a side of a face, at the start; an
            elastic cloth stretched beyond it is not accounted for).

        Returns
        -------
        :class:`~isocloth.contact.obstacles.codim.ObstacleCodim` (2 vertices, 1 segment, 2 points; a
        capsule of zero length: 1 point) with this obstacle's motion and μ and radius ρ [m], when
        2ρ < ``longest_edge``; None otherwise and for obstacles that are not bars.
        """
        local = self._axis_local()
        if local is None:
            return None
        a, b, r = local
        rho = r + self._thickness
        if not 2.0 * rho < longest_edge:
            return None
        from isocloth.contact.obstacles.codim import ObstacleCodim

        if np.array_equal(a, b):  # a sphere or a capsule of zero length: its centre against the faces
            return ObstacleCodim(np.array([a], dtype=np.float64), None, [0], radius=rho, mu=self._mu,
                                 motion=self.motion, name=f"{self.name} (axis)")
        return ObstacleCodim(np.array([a, b], dtype=np.float64), [[0, 1]], radius=rho, mu=self._mu,
                             motion=self.motion, name=f"{self.name} (axis)")

    # -- world-frame queries ---------------------------------------------------------------
    def _local(self, points, t: float):
        """(pose at t, reference coordinates (k, 3) of the world points)."""
        p = points3(points)
        pose = self.motion.pose(t)
        return pose, (p if pose.is_identity else pose.apply_inverse(p))

    def to_local(self, points, t: float = 0.0) -> np.ndarray:
        """World points (k, 3) → reference coordinates (k, 3) at time ``t``."""
        return self._local(points, t)[1]

    def signed_distance(self, points, t: float = 0.0) -> np.ndarray:
        """Constraint value H(p, t) = d(p, t) − thickness [m], shape (k,).

        ``d`` is the signed distance to the obstacle surface (positive outside; for
        :class:`ObstacleNeedles` a height-field function, see there). H ≥ 0 is the
        Signorini constraint of thesis eq. 3.1.

        Parameters
        ----------
        points : (k, 3) array_like
            World points [m]; a single (3,) point is accepted and treated as (1, 3).
        t : float
            Time [s].

        Raises
        ------
        ValueError
            If ``points`` does not have shape (k, 3).
        """
        return self._sdf_local(self._local(points, t)[1]) - self._thickness

    def gradient(self, points, t: float = 0.0) -> np.ndarray:
        """Unit outward normal ∇H(p, t), shape (k, 3), in world coordinates.

        Defined almost everywhere; at kinks, on the medial axis and at the centre of round
        obstacles each primitive picks a fixed, documented normal.
        """
        pose, q = self._local(points, t)
        g = self._grad_local(q)
        return g if pose.is_identity else g @ pose.rotation.T

    def evaluate(self, points, t: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """``(signed_distance, gradient)`` in one pass: (k,) [m] and (k, 3) unit."""
        pose, q = self._local(points, t)
        sd, g = self._eval_local(q)
        return sd - self._thickness, (g if pose.is_identity else g @ pose.rotation.T)

    def _contact_local(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._eval_local(q)

    def evaluate_contact(self, points, t: float = 0.0, max_distance: float | None = None
                         ) -> tuple[np.ndarray, np.ndarray]:
        """Values and unit normals (k,), (k, 3) for the linearised contact rows H + n·Δp ≥ 0.

        Equal to :meth:`evaluate` for true distance functions. For functions that are not
        distances (the needle height field, user SDF callables) the value is the first-order
        distance φ/‖∇φ‖ (thickness included the same way), so that the row, whose normal is
        unit, asks for the right displacement: with φ itself and a unit normal it would ask for
        ‖∇φ‖ times too much (up to 13× on the needle flanks).

        ``max_distance`` [m]: points certainly farther than this from the obstacle (bounding
        sphere test, where the obstacle has one) get +inf and the normal +z without a query.
        """
        pose, q = self._local(points, t)
        val = np.full(q.shape[0], np.inf)
        g = np.tile([0.0, 0.0, 1.0], (q.shape[0], 1))
        sel = slice(None)
        bound = self._bounding_sphere() if max_distance is not None else None
        if bound is not None:
            c, r = bound
            sel = np.flatnonzero(np.linalg.norm(q - c, axis=1) - r - self._thickness < max_distance)
        qs = q[sel]
        sd, gs = self._contact_local(qs)
        scale = self._contact_slope(qs)
        val[sel] = (sd - self._thickness) / scale if scale is not None else sd - self._thickness
        g[sel] = gs
        return val, (g if pose.is_identity else g @ pose.rotation.T)

    def _bounding_sphere(self):
        """(centre (3,), radius) in reference coordinates enclosing the obstacle, or None."""
        return None

    PASSAGE_TURN = 0.5
    """A path that enters and leaves the contact surface passed through the obstacle when the
    outward normals at its entry and exit differ by more than acos(``PASSAGE_TURN``) = 60° (a slab
    crossed at any angle: 180°; a chord of a curved surface travelled within one step: its small
    arc) and the middle of its inside part is deeper than ``depth``."""

    SWEEP_STEPS = 64
    """Cap on conservative-advancement steps of :meth:`swept_passage` per direction; paths that
    graze a face (sphere tracing then advances slowly) are sampled at ``SWEEP_SAMPLES`` points."""

    SWEEP_SAMPLES = 64

    SWEEP_SLOPE = 1.0
    """Lipschitz bound L ≥ 1 of H assumed by the sweep (:meth:`_march` steps H / (L ‖d‖)): 1 for the
    exact distances of the primitives; :class:`~isocloth.contact.obstacles.sdf.ObstacleSDF` uses
    1 + its slope tolerance."""

    def _sweepable(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        """(k,) bool: the paths from q0 to q1 (k, 3) (reference coordinates) along which H is a distance
        (Lipschitz constant ≤ ``SWEEP_SLOPE``), so that the sphere tracing of :meth:`_march` cannot step
        over the surface. All of them for true distance functions; none for obstacles whose function is
        not a distance (``_contact_slope`` defined, e.g. the needle height field): their passages are not
        detected."""
        return np.full(q0.shape[0], self._contact_slope(q0[:1]) is None)

    def _march(self, q0: np.ndarray, d: np.ndarray, tau: np.ndarray, direction: float, tol: float) -> np.ndarray:
        """The first τ ∈ [0, 1] from τ (k,) in ``direction`` ±1 along q0 + τ d (k, 3) where H ≤ tol,
        nan when there is none. Conservative advancement (Hart 1996, "sphere tracing": a step of
        H / ‖d‖ never passes the surface of a true distance function); paths it has not settled
        within ``SWEEP_STEPS`` (grazing a face) are sampled at ``SWEEP_SAMPLES`` points and the
        first sign change is bisected. Sound when H is L-Lipschitz along the path with L ≤
        ``SWEEP_SLOPE`` (the step is divided by it)."""
        length = self.SWEEP_SLOPE * np.linalg.norm(d, axis=1)
        tau = tau.copy()
        out = np.full(tau.size, np.nan)
        live = np.arange(tau.size)
        for _ in range(self.SWEEP_STEPS):
            h = self._sdf_local(q0[live] + tau[live, None] * d[live]) - self._thickness
            hit = h <= tol
            out[live[hit]] = tau[live[hit]]
            tau[live] += direction * np.where(hit, 0.0, h / length[live])
            live = live[~hit & (tau[live] >= 0.0) & (tau[live] <= 1.0)]
            if live.size == 0:
                return out
        # grazing paths: sample from the current τ to the end and bisect the first sample inside
        end = 1.0 if direction > 0 else 0.0
        u = np.linspace(0.0, 1.0, self.SWEEP_SAMPLES + 1)[1:]
        t = tau[live, None] + u[None, :] * (end - tau[live])[:, None]  # (l, S)
        pts = q0[live, None, :] + t[..., None] * d[live, None, :]
        h = (self._sdf_local(pts.reshape(-1, 3)) - self._thickness).reshape(t.shape)
        inside = h <= tol
        found = inside.any(axis=1)
        first = np.argmax(inside, axis=1)
        rows = np.flatnonzero(found)
        lo = np.where(first[rows] > 0, t[rows, np.maximum(first[rows] - 1, 0)], tau[live[rows]])
        hi = t[rows, first[rows]]
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            hm = self._sdf_local(q0[live[rows]] + mid[:, None] * d[live[rows]]) - self._thickness
            lo, hi = np.where(hm <= tol, lo, mid), np.where(hm <= tol, mid, hi)
        out[live[rows]] = hi
        return out

    def swept_passage(self, p0, t0: float, p1, t1: float, depth: float
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Continuous collision detection of points moving from p0 at t0 to p1 at t1 (straight
        in the obstacle's frame): which of them passed through the contact surface H = 0 (the
        surface inflated by the thickness) although they started outside it (or on it, less than
        ``depth`` inside).

        A point passed through when its path enters the surface and either leaves it again where
        the surface faces more than 60° away from the entry (``PASSAGE_TURN``), with the middle of
        its inside part deeper than ``depth`` (a thin obstacle crossed within one step), or ends
        inside where the closest surface faces away from the entry (past the
        obstacle's middle). A point that ends inside near where it entered is not reported: the
        closest-point row of :meth:`evaluate_contact` holds it. Only paths along which H is a
        distance are swept (:meth:`_sweepable`): every path for the primitives and meshes, the paths
        whose ends have ‖∇φ‖ within ``SWEEP_SLOPE_TOLERANCE`` of 1 for
        :class:`~isocloth.contact.obstacles.sdf.ObstacleSDF`, none for functions that are not
        distances (the needle height field); the other paths are not reported.

        Parameters
        ----------
        p0, p1 : (k, 3) array_like [m], start and end points (world)
        t0, t1 : float [s], their times (the obstacle's pose at each)
        depth : float [m], ≥ 0, depth of the inside part below which a grazing path is not a passage

        Returns
        -------
        (through (k,) bool, entry points (k, 3) [m] on the contact surface at t1, outward unit
        normals there (k, 3)), world frame; the points and normals of points not through are 0.

        Raises
        ------
        ValueError
            If p0 or p1 is not (k, 3).
        """
        pose0, q0 = self._local(p0, t0)
        pose1, q1 = self._local(p1, t1)
        k = q0.shape[0]
        through = np.zeros(k, dtype=bool)
        point, normal = np.zeros((k, 3)), np.zeros((k, 3))
        d = q1 - q0
        length = np.linalg.norm(d, axis=1)
        if k == 0:
            return through, point, normal
        h0 = self._sdf_local(q0) - self._thickness
        h1 = self._sdf_local(q1) - self._thickness
        # started outside, or on the surface within ``depth`` (resting contacts); can reach it
        # (H changes by at most L ``length`` along the path)
        reach = self.SWEEP_SLOPE * length
        cand = np.flatnonzero((h0 >= -depth) & (length > 0.0) & (reach >= h0) & (h1 < reach))
        if cand.size:
            cand = cand[self._sweepable(q0[cand], q1[cand])]
        if cand.size == 0:
            return through, point, normal
        tol = min(1e-3 * depth, 1e-6 * max(1.0, float(length[cand].max()))) if depth > 0 else 1e-9
        t_in = self._march(q0[cand], d[cand], np.zeros(cand.size), 1.0, tol)
        hit = np.isfinite(t_in)
        cand, t_in = cand[hit], t_in[hit]
        if cand.size == 0:
            return through, point, normal
        q_in = q0[cand] + t_in[:, None] * d[cand]
        g_in = self._grad_local(q_in)
        ends_inside = h1[cand] < 0.0
        passed = np.zeros(cand.size, dtype=bool)
        if ends_inside.any():
            e = np.flatnonzero(ends_inside)
            passed[e] = np.einsum("kd,kd->k", self._grad_local(q1[cand[e]]), g_in[e]) < 0.0
        if (~ends_inside).any():
            o = np.flatnonzero(~ends_inside)
            t_out = self._march(q0[cand[o]], d[cand[o]], np.ones(o.size), -1.0, tol)
            t_out = np.where(np.isfinite(t_out), t_out, t_in[o])
            mid = 0.5 * (t_in[o] + t_out)
            h_mid = self._sdf_local(q0[cand[o]] + mid[:, None] * d[cand[o]]) - self._thickness
            # through the obstacle: the surface turned between entry and exit (a crossed slab: its
            # other face), unlike a chord of a curved surface travelled within one step
            g_out = self._grad_local(q0[cand[o]] + t_out[:, None] * d[cand[o]])
            turned = np.einsum("kd,kd->k", g_in[o], g_out) < self.PASSAGE_TURN
            passed[o] = (h_mid < -depth) & turned
        cand, q_in, g_in = cand[passed], q_in[passed], g_in[passed]
        through[cand] = True
        point[cand] = q_in if pose1.is_identity else pose1.apply(q_in)
        normal[cand] = g_in if pose1.is_identity else g_in @ pose1.rotation.T
        return through, point, normal

    def _contact_slope(self, q: np.ndarray):
        """‖∇φ‖ (k,) at reference points for functions that are not distances; None for distances."""
        return None

    def closest_points(self, points, t: float = 0.0) -> np.ndarray:
        """Closest points (k, 3) [m] on the obstacle surface (thickness not included), world frame.

        Exact for true distance functions; :class:`ObstacleNeedles` returns the vertical foot point.
        """
        pose, q = self._local(points, t)
        c = self._closest_local(q)
        return c if pose.is_identity else pose.apply(c)

    def surface_velocity(self, points, t: float = 0.0) -> np.ndarray:
        """Velocity [m/s], shape (k, 3), of the obstacle material at the surface points closest to ``points``.

        This is v^obstacle in the relative tangential velocity of friction,
        V = φ̇ − ⟨φ̇, n⟩ n − v^obstacle (thesis §3.6.2). It is the rigid velocity field of
        ``motion`` evaluated at :meth:`closest_points` (on the bare surface, without thickness).
        """
        p = points3(points)
        if self.motion.is_static:
            return np.zeros_like(p)
        return self.motion.velocity_at(self.closest_points(p, t), t)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, mu={self._mu}, thickness={self._thickness})"
