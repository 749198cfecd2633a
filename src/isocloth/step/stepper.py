"""One time step: unconstrained implicit-Euler predictor, then fast projection (thesis §2.6).

``Stepper.step(state, control, dt) -> (State, StepInfo)``; the stages ``predict`` and
``project`` are public so a pipeline can be entered midway (e.g. contacts in later stages).
"""

from __future__ import annotations

import time

import numpy as np

from isocloth.control import Control
from isocloth.mesh.topology import element_areas, rest_element_areas
from isocloth.solvers.projection import SolverProjection
from isocloth.solvers.result import SolveResult, SolveStatus
from isocloth.state import State
from isocloth.step.diagnostics import StepInfo, area_errors
from isocloth.step.predictor import Predictor

__all__ = ["Stepper", "SimulationDiverged"]


class SimulationDiverged(RuntimeError):
    """The state became non-finite; the message names the node and time."""


class Stepper:
    """Advances a :class:`~isocloth.model.ClothModel`.

    Parameters
    ----------
    model : ClothModel
    dt : float
        Default time step [s] (> 0).
    solver : SolverProjection, optional
        Constraint solver (numerics only); default tolerance 1e-3.
    contact_solver : ContactProjection, optional
        Used when the model has obstacles (default: active-set QPs with the solver's tolerance).
    area_diagnostics : bool
        Compute the area errors of eq. 2.23–2.25 every step (cheap; on by default).
    blas_threads : int or None
        Limit BLAS to this many threads (process-wide, via threadpoolctl) when the stepper is
        created. The solver's dense factorizations are small; multithreaded BLAS made steps up to
        50x slower on a loaded 2-core machine (benchmarks/RESULTS.md). None leaves BLAS alone.
    """

    def __init__(self, model, *, dt: float = 0.01, solver: SolverProjection | None = None,
                 contact_solver=None, area_diagnostics: bool = True, blas_threads: int | None = 1) -> None:
        if not dt > 0:
            raise ValueError(f"dt must be > 0 s, got {dt}")
        self.model = model
        self.dt = float(dt)
        if blas_threads is not None:
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=int(blas_threads), user_api="blas")
        self.solver = solver or SolverProjection()
        if contact_solver is None and model.has_contacts:
            from isocloth.step.contact_projection import ContactProjection

            contact_solver = ContactProjection(tolerance=self.solver.tolerance,
                                               max_iterations=self.solver.max_iterations)
        self.contact_solver = contact_solver
        self.predictor = Predictor(model)
        self.area_diagnostics = area_diagnostics
        self._rest_areas = rest_element_areas(model.mesh)

    # ------------------------------------------------------------------ stages
    def predict(self, state: State, control: Control, dt: float) -> np.ndarray:
        """Unconstrained positions φ0^{n+1} (n, 3) [m] with grasped nodes at their targets."""
        g = self.model.grasp_nodes
        x0, _ = self.predictor.positions(state.x, state.v, dt, control.grasp_targets if g.size else None)
        return x0

    def projection_metric(self, dt: float):
        """The metric W of the projection (None = lumped mass), chosen by ``solver.metric``."""
        choice = getattr(self.solver, "metric", "mass")
        if choice == "implicit" or (choice == "auto" and
                                    self.predictor.stiffness_ratio(dt) > self.solver.implicit_metric_ratio):
            return self.predictor.metric(dt)
        return None

    def project(self, x0: np.ndarray, dt: float | None = None, factor_point: np.ndarray | None = None) -> SolveResult:
        """Fast projection of x0 onto the inextensibility constraints (in the metric of
        :meth:`projection_metric`); ``factor_point`` (n, 3) [m]: see ``State.factor_point``."""
        m = self.model
        W = self.projection_metric(self.dt if dt is None else dt)
        return self.solver.solve(x0, m.inverse_masses, m.constraints, m.active_rows, metric=W,
                                 factor_point=factor_point)

    def step(self, state: State, control: Control | None = None, dt: float | None = None) -> tuple[State, StepInfo]:
        """Advance one step.

        Parameters
        ----------
        state : State at t_n (not modified)
        control : Control for t_{n+1}; default ``model.control(state.t + dt)``
        dt : float [s]; default the stepper's dt

        Returns
        -------
        (State at t_{n+1}, StepInfo)

        Raises
        ------
        SimulationDiverged
            If positions become NaN/inf (never returns a non-finite state).
        ValueError
            If the control has the wrong shape.
        """
        t0 = time.perf_counter()
        dt = self.dt if dt is None else float(dt)
        t_new = state.t + dt
        if control is None:
            control = self.model.control(t_new)
        g = self.model.grasp_nodes
        if control.grasp_targets.shape != (g.size, 3):
            raise ValueError(f"control.grasp_targets must have shape {(g.size, 3)}, got {control.grasp_targets.shape}")
        x0 = self.predict(state, control, dt)
        cstats = None
        if self.contact_solver is not None and self.model.has_contacts:
            res, cstats = self.contact_solver.solve(self.model, state.x, x0, t_new, dt, state.contact_keys)
        else:
            res = self.project(x0, dt, factor_point=state.factor_point)
        x = res.x
        if not np.isfinite(x).all():
            bad = int(np.flatnonzero(~np.isfinite(x).all(1))[0])
            raise SimulationDiverged(f"node {bad} became non-finite at t = {t_new:.6g} s; reduce dt or check the scene")
        v = (x - state.x) / dt  # Algorithm 2, line 26
        new = State(x, v, t_new, state.step_index + 1, factor_point=getattr(res, "factor_point", None))
        info = StepInfo(t=t_new, iterations=res.iterations, residual=res.residual,
                        converged=res.status is SolveStatus.CONVERGED,
                        factorizations=getattr(res, "factorizations", 0))
        if cstats is not None:
            new.contact_keys = cstats.active_keys
            info.set_contact(cstats)
        if not info.converged:
            info.warnings.append(f"projection {res.status.value} at residual {res.residual:.3g}")
        if self.area_diagnostics:
            err = area_errors(element_areas(self.model.mesh, x), self._rest_areas)
            info.area_error_total = err["total"]
            info.area_error_mean = err["mean"]
            info.area_error_dispersion = err["dispersion"]
            info.area_error_max = err["max"]
        info.wall_time = time.perf_counter() - t0
        return new, info
