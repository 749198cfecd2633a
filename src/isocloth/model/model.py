"""The static, frozen cloth model: mesh, material, FEM operators, constraints, grasps, obstacles and
the self-collision options."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from isocloth.control import Control, ControlSchedule, Grasp, TrajectoryFixed, grasp_node_indices
from isocloth.fem.inextensibility import InextensibilityConstraints, RowKind
from isocloth.fem.stretch_limits import StretchLimits
from isocloth.mesh.mesh import Mesh
from isocloth.model.material import Material
from isocloth.state import State

__all__ = ["ClothModel", "SelfCollisionOptions"]

GRASP_VARIANTS = 16
"""Models of other grasp sets kept per model (:meth:`ClothModel.with_grasped_nodes`)."""
_GRASP_FREE_CACHE = ("held", "collision_detector", "membrane", "conformity", "jump_rows", "surface_map_xyz")
"""Cached parts of a model that do not depend on which nodes are grasped."""


DEFAULT_THICKNESS = 0.005
"""τ0 [m] of self-collisions when a scene gives none and the mesh allows it (:func:`default_thickness`)."""


@dataclass(frozen=True)
class SelfCollisionOptions:
    """Self-collision settings of a model (seed 000 §3.3, §4.1; thesis §3.3–3.4).

    Attributes
    ----------
    enabled : bool
        Impose cloth–cloth constraints H_k ≥ τ0 (node–face and edge–edge, seed 000 §3.2).
        Thin obstacles (``ClothModel.thin_obstacles``) are checked whatever this is.
    thickness : float [m]
        Cloth thickness τ0 > 0. Must be smaller than the distance between non-adjacent
        primitives of the initial mesh (checked by ``ModelBuilder.finalize``); a quarter of the
        edge length or less is typical.
    omega : float
        Proximity parameter ω ∈ [0, 0.5] used in detection during the solver iterations
        (seed 000 §3.3: pairs are caught once closer than 2ωτ0).
    omega_decay : float
        Factor in (0, 1) applied to ω when the final ω = 0 check of a step still finds crossings
        and the step is restarted (seed 000 §4.1: "repeat with a smaller ω"; 0.9 here).
    max_restarts : int
        Restarts of a step allowed after failed final checks (≥ 0).
    mu_cloth : float
        Cloth–cloth friction coefficient μ ≥ 0 (seed 000 does not give one; 0.3 is a common
        value for woven fabric on fabric and should be set per fabric).

    Raises
    ------
    ValueError
        A value outside the ranges above (the message names the field).
    """

    enabled: bool = True
    thickness: float = DEFAULT_THICKNESS
    omega: float = 0.5
    omega_decay: float = 0.9
    max_restarts: int = 5
    mu_cloth: float = 0.3

    def __post_init__(self) -> None:
        import math

        def real(name):
            v = getattr(self, name)
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise ValueError(f"self-collision {name} must be a real number, got {v!r}") from None
            if not math.isfinite(v):
                raise ValueError(f"self-collision {name} must be finite, got {v!r}")
            object.__setattr__(self, name, v)
            return v

        object.__setattr__(self, "enabled", bool(self.enabled))
        if real("thickness") <= 0.0:
            raise ValueError(f"self-collision thickness must be > 0 m, got {self.thickness}")
        if not 0.0 <= real("omega") <= 0.5:
            raise ValueError(f"self-collision omega must be in [0, 0.5] (seed 000 §3.3), got {self.omega}")
        if not 0.0 < real("omega_decay") < 1.0:
            raise ValueError(f"self-collision omega_decay must be in (0, 1), got {self.omega_decay}")
        if real("mu_cloth") < 0.0:
            raise ValueError(f"self-collision mu_cloth must be >= 0, got {self.mu_cloth}")
        if isinstance(self.max_restarts, bool) or int(self.max_restarts) != self.max_restarts or self.max_restarts < 0:
            raise ValueError(f"self-collision max_restarts must be an integer >= 0, got {self.max_restarts!r}")
        object.__setattr__(self, "max_restarts", int(self.max_restarts))

    def replace(self, **changes) -> "SelfCollisionOptions":
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


NO_SELF_COLLISION = SelfCollisionOptions(enabled=False)


@dataclass(frozen=True, eq=False)
class ClothModel:
    """Everything that does not change during a simulation. Build with :class:`ModelBuilder`.

    Attributes
    ----------
    mesh : Mesh
    material : Material
    constraint_mode : "inextensible" (E, F, G rows) or "quasi-inextensible" (E, G rows + shear energy)
    constraint_model : "thesis-nodal" (the rows alone) or "stretch-limited" (plus element length limits)
    stretch_limits : StretchLimits or None
        Bounds on the lengths of element edges and quad diagonals (:mod:`isocloth.fem.stretch_limits`),
        inequality rows of every projection; None for "thesis-nodal".
    area_mass : (n,) float64
        Lumped nodal areas [m²] (thesis eq. 2.10); nodal masses are ρ·area_mass [kg].
    constraints : InextensibilityConstraints
    bending : scipy.sparse.csr_matrix (n, n) [m⁻²], K of the bending energy ½ κ φᵀKφ
    shear_rows : InextensibilityConstraints or None
        F rows at every node for the shear energy (thesis eq. 2.17), when k_s > 0.
    interior_nodes, corner_nodes : int64 arrays
    schedule : ControlSchedule (grasped nodes and their trajectories)
    initial_positions : (n, 3) float64 [m]
    initial_velocities : (n, 3) float64 [m/s]
    obstacles : tuple of Obstacle (``isocloth.contact.obstacles``), with their friction μ and motion:
        surface obstacles handled node-wise through their signed distance (thesis §3.2)
    thin_obstacles : tuple of ObstacleCodim (``isocloth.contact.obstacles``: segments, points,
        polylines / sticks), handled by continuous collision detection against cloth edges and faces
        (seed 000 §6.3, §7.4) through :attr:`collision_detector`
    self_collision : SelfCollisionOptions (disabled by default)
    nonconforming : CrouzeixRaviart or None
        For the "nonconforming" constraint model (:mod:`isocloth.fem.nonconforming`): the element of
        the cloth mesh as given. The model's nodes are then its edge midpoints, ``mesh`` is the
        rectified mesh through them, and :meth:`surface_positions` maps a state to the ghost
        (conforming) surface on the original vertices.
    conformity_stiffness : float [N/m]
        k of the nonconforming model's jump energy ½ k yᵀ J y (0: none; :attr:`conformity`).
    """

    mesh: Mesh
    material: Material
    constraint_mode: str
    constraint_model: str
    stretch_limits: StretchLimits | None
    area_mass: np.ndarray
    constraints: InextensibilityConstraints
    bending: sp.csr_matrix
    shear_rows: InextensibilityConstraints | None
    interior_nodes: np.ndarray
    corner_nodes: np.ndarray
    schedule: ControlSchedule
    initial_positions: np.ndarray
    initial_velocities: np.ndarray
    corner_angle_deg: float = 45.0
    obstacles: tuple = ()
    thin_obstacles: tuple = ()
    self_collision: SelfCollisionOptions = NO_SELF_COLLISION
    nonconforming: object = None
    conformity_stiffness: float = 0.0
    _cache: dict = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ derived
    @property
    def node_count(self) -> int:
        return self.mesh.node_count

    @property
    def conformity(self) -> sp.csr_matrix | None:
        """k J (n, n) csr [N/m] of the nonconforming model's jump energy ½ k yᵀ J y
        (:func:`isocloth.fem.nonconforming.conformity_matrix`), an implicit force like bending; None
        without it. Built once per model."""
        if self.nonconforming is None or not self.conformity_stiffness > 0:
            return None
        if "conformity" not in self._cache:
            from isocloth.fem.nonconforming import conformity_matrix

            self._cache["conformity"] = self.conformity_stiffness * conformity_matrix(self.nonconforming)
        return self._cache["conformity"]

    @property
    def jump_rows(self) -> sp.csr_matrix | None:
        """D_e ⊗ I3 (3i, 3n) csr [dimensionless]: the jump across every interior edge of the nonconforming
        model per coordinate (:func:`isocloth.fem.nonconforming.edge_jump_operator`), the rows that hold
        its jump energy in the contact QPs; None without it. Built once per model."""
        if self.conformity is None:
            return None
        if "jump_rows" not in self._cache:
            from isocloth.fem.nonconforming import edge_jump_operator

            self._cache["jump_rows"] = sp.kron(edge_jump_operator(self.nonconforming), sp.identity(3),
                                               format="csr")
        return self._cache["jump_rows"]

    @property
    def surface_mesh(self) -> Mesh:
        """The cloth's surface mesh: :attr:`mesh`, or for the nonconforming model the ghost mesh (the
        vertices of the mesh as given, its quads split as the elements split them)."""
        return self.mesh if self.nonconforming is None else self.nonconforming.ghost_mesh

    def surface_positions(self, x: np.ndarray) -> np.ndarray:
        """Vertex positions (n_v, 3) float64 [m] of :attr:`surface_mesh` for node positions x (n, 3):
        x itself, or for the nonconforming model the ghost surface G x (:mod:`isocloth.fem.nonconforming`)."""
        return x if self.nonconforming is None else self.nonconforming.ghost(x)

    @property
    def surface_map(self) -> sp.csr_matrix | None:
        """G (n_v, n) csr float64: the linear map from node positions to the vertices of
        :attr:`surface_mesh` (the nonconforming model's ghost map), or None when the surface is
        the mesh of the nodes itself. Contacts, self-collisions and thin obstacles act on the surface
        (:mod:`isocloth.step.contact_projection`); a row on surface vertices is a row on nodes through G."""
        return None if self.nonconforming is None else self.nonconforming.ghost_map

    @property
    def surface_map_xyz(self) -> sp.csr_matrix | None:
        """G ⊗ I3 (3 n_v, 3 n) csr float64: :attr:`surface_map` on interleaved coordinates (the
        columns of a Jacobian on surface vertices times it give the Jacobian on nodes); None with it."""
        if self.surface_map is None:
            return None
        if "surface_map_xyz" not in self._cache:
            self._cache["surface_map_xyz"] = sp.kron(self.surface_map, sp.identity(3), format="csr")
        return self._cache["surface_map_xyz"]

    @property
    def surface_free_mask(self) -> np.ndarray:
        """(n_v,) bool: the vertices of :attr:`surface_mesh` that the dynamics move (those whose
        position depends on a free node; :attr:`free_mask` when the surface is the mesh)."""
        G = self.surface_map
        if G is None:
            return self.free_mask
        if "surface_free" not in self._cache:  # depends on the grasps: not in _GRASP_FREE_CACHE
            self._cache["surface_free"] = np.asarray(abs(G) @ self.free_mask.astype(np.float64)).ravel() > 0.0
        return self._cache["surface_free"]

    @property
    def grasp_nodes(self) -> np.ndarray:
        """Grasped node indices (g,) int64, in Control.grasp_targets order."""
        return self.schedule.node_ids

    @property
    def free_mask(self) -> np.ndarray:
        """(n,) bool, True for nodes moved by the dynamics (not grasped)."""
        if "free" not in self._cache:
            free = np.ones(self.node_count, dtype=bool)
            free[self.grasp_nodes] = False
            self._cache["free"] = free
        return self._cache["free"]

    @property
    def masses(self) -> np.ndarray:
        """Nodal inertial masses ρ·m_k [kg], (n,) float64."""
        return self.material.rho * self.area_mass

    @property
    def inverse_masses(self) -> np.ndarray:
        """(n,) float64 [1/kg]; 0 at grasped nodes and at nodes without area."""
        if "inv_mass" not in self._cache:
            m = self.masses
            w = np.zeros_like(m)
            ok = (m > 0) & self.free_mask
            w[ok] = 1.0 / m[ok]
            self._cache["inv_mass"] = w
        return self._cache["inv_mass"]

    @property
    def active_rows(self) -> np.ndarray:
        """Constraint rows that involve at least one free node (the solver can act on them)."""
        if "rows" not in self._cache:
            self._cache["rows"] = self.constraints.rows_touching(self.free_mask & (self.area_mass > 0))
        return self._cache["rows"]

    @property
    def held_constraints(self) -> InextensibilityConstraints:
        """The constraints followed by one squared-length row per stretch limit at its bound,
        ‖p_a − p_b‖² − b_e² (row ``constraint_count + e`` is limit e): the rows of limits held
        at their bound (:mod:`isocloth.fem.stretch_limits`). The constraints alone
        when the model has no stretch limits."""
        if "held" not in self._cache:
            lim = self.stretch_limits
            self._cache["held"] = (self.constraints if lim is None else
                                   self.constraints.with_length_rows(lim.pairs, lim.bound, RowKind.STRETCH_LIMIT))
        return self._cache["held"]

    def held_compliance(self, held: np.ndarray, dt: float) -> np.ndarray:
        """(h,) float64 [m²/kg], compliance of the rows of the held limits ``held`` (h,) int64 for a
        step dt [s]: :meth:`StretchLimits.compliance` with ``material.tensile_stiffness``."""
        return self.stretch_limits.compliance(held, self.material.tensile_stiffness, dt)

    def rows_holding(self, held: np.ndarray) -> np.ndarray:
        """Rows of :attr:`held_constraints` a projection enforces: the active rows, then the rows
        of the held edges ``held`` (h,) int64 (indices into ``stretch_limits``)."""
        held = np.asarray(held, dtype=np.int64)
        return self.active_rows if held.size == 0 else np.concatenate([self.active_rows, self.constraint_count + held])

    @property
    def constraint_count(self) -> int:
        return self.constraints.row_count

    @property
    def has_contacts(self) -> bool:
        """Whether a step needs the contact projection: surface obstacles, thin obstacles or
        self-collisions."""
        return bool(self.obstacles or self.thin_obstacles or self.self_collision.enabled)

    @property
    def obstacle_features(self) -> tuple:
        """The sharp corners and edges of the surface obstacles (:meth:`Obstacle.features
        <isocloth.contact.obstacles.base.Obstacle.features>`) and the axes of the bars thin enough to
        pass between two nodes of the cloth (:meth:`Obstacle.axis_feature
        <isocloth.contact.obstacles.base.Obstacle.axis_feature>`: cylinders and capsules whose diameter
        2(R + thickness) is smaller than the cloth's longest edge, :attr:`longest_edge`), as thin
        obstacles checked against the cloth's faces and edges like :attr:`thin_obstacles`, without
        those that rest on another obstacle (a box's or a cone's base on the floor: both static, every
        end within the other's thickness of it), which the cloth cannot reach; built once per model."""
        if "obstacle_features" not in self._cache:
            self._cache["obstacle_features"] = _uncovered_features(self.obstacles, self.longest_edge)
        return self._cache["obstacle_features"]

    @property
    def longest_edge(self) -> float:
        """Length [m] of the cloth's longest edge (a side of a face: quad sides, not their diagonals,
        :func:`isocloth.mesh.topology.edges`) at :attr:`initial_positions`; 0 without faces. A bar
        thinner than this can pass between the nodes of a face (:meth:`Obstacle.axis_feature
        <isocloth.contact.obstacles.base.Obstacle.axis_feature>`)."""
        if "longest_edge" not in self._cache:
            from isocloth.mesh.topology import edges

            e = edges(self.mesh)
            x = self.initial_positions
            self._cache["longest_edge"] = float(np.linalg.norm(x[e[:, 0]] - x[e[:, 1]], axis=1).max(initial=0.0))
        return self._cache["longest_edge"]

    @property
    def collision_detector(self):
        """The :class:`~isocloth.contact.self_collision.SelfCollisions` detector of this model's
        :attr:`surface_mesh` (cloth triangles with quads split, τ0, μ_cloth, the thin obstacles and the obstacles' corners
        and edges; self pairs only when ``self_collision.enabled``), built once per model; None
        when there is neither self-collision nor a thin obstacle nor an obstacle with corners."""
        if "collision_detector" not in self._cache:
            self._cache["collision_detector"] = _collision_detector(
                self.surface_mesh, self.self_collision, self.thin_obstacles + self.obstacle_features)
        return self._cache["collision_detector"]

    @property
    def membrane(self):
        """The :class:`~isocloth.fem.membrane.MembraneOperator` of the mesh (element Green strains
        for the membrane stabilisation energy, ``material.membrane_stiffness``), built once per model."""
        if "membrane" not in self._cache:
            from isocloth.fem.membrane import membrane_operator

            self._cache["membrane"] = membrane_operator(self.mesh)
        return self._cache["membrane"]

    # ------------------------------------------------------------------ API
    def initial_state(self) -> State:
        """State at t = 0 (positions from the mesh, velocities as built)."""
        return State(self.initial_positions.copy(), self.initial_velocities.copy(), 0.0, 0)

    def control(self, t: float) -> Control:
        """Control (grasp targets) at time t [s] from the model's schedule."""
        return self.schedule.at(t)

    def with_grasped_nodes(self, nodes) -> "ClothModel":
        """The model with the nodes ``nodes`` (g,) int64 grasped (held at targets given by each
        step's Control) instead of this model's, sharing everything else: geometry, constraints,
        stretch limits, obstacles and the collision detector (cheap, kept per node set: a policy
        that grasps and releases returns to the same sets). ``self`` when the nodes are this
        model's grasped nodes.

        Raises
        ------
        ValueError if a node index is outside 0..n−1 or repeats (``isocloth.control.grasp_node_indices``).
        """
        nodes = np.asarray(nodes, dtype=np.int64)
        if np.array_equal(nodes, self.grasp_nodes):
            return self
        variants = self._cache.setdefault("grasp_variants", {})
        key = nodes.tobytes()
        if key not in variants:
            grasp_node_indices(nodes, self.node_count)
            if len(variants) >= GRASP_VARIANTS:
                variants.pop(next(iter(variants)))
            schedule = ControlSchedule((Grasp(tuple(nodes.tolist()), TrajectoryFixed(), "control"),), nodes.copy(),
                                       self.initial_positions[nodes].copy())
            shared = {k: self._cache[k] for k in _GRASP_FREE_CACHE if k in self._cache}
            shared["grasp_variants"] = variants  # every variant finds the others (and this model)
            variants.setdefault(self.grasp_nodes.tobytes(), self)
            variants[key] = dataclasses.replace(self, schedule=schedule, _cache=shared)
        else:
            variants[key] = variants.pop(key)  # most recently used last
        return variants[key]

    def replace(self, *, material: Material | None = None, schedule: ControlSchedule | None = None,
                self_collision: SelfCollisionOptions | None = None) -> "ClothModel":
        """A new model with another material, schedule or self-collision options, sharing the
        geometry, obstacles and thin obstacles (cheap; for fitting).

        Raises
        ------
        ValueError
            If the new schedule grasps other nodes (rebuild with ModelBuilder instead), if a
            shear stiffness is requested on a model built without shear rows, or if the new
            thickness τ0 is not smaller than the initial mesh's distance between non-adjacent
            primitives.
        """
        changes = {"_cache": {}}
        if self_collision is not None:
            if not isinstance(self_collision, SelfCollisionOptions):
                raise ValueError(f"self_collision must be a SelfCollisionOptions, got {type(self_collision).__name__}")
            check_thickness(self.surface_mesh, self.surface_positions(self.initial_positions), self_collision)
            changes["self_collision"] = self_collision
        if material is not None:
            if material.shear_stiffness > 0 and self.shear_rows is None:
                raise ValueError("this model has no shear rows: build it with shear_stiffness > 0")
            changes["material"] = material
        if schedule is not None:
            if not np.array_equal(schedule.node_ids, self.schedule.node_ids):
                raise ValueError("replace() keeps the grasped nodes; rebuild the model to grasp others")
            changes["schedule"] = schedule
        return dataclasses.replace(self, **changes)

    def describe(self) -> dict:
        """JSON-serialisable summary for run metadata."""
        return {
            "mesh": {"name": self.mesh.name, "nodes": self.node_count, "triangles": self.mesh.triangle_count,
                     "quads": self.mesh.quad_count},
            "material": self.material.to_dict(),
            "constraint_mode": self.constraint_mode,
            "constraint_model": self.constraint_model,
            "stretch_limit": None if self.stretch_limits is None else self.stretch_limits.limit,
            "constraints": self.constraints.count_by_kind(),
            "corner_nodes": self.corner_nodes.tolist(),
            "corner_angle_deg": self.corner_angle_deg,
            "grasps": self._describe_grasps(),
            "obstacles": [repr(o) for o in self.obstacles],
            "thin_obstacles": [repr(o) for o in self.thin_obstacles],
            "self_collision": self.self_collision.to_dict(),
        }


    def _held_vertices(self, nodes) -> np.ndarray:
        """Vertices (k,) int64 of :attr:`surface_mesh` that grasped ``nodes`` hold: the nodes themselves, or for
        the nonconforming model the vertices whose edges' midpoints are all among them."""
        nodes = np.asarray(nodes, dtype=np.int64)
        cr = self.nonconforming
        if cr is None:
            return nodes
        held = np.zeros(cr.unknown_count, dtype=bool)
        held[nodes] = True
        touched = np.unique(cr.edges[held])
        return np.array([v for v in touched if held[cr.star_edges(v)].all()], dtype=np.int64)

    @property
    def grasp_vertices(self) -> np.ndarray:
        """Vertices (k,) int64 of :attr:`surface_mesh` held by the grasps (:attr:`grasp_nodes` but for the
        nonconforming model, whose grasps hold the midpoints of a vertex's edges)."""
        return self._held_vertices(self.grasp_nodes)

    def _describe_grasps(self) -> list:
        """The schedule's grasps; for the nonconforming model each also names the surface vertices it holds
        (``vertices``), in the numbering of the run's frames."""
        grasps = self.schedule.describe()
        if self.nonconforming is not None:
            for g in grasps:
                g["vertices"] = self._held_vertices(g["nodes"]).tolist()
        return grasps


def _uncovered_features(obstacles, longest_edge: float) -> tuple:
    """The obstacles' features (``Obstacle.features``) less the corners and edges whose ends all lie within
    another static obstacle's thickness of it, for static obstacles, each followed by the obstacle's axis
    (``Obstacle.axis_feature`` for a cloth whose longest edge is ``longest_edge`` [m]), kept whole: a bar's
    axis lies inside it, and ends held in other obstacles (a rail between two posts) leave its middle
    free (``ClothModel.obstacle_features``)."""
    from isocloth.contact.obstacles.codim import ObstacleCodim

    out = []
    for k, ob in enumerate(obstacles):
        f = ob.features()
        others = [o for j, o in enumerate(obstacles) if j != k and o.motion.is_static]
        if f is not None and ob.motion.is_static and others:
            v = f.vertices_at(0.0)
            covered = np.zeros(len(v), dtype=bool)
            for o in others:
                covered |= o.signed_distance(v, 0.0) <= 1e-12
            segments = f.segments[~covered[f.segments].all(axis=1)]
            points = f.points[~covered[f.points]]
            f = (ObstacleCodim(f.vertices_at(0.0), segments, points, radius=f.radius, mu=f.mu, name=f.name)
                 if segments.size or points.size else None)
        out += [g for g in (f, ob.axis_feature(longest_edge)) if g is not None]
    return tuple(out)


def _collision_detector(mesh: Mesh, options: SelfCollisionOptions, thin_obstacles: tuple):
    if not (options.enabled or thin_obstacles):
        return None
    from isocloth.contact.self_collision import SelfCollisions

    return SelfCollisions.from_mesh(mesh, thickness=options.thickness, mu=options.mu_cloth,
                                    obstacles=thin_obstacles, self_collision=options.enabled)


def _primitive_distance(mesh: Mesh, x: np.ndarray, tau: float) -> float:
    """The smallest distance [m] between non-adjacent primitives (node–face, edge–edge) of ``mesh`` at
    x (n, 3) [m] among those within τ (inf when none is)."""
    from isocloth.contact.self_collision import SelfCollisions

    return SelfCollisions.from_mesh(mesh, thickness=tau).min_distance(x, cutoff=tau * (1.0 + 1e-9))


def default_thickness(mesh: Mesh) -> float:
    """τ0 [m] for self-collisions of ``mesh`` at its vertices when none is given: ``DEFAULT_THICKNESS``
    when the smallest distance d between non-adjacent primitives (node–face, edge–edge) exceeds it,
    else d / 4 (a garment whose panels were modelled a fraction of a millimetre apart), as
    :func:`check_thickness` advises.

    Raises
    ------
    ValueError
        If two non-adjacent primitives touch (d = 0): no thickness can keep them apart.
    """
    d = _primitive_distance(mesh, mesh.vertices, DEFAULT_THICKNESS)
    if d > DEFAULT_THICKNESS:
        return DEFAULT_THICKNESS
    if not d > 0.0:
        raise ValueError(f"self-collision thickness: non-adjacent primitives of the initial mesh {mesh.name!r} touch "
                         "(distance 0): no thickness keeps them apart; separate them or merge their vertices")
    return 0.25 * d


def check_thickness(mesh: Mesh, x: np.ndarray, options: SelfCollisionOptions) -> None:
    """Check that τ0 is smaller than the smallest distance between non-adjacent primitives
    (node–face, edge–edge) of the configuration x (n, 3) [m]; nothing to check when
    self-collisions are disabled.

    Raises
    ------
    ValueError
        Naming τ0, that distance and the fix.
    """
    if not options.enabled:
        return
    tau = options.thickness
    d = _primitive_distance(mesh, x, tau)
    if d <= tau:
        raise ValueError(
            f"self-collision thickness {tau:.4g} m is not smaller than {d:.4g} m, the smallest distance between "
            f"non-adjacent primitives (node-face, edge-edge) of the initial mesh {mesh.name!r}: constraints would "
            f"push apart parts that are close by construction; use a thickness below {d:.3g} m (a quarter of it "
            f"or less is typical) or a coarser mesh")
