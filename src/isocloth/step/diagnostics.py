"""What happened in a step (StepInfo) and area-error measures (thesis eq. 2.23–2.25)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

__all__ = ["StepInfo", "ContactDiagnostics", "CONTACT_FIELDS", "ShapeErrors", "area_errors"]


@dataclass(kw_only=True)
class ContactDiagnostics:
    """Contact and collision statistics of one step (thesis Algorithm 2), shared by
    :class:`~isocloth.step.contact_projection.ContactStats` and :class:`StepInfo` (one list of
    fields: the stepper copies every field of this class).

    Attributes
    ----------
    contact_count, active_contacts : int, inequality rows (node–obstacle contacts and collision
        rows) in the QP at the end of the step / in its working set
    min_gap : float [m], smallest H_i over all rows at the end (≥ −ε1 after a converged step)
    qp_iterations, constraints_added, constraints_removed, factorizations, updates : int,
        active-set statistics of the step
    friction_solves, friction_sweeps : int, friction problems solved and their Gauss–Seidel sweeps
    sticking, sliding : int, friction rows sticking / sliding in the last friction problem
    collision_rows : int, self-collision and thin-obstacle rows in the observation set at the end
        (seed 000 §4.1: it grows at every iteration)
    active_collisions : int, collision rows in the final working set
    held_edges : int, element edges held at their stretch bound at the end of the step
        (``isocloth.fem.stretch_limits``)
    restarts : int, restarts of the step with ω ← decay·ω after a failed ω = 0 check (§4.1)
    crossings : int, crossing pairs still found by the final ω = 0 check (0 unless the restarts ran out);
        for the elastic model with self-collisions, the intersecting face pairs after the contact solver
        (Li et al. 2018 Table 2, n̄_i)
    icm_remaining : int, the elastic model's intersecting face pairs left after intersection contour
        minimization (Li Table 2, n̄_ir)
    omega : float, proximity parameter ω of the accepted iteration (nan without collision detection)
    detection_time : float [s], wall time in collision detection (node–obstacle and CCD)
    merge_time : float [s], wall time relocating cloth–cloth pairs to vertices and pruning the contacts
        (the elastic model; Li et al. 2018 Table 2, t̄_m)
    solver_time : float [s], wall time in the frictional contact solver (the elastic model; Li Table 2, t̄_s)
    """

    contact_count: int = 0
    active_contacts: int = 0
    min_gap: float = float("inf")
    qp_iterations: int = 0
    constraints_added: int = 0
    constraints_removed: int = 0
    factorizations: int = 0
    updates: int = 0
    friction_solves: int = 0
    friction_sweeps: int = 0
    sticking: int = 0
    sliding: int = 0
    collision_rows: int = 0
    active_collisions: int = 0
    held_edges: int = 0
    restarts: int = 0
    crossings: int = 0
    icm_remaining: int = 0
    omega: float = float("nan")
    detection_time: float = 0.0
    merge_time: float = 0.0
    solver_time: float = 0.0


CONTACT_FIELDS = tuple(f.name for f in fields(ContactDiagnostics))


@dataclass
class StepInfo(ContactDiagnostics):
    """Diagnostics of one step.

    Attributes
    ----------
    t : float, time at the end of the step [s]
    iterations : int, fast-projection iterations (linearisations; with contacts each runs a friction loop
        of QPs, whose KKT solves are ``qp_iterations``)
    residual : float, final max relative constraint residual (the largest of the sub-steps' when
        ``Stepper.substeps`` > 1)
    converged : bool
    area_error_total : float, |A − A0| / A0 (eq. 2.23)
    area_error_mean : float, mean relative element area error (eq. 2.24)
    area_error_dispersion : float, mean + 2·std of the element errors (eq. 2.25)
    area_error_max : float, largest relative element area error
    edge_stretch_max : float, largest strain ‖p_a − p_b‖/L − 1 over the element edges (dimensionless)
    wall_time : float, seconds spent in the step
    substeps : int, sub-steps that made the step: ``Stepper.substeps`` (default 1), more where a
        failed contact step was split into halves (``Stepper.max_substep_depth``); iterations,
        factorizations and the other counts are summed over them
    membrane_relaxed : bool, the membrane relaxation ran and was kept (``Stepper.membrane_relaxation``)
    grasp_lag : float [m], largest distance between a grasped node and its target in the (sub-)steps
        that held the grasped nodes back where they were (their targets asked more than the
        inextensible cloth allows: ``Stepper`` takes such a step again with the nodes held in place);
        0 when none did
    grasp_forces : (g, 3) float64 [N], force of the grasps on each grasped node over the (last sub-)step,
        in the order of the step's grasped nodes (``Control.grasp_nodes``, or ``ClothModel.grasp_nodes``)
        (``isocloth.step.grasp_forces``); not written to diagnostics.csv
    warnings : list of str
    (and the contact fields of :class:`ContactDiagnostics`, keyword-only)
    """

    t: float
    iterations: int
    residual: float
    converged: bool
    area_error_total: float = float("nan")
    area_error_mean: float = float("nan")
    area_error_dispersion: float = float("nan")
    area_error_max: float = float("nan")
    edge_stretch_max: float = float("nan")
    wall_time: float = 0.0
    substeps: int = 1
    membrane_relaxed: bool = False
    grasp_lag: float = 0.0
    grasp_forces: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    warnings: list = field(default_factory=list)

    def set_contact(self, stats: ContactDiagnostics) -> None:
        """Copy the contact fields of ``stats`` (e.g. a ContactStats)."""
        for k in CONTACT_FIELDS:
            setattr(self, k, getattr(stats, k))

    def as_row(self) -> dict:
        """One row of diagnostics.csv: the step fields, the contact fields, then the warnings."""
        row = {k: getattr(self, k) for k in _OWN_FIELDS}  # the fields are scalars: no deep copy
        row.update({k: getattr(self, k) for k in CONTACT_FIELDS})
        row["warnings"] = ";".join(self.warnings)
        return row


def area_errors(areas: np.ndarray, rest_areas: np.ndarray) -> dict:
    """Area errors of thesis eq. 2.23–2.25.

    Parameters
    ----------
    areas, rest_areas : (e,) float64 [m²], current and rest element areas.

    Returns
    -------
    dict with keys total, mean, dispersion, max (dimensionless ratios).
    """
    rel = np.abs(areas - rest_areas) / rest_areas
    A, A0 = areas.sum(), rest_areas.sum()
    return {
        "total": float(abs(A - A0) / A0),
        "mean": float(rel.mean()),
        "dispersion": float(rel.mean() + 2 * rel.std()),
        "max": float(rel.max()),
    }


_OWN_FIELDS = tuple(f.name for f in fields(StepInfo)
                    if f.name not in CONTACT_FIELDS and f.name not in ("warnings", "grasp_forces"))


class ShapeErrors:
    """The area errors (thesis eq. 2.23–2.25) and the largest edge strain of a mesh's states, against
    its rest shape; :meth:`fill` writes them into a StepInfo."""

    def __init__(self, mesh) -> None:
        from isocloth.fem.stretch_limits import stretch_limits
        from isocloth.mesh.topology import rest_element_areas

        self.mesh = mesh
        self.rest_areas = rest_element_areas(mesh)
        self.edges = stretch_limits(mesh, 1.0, diagonals=False, compression=False)

    def fill(self, info: "StepInfo", x: np.ndarray) -> None:
        """Set info's area_error_* and edge_stretch_max at positions x (n, 3) [m]."""
        from isocloth.mesh.topology import element_areas

        err = area_errors(element_areas(self.mesh, x), self.rest_areas)
        info.area_error_total = err["total"]
        info.area_error_mean = err["mean"]
        info.area_error_dispersion = err["dispersion"]
        info.area_error_max = err["max"]
        info.edge_stretch_max = float(self.edges.strain(x).max()) if self.edges.count else 0.0
