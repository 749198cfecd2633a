"""The static, frozen cloth model: mesh, material, FEM operators, constraints and grasps."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from isocloth.control import Control, ControlSchedule
from isocloth.fem.inextensibility import InextensibilityConstraints
from isocloth.mesh.mesh import Mesh
from isocloth.model.material import Material
from isocloth.state import State

__all__ = ["ClothModel"]


@dataclass(frozen=True, eq=False)
class ClothModel:
    """Everything that does not change during a simulation. Build with :class:`ModelBuilder`.

    Attributes
    ----------
    mesh : Mesh
    material : Material
    constraint_mode : "inextensible" (E, F, G rows) or "quasi-inextensible" (E, G rows + shear energy)
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
    obstacles : tuple of Obstacle (``isocloth.contact.obstacles``), with their friction μ and motion
    """

    mesh: Mesh
    material: Material
    constraint_mode: str
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
    _cache: dict = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ derived
    @property
    def node_count(self) -> int:
        return self.mesh.node_count

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
    def constraint_count(self) -> int:
        return self.constraints.row_count

    # ------------------------------------------------------------------ API
    def initial_state(self) -> State:
        """State at t = 0 (positions from the mesh, velocities as built)."""
        return State(self.initial_positions.copy(), self.initial_velocities.copy(), 0.0, 0)

    def control(self, t: float) -> Control:
        """Control (grasp targets) at time t [s] from the model's schedule."""
        return self.schedule.at(t)

    def replace(self, *, material: Material | None = None, schedule: ControlSchedule | None = None) -> "ClothModel":
        """A new model with another material or schedule, sharing the geometry (cheap; for fitting).

        Raises
        ------
        ValueError
            If the new schedule grasps other nodes (rebuild with ModelBuilder instead), or if a
            shear stiffness is requested on a model built without shear rows.
        """
        changes = {"_cache": {}}
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
            "constraints": self.constraints.count_by_kind(),
            "corner_nodes": self.corner_nodes.tolist(),
            "corner_angle_deg": self.corner_angle_deg,
            "grasps": self.schedule.describe(),
            "obstacles": [repr(o) for o in self.obstacles],
        }
