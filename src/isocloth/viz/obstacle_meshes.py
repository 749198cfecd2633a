"""Obstacles as drawable geometry: triangles of solid obstacles, segments and points of thin ones.

Solid obstacles (:class:`~isocloth.contact.obstacles.base.Obstacle`) are tessellated in their
reference frame with trimesh's primitives (sphere, box, cylinder, capsule; a mesh obstacle is its own
mesh; a plane is a grid of squares over the view) and moved by their pose at time t. Thin obstacles
(:class:`~isocloth.contact.obstacles.codim.ObstacleCodim`: needles, sticks, polylines) are their
segments and points at time t. Obstacles given only as a signed-distance function are not drawn.
Surfaces are drawn without the contact offset (thickness).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ObstacleGeometry", "plane_patch"]

_SPHERE_SUBDIVISIONS = 3
_SECTIONS = 32


def plane_patch(point: np.ndarray, normal: np.ndarray, low: np.ndarray, high: np.ndarray,
                cells: int = 1) -> np.ndarray:
    """Triangles (2 cells², 3, 3) float64 [m] of the square of the plane through ``point`` with unit
    ``normal`` centred at the projection of the box [low, high] (3,) and as wide as its diagonal,
    split into cells × cells squares."""
    n = np.asarray(normal, dtype=np.float64)
    u = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    v = np.cross(n, u)
    centre = 0.5 * (low + high)
    centre = centre - np.dot(centre - point, n) * n
    half = 0.5 * float(np.linalg.norm(high - low))
    s = np.linspace(-half, half, cells + 1)
    grid = centre + s[:, None, None] * u + s[None, :, None] * v  # (c+1, c+1, 3)
    a, b, c, d = grid[:-1, :-1], grid[1:, :-1], grid[1:, 1:], grid[:-1, 1:]
    quads = np.stack([a, b, c, d], axis=2).reshape(-1, 4, 3)
    return np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])


def _aligned(mesh, axis: np.ndarray, centre: np.ndarray):
    """trimesh ``mesh`` built along +z, turned to the unit ``axis`` and moved to ``centre``."""
    import trimesh

    transform = trimesh.geometry.align_vectors([0.0, 0.0, 1.0], axis)
    transform[:3, 3] = centre
    mesh.apply_transform(transform)
    return mesh


def _reference_triangles(obstacle, low: np.ndarray, high: np.ndarray) -> np.ndarray | None:
    """Triangles (k, 3, 3) of a solid obstacle in its reference frame (None: not drawable)."""
    import trimesh

    from isocloth.contact import obstacles as ob

    if isinstance(obstacle, ob.ObstaclePlane):
        corners = np.array([[x, y, z] for x in (low[0], high[0]) for y in (low[1], high[1]) for z in (low[2], high[2])])
        side = (corners - obstacle.point) @ obstacle.normal
        if side.min() > 0.0 or side.max() < 0.0:
            return None  # the plane does not cross the view
        return plane_patch(obstacle.point, obstacle.normal, low, high)
    if isinstance(obstacle, ob.ObstacleSphere):
        mesh = trimesh.creation.icosphere(subdivisions=_SPHERE_SUBDIVISIONS, radius=obstacle.radius)
        mesh.apply_translation(obstacle.center)
    elif isinstance(obstacle, ob.ObstacleBox):
        mesh = trimesh.creation.box(extents=2.0 * np.asarray(obstacle.half_extents, dtype=np.float64))
        mesh.apply_translation(obstacle.center)
    elif isinstance(obstacle, ob.ObstacleCylinder):
        mesh = _aligned(trimesh.creation.cylinder(radius=obstacle.radius, height=2.0 * obstacle.half_height,
                                                  sections=_SECTIONS), obstacle.axis, obstacle.center)
    elif isinstance(obstacle, ob.ObstacleCone):
        mesh = _aligned(trimesh.creation.cone(radius=obstacle.radius, height=obstacle.height, sections=_SECTIONS),
                        obstacle.axis, obstacle.apex - obstacle.height * obstacle.axis)
    elif isinstance(obstacle, ob.ObstacleCapsule):
        a, b = np.asarray(obstacle.a, dtype=np.float64), np.asarray(obstacle.b, dtype=np.float64)
        length = float(np.linalg.norm(b - a))
        axis = (b - a) / length if length > 0 else np.array([0.0, 0.0, 1.0])
        mesh = _aligned(trimesh.creation.capsule(height=length, radius=obstacle.radius, count=[_SECTIONS, _SECTIONS]),
                        axis, 0.5 * (a + b))
    elif isinstance(obstacle, ob.ObstacleMesh):
        return np.asarray(obstacle.vertices, dtype=np.float64)[np.asarray(obstacle.faces)]
    else:
        return None
    return np.asarray(mesh.vertices)[np.asarray(mesh.faces)]


def _near_view(tris: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The triangles (k, 3, 3) whose bounding boxes meet the box [low, high] grown on every side by
    half its largest extent (as far as :func:`isocloth.viz.render.scene_bounds` reaches)."""
    grow = 0.5 * max(float((high - low).max()), 1e-3)
    keep = (tris.max(axis=1) >= low - grow).all(axis=1) & (tris.min(axis=1) <= high + grow).all(axis=1)
    return tris[keep]


class ObstacleGeometry:
    """The drawable geometry of a scene's obstacles over time.

    Parameters
    ----------
    obstacles : sequence of Obstacle or ObstacleCodim
        The model's obstacles and thin obstacles.
    bounds : (2, 3) float64
        Box [m] that the view covers (planes are drawn over it).

    Raises
    ------
    ValueError
        If ``bounds`` is not (2, 3).
    """

    def __init__(self, obstacles, bounds: np.ndarray) -> None:
        from isocloth.contact import obstacles as ob
        from isocloth.contact.obstacles.codim import ObstacleCodim

        b = np.asarray(bounds, dtype=np.float64)
        if b.shape != (2, 3):
            raise ValueError(f"bounds must be (2, 3) [[xmin, ymin, zmin], [xmax, ymax, zmax]]; got shape {b.shape}")
        self._centre = 0.5 * (b[0] + b[1])
        self._planes = [obs for obs in obstacles if isinstance(obs, ob.ObstaclePlane)]
        self._solid = []  # (obstacle, reference triangles (k, 3, 3))
        self._thin = []
        for obs in obstacles:
            if isinstance(obs, ObstacleCodim):
                self._thin.append(obs)
                continue
            tris = _reference_triangles(obs, b[0], b[1])
            if tris is None or not tris.size:
                continue
            pose = obs.motion.pose(0.0)
            view_lo, view_hi = (b if pose.is_identity else
                                np.sort(pose.apply_inverse(np.stack([b[0], b[1]])), axis=0))  # (static: exact)
            tris = _near_view(tris, view_lo, view_hi)
            if tris.size:
                self._solid.append((obs, tris))

    @property
    def empty(self) -> bool:
        """True when nothing is drawable."""
        return not self._solid and not self._thin

    @property
    def static(self) -> bool:
        """True when no solid obstacle moves (their triangles are the same at every time)."""
        return all(obs.motion.is_static for obs, _ in self._solid)

    def reference_parts(self) -> list[tuple[object, np.ndarray]]:
        """(obstacle, triangles (k, 3, 3) float64 [m] in its reference frame) of each drawable solid
        obstacle; its pose at time t, ``obstacle.motion.pose(t)``, places them in the world."""
        return list(self._solid)

    def thin_obstacles(self) -> list:
        """The drawable thin obstacles (:class:`~isocloth.contact.obstacles.codim.ObstacleCodim`)."""
        return list(self._thin)

    def triangles(self, t: float) -> np.ndarray:
        """World triangles (k, 3, 3) float64 [m] of the solid obstacles at time t [s]."""
        parts = [tris for _, tris in self.solid_parts(t)]
        return np.concatenate(parts) if parts else np.zeros((0, 3, 3))

    def solid_parts(self, t: float) -> list[tuple[object, np.ndarray]]:
        """(obstacle, world triangles (k, 3, 3) float64 [m]) of each drawable solid obstacle at time t [s]."""
        out = []
        for obs, tris in self._solid:
            pose = obs.motion.pose(t)
            out.append((obs, tris if pose.is_identity else pose.apply(tris.reshape(-1, 3)).reshape(tris.shape)))
        return out

    def segments(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(segments (s, 2, 3), points (p, 3)) float64 [m] of the thin obstacles at time t [s]."""
        segs, pts = [np.zeros((0, 2, 3))], [np.zeros((0, 3))]
        for obs in self._thin:
            v = obs.vertices_at(t)
            segs.append(v[obs.segments])
            pts.append(v[obs.points])
        return np.concatenate(segs), np.concatenate(pts)

    def bounds(self, t: float = 0.0) -> np.ndarray | None:
        """Axis-aligned box (2, 3) float64 [m] of the obstacles at time t [s] (of a plane: the foot
        of the perpendicular from the centre of the ``bounds`` given); None without any."""
        from isocloth.contact import obstacles as ob

        parts = [(self._centre - np.dot(self._centre - p.motion.pose(t).apply(p.point[None])[0],
                                        p.motion.pose(t).rotate(p.normal[None])[0])
                  * p.motion.pose(t).rotate(p.normal[None])[0])[None] for p in self._planes]
        for obs, tris in self._solid:
            if not isinstance(obs, ob.ObstaclePlane):
                pose = obs.motion.pose(t)
                p = tris.reshape(-1, 3)
                parts.append(p if pose.is_identity else pose.apply(p))
        segs, points = self.segments(t)
        parts += [segs.reshape(-1, 3), points]
        pts = np.concatenate(parts)
        return np.stack([pts.min(axis=0), pts.max(axis=0)]) if pts.size else None
