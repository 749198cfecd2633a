"""ModelBuilder: collect a cloth, its material and its grasps, then ``finalize()`` a frozen model."""

from __future__ import annotations

import numpy as np

from isocloth.control import ControlSchedule, Grasp, Trajectory, TrajectoryFixed
from isocloth.fem.bending import bending_matrix
from isocloth.fem.inextensibility import inextensibility_constraints, length_constraints
from isocloth.fem.nonconforming import CONFORMITY_STIFFNESS, crouzeix_raviart
from isocloth.fem.mass import lumped_mass
from isocloth.fem.stretch_limits import DEFAULT_STRETCH_LIMIT, stretch_limits
from isocloth.mesh.mesh import Mesh
from isocloth.model.material import Material
from isocloth.model.model import NO_SELF_COLLISION, ClothModel, SelfCollisionOptions, check_thickness

__all__ = ["ModelBuilder", "CONSTRAINT_MODES", "CONSTRAINT_MODELS"]

CONSTRAINT_MODES = ("inextensible", "quasi-inextensible")
CONSTRAINT_MODELS = ("stretch-limited", "thesis-nodal", "nonconforming")
"""The constraint models; the first is the default (docs/design/constraint-model.md)."""


class ModelBuilder:
    """Builds a :class:`ClothModel`.

    Example
    -------
    >>> b = ModelBuilder()
    >>> b.set_cloth(rectangle(0.42, 0.594, 7, 9, plane="xz"), fabric("wool"))
    >>> b.add_grasp([56, 62], TrajectorySinusoid((0.075, 0, 0), 0.6))
    >>> b.set_self_collision(thickness=0.005)
    >>> b.add_obstacle(ObstaclePolyline.stick(times, end_a, end_b))  # thin: goes to model.thin_obstacles
    >>> model = b.finalize()
    """

    def __init__(self) -> None:
        self._mesh: Mesh | None = None
        self._material: Material | None = None
        self._mode = "inextensible"
        self._constraint_model, self._stretch_limit = CONSTRAINT_MODELS[0], DEFAULT_STRETCH_LIMIT
        self._corner_angle = 45.0
        self._grasps: list[Grasp] = []
        self._velocity = None
        self._validate = True
        self._obstacles: list = []
        self._thin_obstacles: list = []
        self._self_collision: SelfCollisionOptions = NO_SELF_COLLISION

    def set_cloth(self, mesh: Mesh, material: Material | None = None, *, constraint_mode: str = "inextensible",
                  constraint_model: str = CONSTRAINT_MODELS[0], stretch_limit: float = DEFAULT_STRETCH_LIMIT,
                  corner_angle_deg: float = 45.0, initial_velocity=None, validate: bool = True) -> "ModelBuilder":
        """Set the cloth.

        Parameters
        ----------
        mesh : Mesh
        material : Material (default: light cotton density, no damping)
        constraint_mode : "inextensible" or "quasi-inextensible" (no F rows; use shear_stiffness)
        constraint_model : "stretch-limited" (default) or "thesis-nodal"
            "thesis-nodal": the rows of thesis Algorithm 1 alone (nodal averages of E, F, G and the
            boundary edge lengths). "stretch-limited": the same rows plus bounds on the length of
            every other element edge and quad diagonal (:mod:`isocloth.fem.stretch_limits`), which
            remove the element strain patterns the nodal averages cannot see; an edge held at its
            bound answers beyond it with ``material.tensile_stiffness``. "nonconforming": the
            unknowns are the edge midpoints and every triangle (quads split) keeps its rest edge
            lengths exactly (English & Bridson 2008; :mod:`isocloth.fem.nonconforming`); grasps
            given on vertices hold the midpoints of the vertex's edges.
        stretch_limit : float
            ε̄ of "stretch-limited" (dimensionless, > 0; default 0.01): no element edge or quad
            diagonal gets longer than (1 + ε̄) times its rest length, no triangle edge shorter than
            (1 − ε̄) times it.
        corner_angle_deg : float
            A boundary node is a corner (gets an F row) when the boundary turns there by at
            least this angle in the rest shape (see ``isocloth.mesh.topology.corner_nodes``).
        initial_velocity : (3,) or (n, 3) [m/s], optional
        validate : bool
            Run ``check_mesh`` (raises on non-manifold, degenerate, duplicate, unused, misoriented).

        Raises
        ------
        ValueError
            For an unknown constraint mode or model, or a stretch limit that is not > 0.
        """
        if constraint_mode not in CONSTRAINT_MODES:
            raise ValueError(f"constraint_mode must be one of {CONSTRAINT_MODES}, got {constraint_mode!r}")
        if constraint_model not in CONSTRAINT_MODELS:
            raise ValueError(f"constraint_model must be one of {CONSTRAINT_MODELS}, got {constraint_model!r}")
        if not (isinstance(stretch_limit, (int, float)) and np.isfinite(stretch_limit) and stretch_limit > 0):
            raise ValueError(f"stretch_limit must be a number > 0 (e.g. 0.01 for 1 %), got {stretch_limit!r}")
        self._constraint_model, self._stretch_limit = constraint_model, float(stretch_limit)
        self._mesh, self._material = mesh, material or Material()
        self._mode, self._corner_angle = constraint_mode, float(corner_angle_deg)
        self._velocity, self._validate = initial_velocity, validate
        return self

    def add_grasp(self, nodes, trajectory: Trajectory | None = None, *, name: str | None = None,
                  start: float = 0.0, end: float | None = None) -> "ModelBuilder":
        """Hold ``nodes`` and move them along ``trajectory`` (held still when None), in the steps
        ending in [start, end) [s] (``Grasp.holds``; end None: to the end of the run); a grasp
        that starts later moves its nodes from where they are when it starts.

        Raises
        ------
        ValueError
            For an empty node list, indices out of range (checked at finalize), a node
            already grasped by another grasp, or start < 0 or end ≤ start.
        """
        nodes = tuple(int(i) for i in np.atleast_1d(np.asarray(nodes, dtype=np.int64)))
        if not nodes:
            raise ValueError("a grasp needs at least one node")
        taken = {i for g in self._grasps for i in g.nodes}
        dup = taken.intersection(nodes)
        if dup:
            raise ValueError(f"node {sorted(dup)[0]} is already grasped; a node can belong to one grasp only")
        self._grasps.append(Grasp(nodes, trajectory or TrajectoryFixed(), name or f"grasp{len(self._grasps)}",
                                  float(start), None if end is None else float(end)))
        return self

    def add_obstacle(self, obstacle) -> "ModelBuilder":
        """Add an obstacle: a surface obstacle (``isocloth.contact.obstacles.Obstacle``: plane,
        box, sphere, ..., handled node-wise, goes to ``model.obstacles``) or a thin one
        (``ObstacleCodim``: segments, points, polyline / stick, goes to ``model.thin_obstacles``,
        see :meth:`add_thin_obstacle`).

        Raises
        ------
        TypeError
            If the object is neither (needs evaluate and surface_velocity, or vertices_at,
            segments and points).
        """
        from isocloth.contact.obstacles.codim import ObstacleCodim

        if isinstance(obstacle, ObstacleCodim):
            return self.add_thin_obstacle(obstacle)
        if not (hasattr(obstacle, "evaluate") and hasattr(obstacle, "surface_velocity")):
            raise TypeError(f"{obstacle!r} is not an obstacle (needs evaluate and surface_velocity)")
        self._obstacles.append(obstacle)
        return self

    def add_thin_obstacle(self, obstacle) -> "ModelBuilder":
        """Add a thin (codimensional) moving obstacle (``ObstacleCodim``: ``ObstacleSegments``,
        ``ObstaclePoints``, ``ObstaclePolyline``), checked by continuous collision detection
        against the cloth's edges (segments) and faces (points) with the obstacle's radius as
        thickness (seed 000 §6.3, §7.4). It reaches the detector ``model.collision_detector``
        whether or not self-collisions are enabled.

        Raises
        ------
        TypeError
            If ``obstacle`` is not an ``ObstacleCodim``.
        """
        from isocloth.contact.obstacles.codim import ObstacleCodim

        if not isinstance(obstacle, ObstacleCodim):
            raise TypeError(f"{obstacle!r} is not a thin obstacle (ObstacleSegments, ObstaclePoints, "
                            "ObstaclePolyline); surface obstacles go through add_obstacle")
        self._thin_obstacles.append(obstacle)
        return self

    def set_self_collision(self, options: SelfCollisionOptions | None = None, **kwargs) -> "ModelBuilder":
        """Enable (or configure) self-collisions: either a :class:`SelfCollisionOptions` or its
        fields as keywords (``enabled=True, thickness=0.005, omega=0.5, omega_decay=0.9,
        max_restarts=5, mu_cloth=0.3``; unspecified fields keep those defaults).

        The thickness is checked against the mesh at :meth:`finalize`.

        Raises
        ------
        ValueError
            A field out of range, or both ``options`` and keywords given.
        TypeError
            An unknown keyword.
        """
        if options is not None:
            if kwargs:
                raise ValueError("give either a SelfCollisionOptions or keywords, not both")
            if not isinstance(options, SelfCollisionOptions):
                raise ValueError(f"options must be a SelfCollisionOptions, got {type(options).__name__}")
            self._self_collision = options
        else:
            self._self_collision = SelfCollisionOptions(**kwargs)
        return self

    def finalize(self) -> ClothModel:
        """Assemble the FEM operators and freeze everything into a ClothModel.

        Raises
        ------
        ValueError
            If no cloth was set, a grasp node index is out of range, or the self-collision
            thickness τ0 is not smaller than the initial mesh's smallest distance between
            non-adjacent primitives.
        MeshError
            If mesh validation fails.
        """
        from isocloth.mesh import topology
        from isocloth.mesh.quality import check_mesh

        if self._mesh is None:
            raise ValueError("no cloth: call set_cloth(mesh, material) first")
        mesh, mat = self._mesh, self._material
        if self._validate:
            check_mesh(mesh)
        n = mesh.node_count
        for g in self._grasps:
            bad = [i for i in g.nodes if not 0 <= i < n]
            if bad:
                raise ValueError(f"grasp {g.name!r} names node {bad[0]}, outside 0..{n - 1}")
        quasi = self._mode == "quasi-inextensible"
        if self._constraint_model == "nonconforming":
            if quasi:
                raise ValueError("the nonconforming model holds every element's metric exactly; "
                                 "constraint_mode 'quasi-inextensible' needs constraint_model 'thesis-nodal' or "
                                 "'stretch-limited'")
            return self._finalize_nonconforming(mesh, mat)
        interior = topology.interior_nodes(mesh)
        corners = topology.corner_nodes(mesh, self._corner_angle)
        cons = inextensibility_constraints(mesh, corner_nodes=corners, interior_nodes=interior, use_F=not quasi)
        shear = None
        if mat.shear_stiffness > 0 or quasi:
            all_nodes = np.unique(mesh.triangulated_faces())
            shear = inextensibility_constraints(mesh, corner_nodes=all_nodes, interior_nodes=np.zeros(0, np.int64),
                                                use_boundary=False)
        check_thickness(mesh, mesh.vertices, self._self_collision)
        ids = np.array([i for g in self._grasps for i in g.nodes], dtype=np.int64)
        limits = None
        if self._constraint_model == "stretch-limited":
            free = np.ones(n, dtype=bool)
            free[ids] = False
            limits = stretch_limits(mesh, self._stretch_limit, exclude=topology.boundary_edges(mesh), free_mask=free)
        schedule = ControlSchedule(tuple(self._grasps), ids, mesh.vertices[ids].copy())
        v0 = np.zeros((n, 3))
        if self._velocity is not None:
            v0[:] = np.broadcast_to(np.asarray(self._velocity, dtype=float), (n, 3))
        return ClothModel(
            mesh=mesh, material=mat, constraint_mode=self._mode, constraint_model=self._constraint_model,
            stretch_limits=limits, area_mass=lumped_mass(mesh), constraints=cons,
            bending=bending_matrix(mesh), shear_rows=shear, interior_nodes=interior, corner_nodes=corners,
            schedule=schedule, initial_positions=mesh.vertices.copy(), initial_velocities=v0,
            corner_angle_deg=self._corner_angle, obstacles=tuple(self._obstacles),
            thin_obstacles=tuple(self._thin_obstacles), self_collision=self._self_collision,
        )

    def _finalize_nonconforming(self, mesh: Mesh, mat: Material) -> ClothModel:
        """The model on edge-midpoint unknowns (:mod:`isocloth.fem.nonconforming`): a grasp of a
        vertex holds the midpoints of its edges (a midpoint shared by two grasps goes to the first)."""
        cr = crouzeix_raviart(mesh)
        rect = cr.rectified_mesh()
        E = cr.unknown_count
        pairs, lengths = cr.medial_pairs()
        cons = length_constraints(pairs, lengths, E)
        check_thickness(cr.ghost_mesh, mesh.vertices, self._self_collision)  # contacts act on the ghost
        grasps, taken = [], set()
        for g in self._grasps:
            star = [int(e) for v in g.nodes for e in cr.star_edges(v) if int(e) not in taken]
            star = list(dict.fromkeys(star))
            taken.update(star)
            grasps.append(Grasp(tuple(star), g.trajectory, g.name, g.start, g.end))
        ids = np.array([i for g in grasps for i in g.nodes], dtype=np.int64)
        schedule = ControlSchedule(tuple(grasps), ids, rect.vertices[ids].copy())
        v0 = np.zeros((mesh.node_count, 3))
        if self._velocity is not None:
            v0[:] = np.broadcast_to(np.asarray(self._velocity, dtype=float), v0.shape)
        return ClothModel(
            mesh=rect, material=mat, constraint_mode=self._mode, constraint_model="nonconforming",
            stretch_limits=None, area_mass=cr.lumped_mass(), constraints=cons, bending=cr.bending_matrix(),
            shear_rows=None, interior_nodes=np.zeros(0, np.int64), corner_nodes=np.zeros(0, np.int64),
            schedule=schedule, initial_positions=rect.vertices.copy(), initial_velocities=cr.midpoints(v0),
            corner_angle_deg=self._corner_angle, obstacles=tuple(self._obstacles),
            thin_obstacles=tuple(self._thin_obstacles), self_collision=self._self_collision, nonconforming=cr,
            conformity_stiffness=CONFORMITY_STIFFNESS,
        )
