"""One time step: unconstrained implicit-Euler predictor, then fast projection (thesis §2.6).

``Stepper.step(state, control, dt) -> (State, StepInfo)``; the stages ``predict`` and
``project`` are public so a pipeline can be entered midway (e.g. contacts in later stages).
"""

from __future__ import annotations

import dataclasses
import numbers
import re
import time
import traceback
from contextlib import contextmanager

import numpy as np
from scipy.spatial.distance import pdist

from isocloth.control import Control
from isocloth.mesh.topology import element_areas
from isocloth.model.model import GRASP_VARIANTS
from isocloth.solvers.projection import SolverProjection
from isocloth.solvers.result import SolveResult, SolveStatus
from isocloth.state import State
from isocloth.step.diagnostics import ShapeErrors, StepInfo, area_errors
from isocloth.step.grasp_forces import grasp_forces
from isocloth.step.predictor import Predictor

__all__ = ["Stepper", "SimulationDiverged", "numerical_failures"]


class SimulationDiverged(RuntimeError):
    """The state became non-finite (the message names the node and time) or the constraints could not be met."""


_NUMERICAL_MESSAGE = re.compile(r"infs or nans|singular matrix|matrix is singular|exactly singular"
                                r"|not positive definite|did not converge", re.IGNORECASE)
"""Messages of numpy, scipy and CHOLMOD for a failed factorization or solve (the package's own input
checks, e.g. "must be finite", are not numerical failures)."""


def _is_numerical_failure(exc: BaseException) -> bool:
    """Whether ``exc``, raised inside a step, is a numerical failure (overflow, a singular or
    indefinite system, non-finite intermediate values) rather than a programming error: LinAlgError,
    FloatingPointError, OverflowError, a CHOLMOD error, or a ValueError / RuntimeError of the linear
    algebra naming non-finite values or a singular matrix."""
    if isinstance(exc, SimulationDiverged):
        return False
    if isinstance(exc, (np.linalg.LinAlgError, FloatingPointError, OverflowError)):
        return True
    if type(exc).__module__.split(".")[0] in ("sksparse", "cholespy") and type(exc).__name__.endswith(
            "NotPositiveDefiniteError"):
        return True
    return isinstance(exc, (ValueError, RuntimeError)) and bool(_NUMERICAL_MESSAGE.search(str(exc)))


@contextmanager
def numerical_failures(what: str, t: float):
    """Re-raise a numerical failure inside ``what`` (a step ending at t [s]) as SimulationDiverged
    naming the exception and where it arose; other exceptions (programming errors) pass unchanged."""
    try:
        yield
    except Exception as exc:
        if not _is_numerical_failure(exc):
            raise
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if "isocloth" in f.filename]
        where = ""
        if frames:
            path = frames[-1].filename.replace("\\", "/")
            where = f" in {path.split('isocloth/')[-1]}:{frames[-1].lineno}"
        raise SimulationDiverged(
            f"{what} failed numerically at t = {t:.6g} s ({type(exc).__name__}: {str(exc)[:200]}{where}): "
            "the values overflowed or the system became singular; reduce dt or check the scene's values "
            "(gravity, virtual density, obstacle sizes, grasp motions)") from exc


_STATE_HINT = "pass a valid state (model.initial_state() or a saved one)"


def _real_array(state: State, name: str, shape: tuple, *, allow_nan: bool = False) -> np.ndarray:
    """``state.<name>`` as a float64 array (a copy when converted from ints, float32 or lists);
    ValueError unless it is real, of ``shape`` and finite (NaN allowed with ``allow_nan``)."""
    raw = getattr(state, name)
    try:
        a = np.asarray(raw)
    except Exception:  # noqa: BLE001 - ragged lists and the like
        a = np.asarray(raw, dtype=object)
    if a.dtype.kind == "O":  # e.g. a list of Python numbers mixed with None
        try:
            a = np.asarray(raw, dtype=np.float64)
        except (TypeError, ValueError):
            pass
    if a.dtype.kind not in "iuf":
        raise ValueError(f"state.{name} must be a real (float64) array of shape {shape}, got dtype {a.dtype}: "
                         f"{_STATE_HINT}")
    a = np.asarray(a, dtype=np.float64)
    if a.shape != shape:
        raise ValueError(f"state.{name} must have shape {shape} for this model, got {a.shape}")
    ok = np.isfinite(a) | np.isnan(a) if allow_nan else np.isfinite(a)
    bad = ~ok.all(axis=1)
    if bad.any():
        what = "node" if name in ("x", "v", "factor_point") else "row"
        raise ValueError(f"state.{name} is not finite at {int(bad.sum())} {what}(s), e.g. {what} "
                         f"{int(np.flatnonzero(bad)[0])}: {_STATE_HINT}")
    return a


def _int_array(state: State, name: str) -> np.ndarray:
    """``state.<name>`` as an (k,) int64 array; ValueError unless it is one-dimensional and integer."""
    a = np.asarray(getattr(state, name))
    if a.size == 0 and not (a.ndim == 1 and a.dtype == np.int64):
        return np.zeros(0, dtype=np.int64)
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise ValueError(f"state.{name} must be a one-dimensional int64 array, got dtype {a.dtype} and "
                         f"shape {a.shape}: {_STATE_HINT}")
    return a.astype(np.int64, copy=False)


def _check_state(state: State, model, *, projection: bool = True) -> State:
    """The state to step from: ``state`` itself, or a copy whose arrays are converted to float64
    (integer positions are accepted). TypeError unless it is a State; ValueError (a bad input state is
    named as such, not reported as a divergence of the step) unless its positions and velocities are
    finite real (n, 3) arrays, its time a finite number and its step index an integer ≥ 0, and its
    grasp anchors (timed grasps) fit the model's schedule. With ``projection`` (the inextensible
    stepper) also its warm-start fields: ``held_edges`` distinct indices into the model's stretch
    limits, ``contact_keys`` integers, ``factor_point`` None or finite (n, 3)."""
    if not isinstance(state, State):
        raise TypeError(f"state must be an isocloth State (e.g. model.initial_state()), got {type(state).__name__}")
    n = model.node_count
    changes = {}
    for name in ("x", "v"):
        a = _real_array(state, name, (n, 3))
        if a is not getattr(state, name):
            changes[name] = a
    t = state.t
    try:
        finite = not isinstance(t, (str, bytes, bool, np.bool_)) and bool(np.isfinite(float(t)))
    except (TypeError, ValueError, OverflowError):
        finite = False
    if not finite:
        raise ValueError(f"state.t must be a finite time in s, got {t!r}: {_STATE_HINT}")
    k = state.step_index
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral) or k < 0:
        raise ValueError(f"state.step_index must be an integer >= 0 (the steps taken), got {k!r}: {_STATE_HINT}")
    schedule = model.schedule
    if state.grasp_anchors is not None and schedule.timed:
        _real_array(state, "grasp_anchors", (schedule.node_ids.size, 3), allow_nan=True)
    if projection:
        held = _int_array(state, "held_edges")
        limits = getattr(model, "stretch_limits", None)
        count = 0 if limits is None else int(limits.count)
        if held.size:
            wrong = held[(held < 0) | (held >= count)]
            if wrong.size:
                have = (f"{count} stretch-limited edges (indices 0..{count - 1})" if count
                        else "no stretch-limited edges")
                raise ValueError(f"state.held_edges names edge {int(wrong[0])}, but this model has {have}: pass "
                                 "held_edges from a state of this model, or an empty array")
            if np.unique(held).size != held.size:
                raise ValueError("state.held_edges repeats an edge: pass distinct sorted indices "
                                 "(from a state of this model), or an empty array")
        if held is not state.held_edges:
            changes["held_edges"] = held
        keys = _int_array(state, "contact_keys")
        if keys is not state.contact_keys:
            changes["contact_keys"] = keys
        if state.factor_point is not None:
            fp = _real_array(state, "factor_point", (n, 3))
            if fp is not state.factor_point:
                changes["factor_point"] = fp
    return dataclasses.replace(state, **changes) if changes else state


def _check_edges(edges, x: np.ndarray) -> None:
    """ValueError when positions x (n, 3) [m] put both ends of an element edge (``edges``, a
    StretchLimits of the mesh's edges) of positive rest length at one point (e.g. positions truncated
    to integers): the constraints' gradients and the elastic forces' directions vanish there."""
    if not edges.count:
        return
    d = x[edges.pairs[:, 0]] - x[edges.pairs[:, 1]]
    bad = np.flatnonzero(~np.any(d != 0.0, axis=1) & (edges.rest_length > 0))
    if bad.size:
        a, b = (int(i) for i in edges.pairs[bad[0]])
        raise ValueError(f"state.x puts both ends of {bad.size} element edge(s) at one point, e.g. nodes {a} and "
                         f"{b} at {x[a].tolist()} (rest length {edges.rest_length[bad[0]]:.3g} m): pass a valid "
                         "state (model.initial_state() or a saved one; positions in metres as floats)")


def _check_dt(dt) -> float:
    """dt as a float [s]; ValueError unless it is a finite number > 0 (0 would divide the
    velocities by zero, a negative step would run time backwards)."""
    try:
        value = float(dt)
    except (TypeError, ValueError):
        raise ValueError(f"dt must be a number of seconds > 0, got {dt!r}") from None
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"dt must be a finite time step > 0 s (e.g. 0.01), got {dt!r}")
    return value


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
        Used when the model has obstacles, thin obstacles or self-collisions, and for the steps of
        a stretch-limited model whose fast projection leaves an element edge beyond its bound
        (default: active-set QPs with the solver's tolerance).
    area_diagnostics : bool
        Compute the area errors of eq. 2.23–2.25 every step (cheap; on by default).
    blas_threads : int or None
        Limit BLAS to this many threads (process-wide, via threadpoolctl) when the stepper is
        created. The solver's dense factorizations are small; multithreaded BLAS made steps up to
        50x slower on a loaded 2-core machine (benchmarks/RESULTS.md). None leaves BLAS alone.
    max_substep_depth : int
        When a step with contacts or collisions does not converge (the linearised QPs cycle, e.g.
        a stick sweeping 2 cm per step through a coarse sheet), it is redone as two half steps,
        recursively down to dt / 2**max_substep_depth (default 5: dt/32); the returned state is
        still at t + dt and ``StepInfo.substeps`` says how many steps it took. 0 disables it.
        A step that fails at the finest level is kept with its warning (the smallest residual of
        the attempts), never replaced by a diverging one. A failed step whose grasp targets pull
        grasped nodes apart is first taken again with the grasped nodes held where they are: the cloth
        may not be able to follow such grasps, and the step keeps them back (``StepInfo.grasp_lag``,
        docs/design/grasps.md).
    divergence_residual : float
        A step whose relative constraint residual stays above this (default 0.5: edges 50 % off
        their rest length) raises SimulationDiverged instead of returning a meaningless state
        (e.g. an obstacle pushing a held edge further than the inextensible sheet allows).
    max_area_error_jump : float or None
        Error-driven substepping for contact steps: a converged step with contacts or collisions
        whose mean element area error (thesis eq. 2.24) exceeds that of its start by more than
        this (dimensionless, e.g. 0.02 = 2 percentage points) is redone as two half steps, like an
        unconverged one (same depth limit; kept whole if a half fails). A fast impact (a stick at
        3 m/s against 7 cm elements) otherwise deforms the elements the stick meets in patterns the
        nodal rows cannot see, for one step. None (default) disables it.
    substeps : int
        Fixed number of equal sub-steps of dt/substeps per step (default 1). The returned state is
        at t + dt; grasp targets of the intermediate sub-steps come from the model's schedule, or,
        for a control given by the caller, lie on the line from the grasped nodes' positions to the
        targets. Shorter steps can cost *less* per simulated second on large sheets: the kept
        factorization of the projection (chord steps) then stays good from step to step
        (the 660-node benchmark sheet at dt = 1/60: 8.55 → 0.13 factorizations per step with 4
        sub-steps, 0.144× → 1.05× real time; small dense systems and sheets that already keep their
        factor only get slower: docs/design/linear-algebra.md). Implicit Euler damps less at the
        shorter step, so trajectories differ from those at dt.
    membrane_relaxation : MembraneRelaxation, optional
        Apply the membrane stabilisation (``material.membrane_stiffness`` > 0) after a converged
        projection, as QPs that lower it along the constraint and contact set
        (:class:`~isocloth.step.membrane_relaxation.MembraneRelaxation`), instead of in the
        predictor: for scenes whose held nodes or contacts force membrane strain (a twisted sheet),
        where the predictor's membrane force and the projection undo each other. A rejected
        relaxation keeps the projection and adds a warning. None (default): the predictor takes the
        membrane force. Ignored when k_m = 0 (the scene loader refuses that combination).
    """

    def __init__(self, model, *, dt: float = 0.01, solver: SolverProjection | None = None,
                 contact_solver=None, area_diagnostics: bool = True, blas_threads: int | None = 1,
                 max_substep_depth: int = 5, divergence_residual: float = 0.5,
                 max_area_error_jump: float | None = None,
                 membrane_relaxation=None, substeps: int = 1) -> None:
        _check_dt(dt)
        if int(max_substep_depth) != max_substep_depth or max_substep_depth < 0:
            raise ValueError(f"max_substep_depth must be an integer >= 0, got {max_substep_depth}")
        self.max_substep_depth = int(max_substep_depth)
        if isinstance(substeps, bool) or int(substeps) != substeps or substeps < 1:
            raise ValueError(f"substeps must be an integer >= 1, got {substeps!r}")
        self.substeps = int(substeps)
        if not divergence_residual > 0:
            raise ValueError(f"divergence_residual must be > 0, got {divergence_residual}")
        self.divergence_residual = float(divergence_residual)
        if max_area_error_jump is not None and not max_area_error_jump > 0:
            raise ValueError(f"max_area_error_jump must be > 0 or None, got {max_area_error_jump}")
        self.max_area_error_jump = None if max_area_error_jump is None else float(max_area_error_jump)
        self.model = model
        self._model = model  # the model of the step being taken: ``model`` with the Control's grasped nodes
        self.dt = float(dt)
        if blas_threads is not None:
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=int(blas_threads), user_api="blas")
        self.solver = solver or SolverProjection()
        self._limits = getattr(model, "stretch_limits", None)
        if contact_solver is None and (model.has_contacts or self._limits is not None):
            from isocloth.step.contact_projection import ContactProjection

            contact_solver = ContactProjection(tolerance=self.solver.tolerance,
                                               max_iterations=self.solver.max_iterations)
        self.contact_solver = contact_solver
        if not model.material.membrane_stiffness > 0:
            membrane_relaxation = None
        self.membrane_relaxation = membrane_relaxation
        self._predictors = {model: Predictor(model, membrane=membrane_relaxation is None)}
        self.area_diagnostics = area_diagnostics
        # area errors and every element edge with its rest length, for StepInfo (the bound is unused)
        self._shape = ShapeErrors(model.mesh)
        self._rest_areas, self._edges = self._shape.rest_areas, self._shape.edges
        # reported shape errors are those of the cloth surface (the ghost of the nonconforming model)
        self._surface_shape = self._shape if model.nonconforming is None else ShapeErrors(model.surface_mesh)
        self._held_key, self._held_rows = None, None
        # the jump check needs previous positions that stay clear of the obstacles (none moves)
        self._static_obstacles = (all(o.motion.is_static for o in model.obstacles)
                                  and all(o.is_static for o in model.thin_obstacles))

    @property
    def predictor(self) -> Predictor:
        """The implicit-Euler predictor of the current grasp set (one per set, each factorized once)."""
        m = self._model
        if m not in self._predictors:
            if len(self._predictors) > GRASP_VARIANTS:  # as many as the model keeps
                self._predictors.pop(next(k for k in self._predictors if k is not self.model))
            self._predictors[m] = Predictor(m, membrane=self.membrane_relaxation is None)
        return self._predictors[m]

    # ------------------------------------------------------------------ stages
    def predict(self, state: State, control: Control, dt: float) -> np.ndarray:
        """Unconstrained positions φ0^{n+1} (n, 3) [m] with grasped nodes at their targets."""
        g = self._model.grasp_nodes
        x0, _ = self.predictor.positions(state.x, state.v, dt, control.grasp_targets if g.size else None)
        return x0

    def projection_metric(self, dt: float):
        """The metric W of the projection (None = lumped mass), chosen by ``solver.metric``."""
        choice = getattr(self.solver, "metric", "mass")
        if choice == "implicit" or (choice == "auto" and
                                    self.predictor.stiffness_ratio(dt) > self.solver.implicit_metric_ratio):
            return self.predictor.metric(dt)
        return None

    def project(self, x0: np.ndarray, dt: float | None = None, factor_point: np.ndarray | None = None,
                held: np.ndarray | None = None) -> SolveResult:
        """Fast projection of x0 onto the inextensibility constraints (in the metric of
        :meth:`projection_metric`); ``factor_point`` (n, 3) [m]: see ``State.factor_point``;
        ``held`` (h,) int64: element edges held at their stretch bound as compliant rows
        (``model.rows_holding``, ``model.held_compliance``; their multipliers are
        ``lam[model.constraint_count + held]``, > 0 in tension)."""
        m = self._model
        dt = self.dt if dt is None else dt
        W = self.projection_metric(dt)
        held = np.zeros(0, dtype=np.int64) if held is None else np.asarray(held, dtype=np.int64)
        if self._limits is None or not self._limits.count:
            return self.solver.solve(x0, m.inverse_masses, m.constraints, m.active_rows, metric=W,
                                     factor_point=factor_point)
        key = (id(m), held.tobytes())
        if self._held_key != key:  # the same array object while the held set does not change (factor pattern kept)
            self._held_key, self._held_rows = key, m.rows_holding(held)
        alpha = np.zeros(self._held_rows.size)
        alpha[m.active_rows.size:] = m.held_compliance(held, dt)
        # the held rows border the system of the active rows, whose factorization they share
        return self.solver.solve(x0, m.inverse_masses, m.held_constraints, self._held_rows, metric=W,
                                 factor_point=factor_point, compliance=alpha, appended=held.size)

    def project_limited(self, x0: np.ndarray, dt: float, factor_point: np.ndarray | None,
                        held: np.ndarray) -> tuple[SolveResult, np.ndarray, np.ndarray]:
        """Fast projection with the ``held`` element edges (``model.stretch_limits``) as compliant
        rows at their bound; edges that end beyond their bound by more than :attr:`hold_slack` join
        them and the projection goes on from its result (at most ``MAX_HOLD_ROUNDS`` times). The
        held rows border the factorization of the constraints' rows
        (:class:`~isocloth.solvers.bordered.BorderedSchur`), so a round starts from the last
        factorization; their compliance keeps dependent held edges factorable.

        Returns the result, the edges held from now on (an edge shorter than its bound by more
        than :attr:`release_slack`, which its row pushes apart, is released) and the edges (k,)
        int64 still beyond their bound when the rounds ran out (none when the projection did not
        converge)."""
        lim = self._limits
        beyond = np.zeros(0, dtype=np.int64)
        if lim is None or not lim.count:
            return self.project(x0, dt, factor_point=factor_point), held, beyond
        its = facts = 0
        start = x0
        for round_ in range(self.MAX_HOLD_ROUNDS):
            res = self.project(start, dt, factor_point=factor_point, held=held)
            its += res.iterations
            facts += res.factorizations
            if res.status is not SolveStatus.CONVERGED:
                break
            violation = lim.violation(res.x)
            beyond = violation > self.hold_slack
            beyond[held] = False
            beyond = np.flatnonzero(beyond)
            if beyond.size == 0 or round_ == self.MAX_HOLD_ROUNDS - 1:
                break
            held = np.union1d(held, beyond)
            start, factor_point = res.x, res.factor_point
        res.iterations, res.factorizations = its, facts
        if res.status is SolveStatus.CONVERGED:
            held = held[violation[held] >= -self.release_slack]
        else:
            beyond = np.zeros(0, dtype=np.int64)
        return res, held, beyond

    MAX_HOLD_ROUNDS = 6

    RELEASE_BAND = 0.05
    """A held edge is released once it is shorter than its bound by more than this fraction of the
    projection's relative tolerance (measured choice, docs/design/constraint-model.md §7)."""

    @property
    def hold_slack(self) -> float:
        """Relative length by which an edge must exceed its bound to be held (half the projection's
        relative tolerance, the acceptance of the contact projection)."""
        return 0.5 * self.solver.tolerance

    @property
    def release_slack(self) -> float:
        """Relative length by which a held edge must fall short of its bound to be released:
        ``RELEASE_BAND`` × the projection's tolerance. Within it the edge is at its bound to the
        accuracy of a converged projection; released there, it is pulled beyond its bound and held
        again in the next step."""
        return self.RELEASE_BAND * self.solver.tolerance

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
            Grasped nodes are on their targets unless the step held them back (targets the cloth
            cannot follow: ``StepInfo.grasp_lag`` > 0 and a warning "grasps held back").

        Raises
        ------
        SimulationDiverged
            If positions become NaN/inf (never returns a non-finite state), if a stage of the step
            fails numerically (overflow, a singular system: LinAlgError, FloatingPointError, ... are
            reported as this, naming the stage), or if the constraint residual stays above
            ``divergence_residual``.
        ValueError
            If the control has the wrong shape or non-finite targets or names invalid nodes
            (:meth:`Control.validated`), the state's positions or velocities are not finite real
            (n, 3) arrays (integer arrays are converted to float64), its time is not finite, its
            step index not an integer >= 0, its ``held_edges`` not distinct indices into the model's
            stretch limits, its ``contact_keys`` not integers, its ``factor_point`` not None or
            finite (n, 3), or dt is not a finite number > 0.
        TypeError
            If ``state`` is not a State.

        Grasps may change from step to step (``Control.grasp_nodes``, or grasps of the model's
        schedule with start / end times): the step uses the model with those nodes grasped
        (``ClothModel.with_grasped_nodes``, kept per node set with its predictor and solver systems).
        """
        t0 = time.perf_counter()
        dt = self.dt if dt is None else _check_dt(dt)
        state = _check_state(state, self.model)
        _check_edges(self._edges, state.x)
        t_new = state.t + dt
        schedule = self.model.schedule
        anchors = state.grasp_anchors
        explicit = control is not None or schedule.timed  # timed grasps: sub-steps interpolate like a caller's
        if control is None:  # the schedule's targets: an overflowing trajectory is a divergence
            with numerical_failures("the grasp schedule", t_new):
                control, anchors = schedule.for_step(t_new, state.x, state.grasp_anchors)
                g, targets = control.validated(self.model.node_count, self.model.grasp_nodes)
        else:
            g, targets = control.validated(self.model.node_count, self.model.grasp_nodes)
        control = Control(control.t, targets, g)
        with numerical_failures("the step", t_new):
            self._model = self.model.with_grasped_nodes(g)
            k = self.substeps
            h = dt / k
            parts, s = [], state
            for i in range(1, k + 1):
                if i == k:
                    ctl = control
                elif explicit:  # on the line from the grasped nodes' positions to the caller's targets
                    ctl = Control(state.t + i * h, state.x[g] + (i / k) * (control.grasp_targets - state.x[g]), g)
                else:
                    ctl = self.model.control(state.t + i * h)
                sub, sub_info = self._attempt(s, ctl, h)
                if self._needs_split(s, sub, sub_info):
                    sub, sub_info = self._substeps(s, ctl, h, explicit, sub, sub_info, self.max_substep_depth)
                sub.t = t_new if i == k else state.t + i * h
                parts.append(sub_info)
                s = sub
                if not sub_info.residual <= self.divergence_residual:
                    break
            new = s
            new.grasp_anchors = anchors
            if k > 1:
                new.step_index = state.step_index + 1
                info = self._combine(parts)
                info.residual = max(p.residual for p in parts)  # the divergence check sees every sub-step
                info.t = t_new
            else:
                info = parts[0]
        if not info.residual <= self.divergence_residual:
            where = f"t = {t_new:.6g} s" if k == 1 else f"sub-step {len(parts)} of {k} (t = {s.t:.6g} s)"
            raise SimulationDiverged(
                f"constraint residual {info.residual:.3g} > {self.divergence_residual:g} at {where} "
                f"after {parts[-1].substeps} substep(s): the constraints cannot be met (an obstacle or a grasp "
                "may demand more than the inextensible cloth allows); check the scene or reduce dt")
        info.wall_time = time.perf_counter() - t0
        return new, info

    def _mean_area_error(self, x: np.ndarray) -> float:
        """Mean element area error (thesis eq. 2.24) of positions x (n, 3) [m]."""
        return area_errors(element_areas(self._model.mesh, x), self._rest_areas)["mean"]

    def _needs_split(self, state: State, new: State, info: StepInfo) -> bool:
        """Whether a contact step from ``state`` to ``new`` is redone as substeps: it did not
        converge, or its mean element area error jumped by more than ``max_area_error_jump`` (the
        jump is then recorded in ``info.warnings``)."""
        if self.contact_solver is None or not self._model.has_contacts:
            return False
        if not info.converged:
            return True
        if self.max_area_error_jump is None:
            return False
        after = info.area_error_mean if self.area_diagnostics else self._mean_area_error(new.x)
        jump = after - self._mean_area_error(state.x)
        if jump > self.max_area_error_jump:
            info.warnings.append(f"mean element area error jumped by {jump:.3g}")
            return True
        return False

    def _substeps(self, state: State, control: Control, dt: float, explicit: bool,
                  new: State, info: StepInfo, depth: int) -> tuple[State, StepInfo]:
        """Redo a failed step (unconverged, or see ``max_area_error_jump``) as two half steps
        (recursively, ``depth`` more levels). Grasp targets at the midpoint come from the model's
        schedule, or, for a control given by the caller, halfway between the grasped nodes'
        positions and the targets. When the halves fail to converge, keeps the full step if it had
        converged, else the attempt with the smaller residual."""
        if depth <= 0:
            return new, info
        half = 0.5 * dt
        g = self._model.grasp_nodes
        if explicit:
            mid = Control(state.t + half, 0.5 * (state.x[g] + control.grasp_targets), g)
        else:
            mid = self.model.control(state.t + half)
        parts = []
        s = state
        for ctl in (mid, control):
            sub, sub_info = self._attempt(s, ctl, half)
            if self._needs_split(s, sub, sub_info):
                sub, sub_info = self._substeps(s, ctl, half, explicit, sub, sub_info, depth - 1)
            parts.append(sub_info)
            s = sub
        ok = all(p.converged for p in parts)
        if not ok and (info.converged or parts[-1].residual >= info.residual):
            return new, info  # the halves did no better: keep the full step and its warning
        s.step_index = state.step_index + 1
        out = self._combine(parts, failed=info)
        out.warnings = [w for p in parts for w in p.warnings if not w.startswith("split")]
        out.warnings.insert(0, f"split into {out.substeps} substeps after: " + "; ".join(info.warnings))
        return s, out

    @staticmethod
    def _combine(parts: list[StepInfo], failed: StepInfo | None = None) -> StepInfo:
        """One StepInfo for consecutive sub-steps ``parts`` (the last one's state, residual and
        area errors; counts summed, with those of a ``failed`` attempt that the parts replace)."""
        out = parts[-1]
        extra = [] if failed is None else [failed]
        out.substeps = sum(p.substeps for p in parts)
        out.converged = all(p.converged for p in parts)
        out.membrane_relaxed = all(p.membrane_relaxed for p in parts)
        out.grasp_lag = max(p.grasp_lag for p in parts)
        for f in ("iterations", "qp_iterations", "constraints_added", "constraints_removed", "factorizations",
                  "updates", "friction_solves", "friction_sweeps", "restarts", "detection_time"):
            setattr(out, f, sum(getattr(p, f) for p in parts + extra))
        if failed is None:  # (with a failed attempt the caller builds them from the parts: out is parts[-1])
            out.warnings = [w for p in parts for w in p.warnings]
        return out

    def _attempt(self, state: State, control: Control, dt: float) -> tuple[State, StepInfo]:
        """:meth:`_advance`; when it does not converge with nodes grasped, the step again with the
        grasped nodes held where they are, kept if that converges: grasps whose targets ask more
        than the inextensible cloth allows (grippers pulling it taut) are held back for the step
        instead of stalling the projection (``StepInfo.grasp_lag`` says how far from their targets).
        Only grasps whose targets pull grasped nodes apart (:meth:`_pulls_apart`) are held back; other
        failed steps are left to the sub-steps. A hold-back that does not converge either keeps the first
        attempt (its counts added)."""
        new, info = self._advance(state, control, dt)
        g = self._model.grasp_nodes
        if info.converged or not self._pulls_apart(state.x[g], control.grasp_targets):
            return new, info
        try:
            held, held_info = self._advance(state, Control(control.t, state.x[g].copy(), g), dt)
        except SimulationDiverged as exc:
            info.warnings.append(f"grasps held back: {exc}")
            return new, info
        if not held_info.converged:
            out = self._combine([info], failed=held_info)
            out.warnings = info.warnings + ["grasps held back: " + "; ".join(held_info.warnings)]
            return new, out
        held_info.grasp_lag = float(np.linalg.norm(state.x[g] - control.grasp_targets, axis=1).max())
        out = self._combine([held_info], failed=info)
        out.warnings = [f"grasps held back {1e3 * out.grasp_lag:.3g} mm from their targets after: "
                        + "; ".join(info.warnings)] + held_info.warnings
        return held, out

    def _pulls_apart(self, x: np.ndarray, targets: np.ndarray) -> bool:
        """Whether the targets (g, 3) [m] put two grasped nodes, now at x (g, 3), further apart
        (relative growth above the projection's tolerance): the motion a cloth may not be able to
        follow. A rigid motion of the grasps moves none apart; fewer than two grasped nodes, none."""
        if len(x) < 2:
            return False
        return bool((pdist(targets) > (1.0 + self.solver.tolerance) * pdist(x)).any())

    JUMP_RATIO = 2.0
    """A converged step counts as unconverged (split or held back when it has contacts, else kept with
    a warning) when its positions lie farther from the predicted ones, in the mass metric, than this
    times the previous positions do, where those meet the constraints, no obstacle moves and the
    grasps translate rigidly (the previous positions translated with them); not checked otherwise."""

    def _check_jump(self, model, x_prev: np.ndarray, shift: np.ndarray, x0: np.ndarray, x: np.ndarray,
                    info: StepInfo, t: float) -> None:
        """Mark a converged step (``info``) unconverged when the projection jumped: positions x (n, 3)
        [m] farther from the predicted x0 (n, 3) [m], in the mass metric of the free nodes, than
        ``JUMP_RATIO`` times the previous positions x_prev (n, 3) [m] translated by ``shift`` (3,) [m]
        (the grasps' translation), plus the projection's accuracy. A heuristic safeguard: the closest
        point of the constraint set to x0 lies no farther than a configuration that meets the
        constraints and contacts, and the linearised projection near a taut, nearly singular
        configuration was seen to land on a far branch of the set (a node thrown decimetres in a step);
        the fast projection is not the closest point. Not checked unless x_prev meets the constraint
        rows and lies outside the surface obstacles at its time t [s] (its self-collisions and the
        translated positions' contacts are not checked)."""
        m = np.where(model.inverse_masses > 0, model.masses, 0.0)
        far = float(np.sqrt(m @ np.einsum("ij,ij->i", x - x0, x - x0)))
        d = x_prev + shift - x0
        ref = float(np.sqrt(m @ np.einsum("ij,ij->i", d, d)))
        # below the projection's accuracy (a cloth at rest) the ratio is round-off
        floor = self._accuracy_length * float(np.sqrt(m.sum()))
        if far <= self.JUMP_RATIO * ref + floor or not self._satisfies_constraints(model, x_prev, t):
            return
        info.converged = False
        info.warnings.append(f"projection jumped ({far / max(ref, 1e-300):.3g} times farther from "
                             "the predicted positions than the previous ones)")

    @property
    def _accuracy_length(self) -> float:
        """The projection's accuracy as a length [m]: its relative tolerance times the shortest element edge."""
        return self.solver.tolerance * float(self._edges.rest_length.min()) if self._edges.count else 0.0

    def _satisfies_constraints(self, model, x: np.ndarray, t: float) -> bool:
        """Whether positions x (n, 3) [m] meet the model's constraint rows to the solver's tolerance
        (relative residual, as ``StepInfo.residual``) and lie outside the surface obstacles at time t [s]
        (to the tolerance times the shortest element edge)."""
        rows = model.active_rows
        if rows.size:
            _, c = self.solver._evaluator(model.constraints, rows)(x)
            if float(np.max(np.abs(c) / model.constraints.scale[rows])) > self.solver.tolerance:
                return False
        xs = model.surface_positions(x)
        return all(float(o.signed_distance(xs, t).min()) >= -self._accuracy_length for o in model.obstacles)

    def _advance(self, state: State, control: Control, dt: float) -> tuple[State, StepInfo]:
        """One step of size dt to ``control`` (no substepping; wall_time not set)."""
        model = self._model
        t_new = state.t + dt
        with numerical_failures("the implicit-Euler prediction", t_new):
            x0 = self.predict(state, control, dt)
        with np.errstate(over="ignore", invalid="ignore"):
            squares = float(np.einsum("ij,ij->", x0, x0))
        if not np.isfinite(squares):  # the projection's constraints square lengths: they would overflow
            size = np.abs(x0).max(axis=1)
            bad = int(np.argmax(np.where(np.isfinite(size), size, np.inf)))
            raise SimulationDiverged(
                f"the unconstrained prediction overflowed at t = {t_new:.6g} s (node {bad} predicted at "
                f"|x| = {size[bad]:.3g} m; dt = {dt:.3g} s, largest |v| = {float(np.abs(state.v).max()):.3g} m/s): "
                "reduce dt or check the scene's values (gravity, virtual density, grasp motions)")
        with numerical_failures("the constraint projection", t_new):
            res, held, cstats = self._project_step(model, state, x0, t_new, dt)
        x = res.x
        relaxed, rel = False, None
        if self.membrane_relaxation is not None and res.status is SolveStatus.CONVERGED and np.isfinite(x).all():
            with numerical_failures("the membrane relaxation", t_new):
                rel = self.membrane_relaxation.relax(
                    model, state.x, x, t_new, dt,
                    collisions=getattr(cstats, "observation", None),
                    active_keys=cstats.active_keys if cstats is not None else None)
            x, relaxed = rel.x, rel.accepted
        if not np.isfinite(x).all():
            bad = int(np.flatnonzero(~np.isfinite(x).all(1))[0])
            raise SimulationDiverged(f"node {bad} became non-finite at t = {t_new:.6g} s; reduce dt or check the scene")
        v = (x - state.x) / dt  # Algorithm 2, line 26; includes the membrane relaxation
        new = State(x, v, t_new, state.step_index + 1, factor_point=getattr(res, "factor_point", None),
                    held_edges=held)
        info = StepInfo(t=t_new, iterations=res.iterations, residual=res.residual,
                        converged=res.status is SolveStatus.CONVERGED,
                        factorizations=getattr(res, "factorizations", 0), membrane_relaxed=relaxed)
        if relaxed:  # the residual of the returned positions (the relaxation kept it within the tolerance)
            info.residual = rel.residual
        elif rel is not None:
            info.warnings.append(f"membrane relaxation rejected: {rel.reason}")
        if cstats is not None:
            new.contact_keys = cstats.active_keys
            info.set_contact(cstats)
        info.held_edges = int(held.size)
        g = model.grasp_nodes
        if g.size:
            info.grasp_forces = grasp_forces(model, g, state.v, x0, x, v, dt, self.predictor.gravity,
                                             getattr(res, "contact_impulse", None))
        if not info.converged:
            info.warnings.append(f"projection {res.status.value} at residual {res.residual:.3g}")
        elif self._static_obstacles:
            g = model.grasp_nodes  # the previous positions moved with grasps that translate rigidly
            d = x0[g] - state.x[g]
            if not g.size or np.abs(d - d.mean(axis=0)).max() <= 1e-12 + 1e-9 * np.abs(d).max():
                self._check_jump(model, state.x, d[0] if g.size else np.zeros(3), x0, x, info, state.t)
        if self.area_diagnostics:
            self._surface_shape.fill(info, self.model.surface_positions(x))
        return new, info

    def _project_step(self, model, state: State, x0: np.ndarray, t_new: float, dt: float):
        """The projection of the predicted positions x0 (n, 3) [m] of a step from ``state`` to t_new [s]:
        (SolveResult, the held element edges, ContactStats or None)."""
        cstats = None
        held = state.held_edges
        fast = None
        if self.contact_solver is not None and model.has_contacts:
            res, cstats = self.contact_solver.solve(model, state.x, x0, t_new, dt, state.contact_keys,
                                                    held=state.held_edges)
            held = cstats.held
        else:
            res, held, beyond = self.project_limited(x0, dt, state.factor_point, state.held_edges)
            if beyond.size:
                # edges beyond their stretch bound: continue from the fast projection with the limits
                # as inequality rows of the contact QPs, which choose the edges to hold
                fast = res
                res, cstats = self.contact_solver.solve(model, state.x, fast.x, t_new, dt,
                                                        state.contact_keys, held=held)
                held = cstats.held
                res.iterations += fast.iterations
                cstats.factorizations += fast.factorizations
                res.factor_point = fast.factor_point
        return res, held, cstats
