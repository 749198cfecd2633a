"""Linearised implicit Euler for elastic cloth models (Baraff & Witkin 1998, §5, eq. 15–18).

With lumped masses M (areas; inertia ρM), the virtual-mass gravity −δMg (thesis §2.5.1), Rayleigh
damping −αMv − βKv and an elastic force f(x) with stiffness K = −∂f/∂x, one backward-Euler step
linearised about (xⁿ, vⁿ) solves

    ((ρ + dt α) M + dt β K + dt² K) Δv = dt (f(xⁿ) − δMg − αM vⁿ − βK vⁿ − dt K vⁿ),

then vⁿ⁺¹ = vⁿ + Δv and xⁿ⁺¹ = xⁿ + dt vⁿ⁺¹. Grasped nodes get vⁿ⁺¹ = (target − xⁿ)/dt, moved to
the right-hand side; the grasped nodes are those of the step's Control (grasps with start and end
times take their nodes where they are when they start, ``ControlSchedule.for_step``; released nodes
keep their velocity). The parameters δ, α, β of the Material mean the same as in the inextensible
model, so the models can be fitted over the same box.

With obstacles the step is the discrete frictional contact problem A vⁿ⁺¹ + b = Jᵀ r of Li et al.
2018 (eq. 5) on the free nodes, b = −(rhs + A vⁿ): contacts at the nodes
(:func:`isocloth.contact.nodal.obstacle_contacts`, from the start of the step and the contact-free
prediction) with exact Coulomb friction (each obstacle's μ), solved by the primal nodal Gauss–Seidel
(:func:`isocloth.solvers.nodal_contact.solve_primal`, Li Algorithm 1). The nodes end the step on
or outside each obstacle's inflated surface. The obstacles' corners and edges
(``model.obstacle_features``) and the thin obstacles are detected against the cloth's faces and
edges (``model.collision_detector``) and each such pair becomes a contact at the point of the
cloth's face or edge (:func:`isocloth.contact.nodal.self_contacts`; Li §5.2 moves it to the nearest
vertex and refines the mesh there, §5, which isocloth does not). With self-collisions (``model.self_collision``) cloth–cloth pairs become
self-contacts at their nearest vertices (:func:`isocloth.contact.nodal.self_contacts`, Li eq. 9), and
where faces intersect at the end of the step (``StepInfo.crossings``) the nodes are moved apart by
intersection contour minimization (:mod:`isocloth.contact.icm`, Li §7.4's fail-safe; the positions
only), and the pairs it leaves are counted (``StepInfo.icm_remaining``).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

from isocloth.contact.icm import intersection_contour_minimization
from isocloth.contact.intersection import face_intersections
from isocloth.contact.nodal import PRUNE_ANGLE
from isocloth.state import State
from isocloth.step.diagnostics import ShapeErrors, StepInfo

__all__ = ["ElasticForces", "ImplicitEulerStepper", "node_rest_positions"]


def node_rest_positions(mesh) -> np.ndarray:
    """Rest positions (n, 3) [m] of the nodes.

    Raises
    ------
    ValueError
        For meshes whose rest shape is given per element corner (sewn garments).
    """
    if mesh.rest_triangle_corners is not None or mesh.rest_quad_corners is not None:
        raise ValueError("the elastic baselines need a rest shape per node (rest_vertices), not per element corner")
    return mesh.vertices if mesh.rest_vertices is None else mesh.rest_vertices


class ElasticForces:
    """Interface of an elastic force model: ``force_and_stiffness(x)`` → (f (n, 3) [N], K (3n, 3n) [N/m])
    with K = −∂f/∂x symmetric positive semi-definite (a definite approximation where needed)."""

    def force_and_stiffness(self, x: np.ndarray):  # pragma: no cover - interface
        raise NotImplementedError

    def energy(self, x: np.ndarray) -> float:  # pragma: no cover - interface
        raise NotImplementedError


class ImplicitEulerStepper:
    """``step(state, control, dt) -> (State, StepInfo)`` for an elastic model on a ClothModel.

    Parameters
    ----------
    model : ClothModel (mesh, lumped areas, material ρ, δ, α, β, grasp schedule, obstacles)
    forces : ElasticForces
    dt : default time step [s]

    tolerance : [m/s], of the contact solver's residual (Li et al. 2018 §7: 1e-8)

    Raises
    ------
    ValueError
        For dt ≤ 0 or tolerance ≤ 0.
    """

    substeps = 1
    """No sub-steps (the runner's hints read it)."""

    MAX_SWEEPS = 5000
    """Gauss–Seidel sweep cap of the contact solver (Li et al. 2018 §7 cap at 2000). A step in which a
    whole sheet slides on a body can need more to reach the tolerance (benchmarks/RESULTS.md); a step
    stops at convergence, so only steps that do not converge run to the cap."""

    def __init__(self, model, forces: ElasticForces, *, dt: float = 0.01, tolerance: float = 1e-8) -> None:
        from isocloth.step.stepper import _check_dt

        _check_dt(dt)
        if not (isinstance(tolerance, (int, float)) and np.isfinite(tolerance) and tolerance > 0):
            raise ValueError(f"tolerance must be a finite number > 0 m/s (e.g. 1e-8), got {tolerance!r}")
        self.tolerance = float(tolerance)
        self.prune_angle = PRUNE_ANGLE
        """[rad]: contacts of one vertex whose normals are closer are one contact (Li §5.2; 0 keeps all)."""
        self.last_contacts = None
        """(NodalContacts, ContactSolution) of the last step's contact problem (node indices among
        the free nodes), None when it had no contact."""
        self.model = model
        self.forces = forces
        self.dt = float(dt)
        self._m3 = np.repeat(model.area_mass, 3)
        self._shape = ShapeErrors(model.mesh)
        self._triangles = model.mesh.triangulated_faces()

    def step(self, state: State, control=None, dt: float | None = None) -> tuple[State, StepInfo]:
        """Advance one step (see the module docstring).

        Raises
        ------
        SimulationDiverged
            If the new positions are not finite, or a stage of the step fails numerically (overflow,
            a singular system: LinAlgError, FloatingPointError, ... are reported as this).
        ValueError
            If dt is not a finite number > 0, the state is not valid for the model (positions and
            velocities finite real (n, 3) arrays, t finite, step_index an integer >= 0) or the
            control is invalid (:meth:`Control.validated`).
        TypeError
            If ``state`` is not a State.
        """
        from isocloth.step.stepper import (SimulationDiverged, _check_dt, _check_edges, _check_state,
                                           numerical_failures)

        t0 = time.perf_counter()
        dt = self.dt if dt is None else _check_dt(dt)
        m = self.model
        state = _check_state(state, m, projection=False)
        _check_edges(self._shape.edges, state.x)
        t_new = state.t + dt
        mat = m.material
        anchors = state.grasp_anchors
        if control is None:  # the schedule's targets: an overflowing trajectory is a divergence
            with numerical_failures("the grasp schedule", t_new):
                control, anchors = m.schedule.for_step(t_new, state.x, state.grasp_anchors)
                g, targets = control.validated(m.node_count, m.grasp_nodes)
        else:
            g, targets = control.validated(m.node_count, m.grasp_nodes)
        free_mask = np.ones(m.node_count, dtype=bool)
        free_mask[g] = False
        x, v = state.x, state.v
        with numerical_failures("the elastic forces", t_new):
            f_el, K = self.forces.force_and_stiffness(x)
        with numerical_failures("the implicit-Euler solve", t_new):
            v3 = v.ravel()
            f = f_el.ravel().copy()
            f[2::3] -= mat.virtual_density * mat.gravity * m.area_mass
            f -= mat.alpha * self._m3 * v3
            if mat.beta > 0:
                f -= mat.beta * (K @ v3)
            rhs = dt * (f - dt * (K @ v3))
            A = (sp.diags((mat.rho + dt * mat.alpha) * self._m3) + (dt * dt + dt * mat.beta) * K).tocsr()
            dv = np.zeros_like(v3)
            if g.size:
                v_target = (targets - x[g]) / dt
                idx = (3 * g[:, None] + np.arange(3)).ravel()
                dv[idx] = v_target.ravel() - v3[idx]
                rhs = rhs - A[:, idx] @ dv[idx]
            free = np.repeat(free_mask, 3)
            A_ff = A[free][:, free].tocsc()
            dv[free] = spsolve(A_ff, rhs[free])
        broken = ~(np.isfinite(dv) & np.isfinite(rhs)).reshape(-1, 3).all(axis=1)
        if broken.any():  # (spsolve returns NaN for a singular matrix)
            bad = int(np.flatnonzero(broken)[0])
            raise SimulationDiverged(
                f"the implicit-Euler solve overflowed or was singular at node {bad} at t = {t_new:.6g} s "
                f"(dt = {dt:.3g} s): reduce dt or check the scene's values (gravity, densities, stiffness)")
        info = StepInfo(t=t_new, iterations=0, residual=0.0, converged=True)
        if m.has_contacts:
            with numerical_failures("the contact solve", t_new):
                self._contacts(A_ff, rhs[free], v3, dv, state, dt, info, free_mask)
        v_new = (v3 + dv).reshape(-1, 3)
        x_new = x + dt * v_new
        if g.size:
            x_new[g] = targets
        if not np.isfinite(x_new).all():
            bad = int(np.flatnonzero(~np.isfinite(x_new).all(axis=1))[0])
            raise SimulationDiverged(f"node {bad} became non-finite at t = {t_new:.6g} s; reduce dt or check the "
                                     "scene's values")
        with numerical_failures("the intersection repair", t_new):
            if m.self_collision.enabled:  # Li et al. 2018 §7.4, Table 2 n̄_i, n̄_ir: intersections left, then ICM
                info.crossings = len(face_intersections(x_new, m.mesh.triangles, m.mesh.quads))
                if info.crossings:
                    icm = intersection_contour_minimization(x_new, self._triangles, free_mask)
                    x_new = icm.x
                    info.icm_remaining = len(face_intersections(x_new, m.mesh.triangles, m.mesh.quads))
        self._shape.fill(info, x_new)
        info.wall_time = time.perf_counter() - t0
        new = State(x_new, v_new, t_new, state.step_index + 1)
        new.grasp_anchors = anchors
        return new, info

    def _contacts(self, A_ff, rhs_f, v3, dv, state: State, dt: float, info: StepInfo, free_mask) -> None:
        """Replace the contact-free Δv of the free nodes by the solution of Li eq. 5 (module docstring);
        contact statistics into info."""
        from isocloth.contact.nodal import merge_contacts, obstacle_contacts, self_contacts
        from isocloth.solvers.nodal_contact import nodal_problem, solve_primal

        t0 = time.perf_counter()
        model = self.model
        free_nodes = np.flatnonzero(free_mask)
        v_pred = (v3 + dv).reshape(-1, 3)
        x = state.x
        contacts = obstacle_contacts(model.obstacles, x, x + dt * v_pred, state.t, dt, free_nodes,
                                     prune_angle=self.prune_angle)
        detector = model.collision_detector
        if detector is not None:
            rows = detector.detect(x, x + dt * v_pred, omega=0.5, proximity=True, t_prev=state.t, t=state.t + dt)
            t1 = time.perf_counter()
            contacts = merge_contacts(contacts, self_contacts(rows, x, v_pred, free_mask, dt),
                                      prune_angle=self.prune_angle, x=x)
            info.merge_time = time.perf_counter() - t1
            info.detection_time = t1 - t0
        else:
            info.detection_time = time.perf_counter() - t0
        info.contact_count = contacts.node.size
        self.last_contacts = None
        if not contacts.node.size:
            return
        renumber = lambda n: np.where(n >= 0, np.searchsorted(free_nodes, n), -1)  # noqa: E731 - among the free nodes
        local = replace(contacts, node=renumber(contacts.node), other=renumber(contacts.other),
                        face=renumber(contacts.face))
        v_f = v3.reshape(-1, 3)[free_nodes].ravel()
        t2 = time.perf_counter()
        problem = nodal_problem(A_ff, -(rhs_f + A_ff @ v_f), local, dt=dt, thickness=0.0)
        sol = solve_primal(problem, tolerance=self.tolerance, max_sweeps=self.MAX_SWEEPS,
                           warm_start=v_pred[free_nodes])  # Algorithm 1 starts from −A⁻¹b
        info.solver_time = time.perf_counter() - t2
        self.last_contacts = (local, sol)
        dv.reshape(-1, 3)[free_nodes] = sol.v - v3.reshape(-1, 3)[free_nodes]
        r, u = sol.r, sol.u
        info.friction_sweeps = sol.sweeps
        info.friction_solves = 1
        info.residual = sol.residual
        info.converged = sol.converged
        info.iterations = sol.sweeps
        pressed = r[:, 0] > 0
        info.active_contacts = int(pressed.sum())
        info.sticking = int((pressed & (np.linalg.norm(u, axis=1) <= 10 * self.tolerance)).sum())
        info.sliding = int(pressed.sum()) - info.sticking
        # u_N = n·(v − v_body) + z/dt: the gap at the end over dt (1/‖w‖ of it on a self-contact's or a face
        # contact's row)
        info.min_gap = float((dt * u[:, 0] * problem.gap_scale()).min())
