"""Projection with contacts and friction in one pass (thesis §3.4, Algorithm 2; seed 000 §4–5).

Iteration j linearises inextensibility and contacts around φ_j and solves the QP (seed 000 eq. 5)

    min ½ Δφᵀ M Δφ − Δφᵀ f_j   s.t.  C(φ_j) + ∇C Δφ = 0,   H(φ_j) + ∇H Δφ ≥ 0,

with a QP solver (active-set by default, interior point as baseline). As in eq. 5 friction is
lagged one iteration and enters the QP as a linear term f_j, and friction is bounded by the normal
impulse, β_i = ‖Γ_i ∇H_i‖ (Remark 2.2.3). Three changes to the literal scheme, each found
necessary by a test (docs/design/friction.md):

1. Normal impulses are re-solved by every QP: the linear term withdraws the impulses Γ_i n_i of
   the previous QP and the new multipliers are the totals (a contact that stops pushing carries no
   friction; Γ is not an ever-growing sum of increments).
2. The friction impulses are not μΓ against the lagged velocity (eq. 3 holds only while sliding):
   before each QP they are computed from Coulomb's law with maximal dissipation for the current Γ
   (:func:`~isocloth.solvers.friction.solve_disc_friction`), with the tangential Delassus operator
   of the contacts once the working constraints are eliminated, i.e. the exact linear response of
   the next QP's slips to friction (:meth:`~isocloth.solvers.active_set.WorkingFactor.compliance`),
   and the linear change of Γ with friction. A contact sticks when the impulse that stops its slip
   relative to the obstacle surface (obstacle velocity included, §6.2) lies in the disc μΓ_i, else
   it slides with μΓ_i against its slip (per-contact local problems in Gauss–Seidel sweeps, as in
   Li et al. 2018, on the dual form). A small proximal term keeps the statically indeterminate
   part of the forces (flat cloth on a plane) from jumping between iterations.
3. The QP receives the change of the friction impulses since the previous QP.

This staggers a normal QP and a friction problem (as in Kaufman et al. 2008, "Staggered
projections"); its fixed points satisfy Signorini, the Coulomb cone and maximal dissipation.
The staggering runs to convergence at each linearisation (the friction loop): with the one
factorization of the linearisation's Delassus matrix, QP and friction problem alternate from φ_j
(each QP warm-started from the previous one's working set through bordered updates, the friction
problem's Delassus operator that of the QP's working set, ``_Bordered.contact_compliance``) until
friction settles at the QP's iterate, converges slowly, a stretch limit enters the working set or
``friction_loop`` QPs were solved; then the constraints are linearised again. A linearisation
whose friction loop settled needs no new friction problem at its end if the rows carrying friction
are the same: only the constraint residuals and gaps are checked there.

Stopping (eq. 6): relative inextensibility residual ≤ tolerance (ε0), min H ≥ −ε1, and friction
settled (ε2 = ``slip_tolerance``): the pending friction change would move no contact point by more
than ε2, or the last QP moved no node by more than ε2 (eq. 6 literally).

Self-collisions and thin obstacles (seed 000 §3, §4.1; thesis §3.4.1). With a collision detector
(``model.collision_detector``), every iteration detects Collisions_ω(φⁿ →Δt φ_j) with the proximity
parameter ω and adds the rows (node–face, edge–edge, obstacle point–face and segment–edge, with
frozen normals and weights) to the observation set of the step (:class:`CollisionSet`: it only
grows; a pair found again replaces its row). They are stacked with the node–obstacle contacts in
every QP (:class:`~isocloth.contact.rows.ContactRows`); being linear in φ, their linearisation is
exact. Friction acts on them like on contacts, on the weighted relative slip Σ w_i Δx_i with the
row's μ (cloth–cloth ``mu_cloth`` or the obstacle's). When the stopping criteria hold, the final
check detects crossings with ω = 0 on the same broad-phase candidates; if a pair crossed, the step
restarts from φ0 with ω ← ``omega_decay``·ω, keeping the observation set plus the crossing rows
(at most ``max_restarts`` times; seed 000 §4.1). Rows whose weights sit only on grasped nodes are
dropped (the solver cannot act on them).

Element length limits (``model.stretch_limits``, :mod:`isocloth.fem.stretch_limits`) are linearised
inequality rows of the same QPs near their bound (μ = 0). A limit in a QP's working set is held for
the rest of the step (limits entering and leaving every QP stalled the staggered friction iteration)
as a compliant row with a slack coordinate (:meth:`ContactProjection._with_slack`), and the QP steps are
halved while the violation grows above the tolerance (docs/design/constraint-model.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from isocloth.contact.contacts import mesh_faces
from isocloth.contact.rows import ContactRows, inequality_rows, stretch_rows_of
from isocloth.fem.nonconforming import EDGE_JUMP_WEIGHT
from isocloth.contact.self_collision import KIND_STRETCH_LIMIT, CollisionRows, CollisionSet, collision_keys
from isocloth.solvers.active_set import SolverActiveSet, WorkingFactor
from isocloth.solvers.budget import check_budget
from isocloth.solvers.friction import FrictionImpulses
from isocloth.solvers.linalg import SPDFactorCache
from isocloth.solvers.result import IterLog, SolveResult, SolveStatus
from isocloth.step.diagnostics import ContactDiagnostics

__all__ = ["ContactProjection", "ContactStats"]

_SLOW_FRICTION_LOOP = 0.5
"""A friction loop stops (and the constraints are linearised again) when a friction change is more than
this fraction of the previous one."""


@dataclass(kw_only=True)
class ContactStats(ContactDiagnostics):
    """Per-step contact statistics (fields of :class:`~isocloth.step.diagnostics.ContactDiagnostics`,
    copied into StepInfo), the keys of the final working set (warm start of the next step), the
    step's observation set of collision rows (None without collision detection; the membrane
    relaxation keeps them, ``isocloth.step.membrane_relaxation``) and the element edges held at
    their stretch bound for the next step (``isocloth.fem.stretch_limits``)."""

    active_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    observation: CollisionRows | None = None
    held: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


@dataclass
class _Pass:
    """Outcome of one pass of the iteration (from φ0 to a fixed point or the iteration cap)."""

    x: np.ndarray
    lam: np.ndarray
    status: SolveStatus
    keys_W: np.ndarray
    rows: ContactRows | None
    crossings: CollisionRows
    log: IterLog
    held: np.ndarray
    contact_impulse: np.ndarray


@dataclass
class ContactProjection:
    """Fast projection with Signorini contacts, self-collisions and Coulomb friction.

    Parameters (numerics only)
    ----------
    qp_solver : SolverActiveSet or SolverInteriorPoint
    tolerance : float, ε0 as a relative constraint residual (as in SolverProjection)
    penetration_tolerance : float [m], ε1
    slip_tolerance : float [m], ε2: friction is settled when its pending change moves no contact
        point by more than this, or the last QP moved no node by more (1e-8 m: a slip-velocity
        error of 1e-6 m/s at dt = 10 ms)
    slip_relative_tolerance : float, a contact that slips by s in the step is settled when the
        pending change moves it by at most this × |s| (a sliding contact's friction only needs its
        direction to this accuracy; sticking contacts, s ≈ 0, keep ε2)
    max_iterations : int, cap on linearisations per pass (each with its friction loop)
    margin : float [m], contact detection distance around obstacles
    friction_tolerance : float [m], slip change at which the Gauss–Seidel sweeps of the friction
        problem stop; friction_sweeps : int, their cap
    normal_coupling : bool, let the friction problem predict the change of the normal impulses
        with friction (faster convergence where friction changes the cloth's tension)
    face_midpoints : bool, add a contact row at the centroid of every face near an obstacle
        (:func:`~isocloth.contact.contacts.detect_midpoint_contacts`): on coarse meshes an obstacle
        smaller than an element (a needle tip, a thin bar) otherwise passes between the nodes
        (thesis Remark 3.2.1). Rebuilt at every iteration, counted with the collision rows.
    divergence_ratio : float, a pass stops (status STALLED) when the relative residual exceeds this
        multiple of its value at φ0 (or of the tolerance): the iteration is diverging
    friction_proximal : float, weight ρ/max diag(D) of the proximal term ½ρ‖F − F_prev‖² of the
        friction problem (0 disables it; it vanishes at the fixed point)
    friction_loop : int, cap on the QPs of one linearisation's friction loop (1: every QP follows a
        new linearisation, the staggered scheme without the loop)

    Self-collision physics (τ0, ω, its decay, restarts, μ_cloth) lives in
    ``model.self_collision`` (:class:`~isocloth.model.SelfCollisionOptions`).
    """

    qp_solver: object = field(default_factory=SolverActiveSet)
    tolerance: float = 1e-3
    penetration_tolerance: float = 1e-4
    slip_tolerance: float = 1e-8
    slip_relative_tolerance: float = 1e-3
    max_iterations: int = 50
    margin: float = 0.01
    friction_tolerance: float = 1e-11
    friction_sweeps: int = 500
    normal_coupling: bool = True
    friction_proximal: float = 1e-3
    divergence_ratio: float = 1e3
    face_midpoints: bool = False
    friction_loop: int = 20
    _cache: SPDFactorCache = field(default_factory=SPDFactorCache, repr=False)

    def __post_init__(self) -> None:
        if int(self.friction_loop) < 1:
            raise ValueError(f"friction_loop must be >= 1 (QPs per linearisation), got {self.friction_loop}")

    def _factor(self, w3, A_E, A_I, working, stats) -> WorkingFactor:
        """A factorization of the working set's Delassus matrix, counted in ``stats.factorizations``."""
        stats.factorizations += 1
        if isinstance(self.qp_solver, SolverActiveSet):
            return self.qp_solver.factorize(w3, A_E, A_I, working)
        return WorkingFactor(w3, A_E, A_I, working, cache=self._cache)

    def solve(self, model, x_prev: np.ndarray, x0: np.ndarray, t: float, dt: float,
              warm_keys: np.ndarray | None = None, held: np.ndarray | None = None) -> tuple[SolveResult, ContactStats]:
        """Project x0 onto inextensibility, contacts and collision constraints at time t (end of
        the step).

        Parameters
        ----------
        model : ClothModel (``obstacles``, ``collision_detector``, ``self_collision``)
        x_prev : (n, 3) float64 [m], φ^n (for velocities and continuous collision detection)
        x0 : (n, 3) float64 [m], unconstrained positions (grasped nodes at their targets)
        t : float [s]; dt : float [s]
        warm_keys : row keys active at the previous step (warm start, Remark 5.3.1)
        held : (h,) int64, element length limits held at their bound at the previous step
            (``State.held_edges``; ignored without ``model.stretch_limits``). Limits enter the QPs
            as inequality rows near their bound; those in a QP's working set are held (compliant
            rows, ``material.tensile_stiffness``) for the rest of the step; at the end a held limit whose multiplier does not hold
            its edge back is released (``ContactStats.held``). A pass that fails with held rows
            is redone with every limit an inequality row (``docs/design/constraint-model.md``).

        Returns
        -------
        (SolveResult, ContactStats); ``status`` is MAX_ITERATIONS also when crossings remain after
        the last restart (``ContactStats.crossings`` > 0).
        """
        det = model.collision_detector
        opts = model.self_collision
        stats = ContactStats()
        keys_W = np.zeros(0, dtype=np.int64) if warm_keys is None else np.asarray(warm_keys, dtype=np.int64)
        collisions = CollisionSet() if det is not None else None
        omega = float(opts.omega) if det is not None else float("nan")
        passes = opts.max_restarts + 1 if det is not None else 1
        iterations = 0
        held = np.zeros(0, dtype=np.int64) if held is None or model.stretch_limits is None else \
            np.asarray(held, dtype=np.int64)
        for attempt in range(passes):
            out = self._pass(model, x_prev, x0, t, dt, keys_W, det, omega, collisions, stats, held)
            iterations += len(out.log.residuals) - 1
            if out.status is not SolveStatus.CONVERGED and model.stretch_limits is not None:
                # a pass that fails with held limits (with hard held rows: QP steps of 1e4 m after a
                # garment landed on itself) is redone with every limit an inequality row
                warm = np.union1d(keys_W, collision_keys(KIND_STRETCH_LIMIT, held, np.zeros_like(held)))
                retry = self._pass(model, x_prev, x0, t, dt, warm, det, omega, collisions, stats,
                                   np.zeros(0, dtype=np.int64), hold=False)
                iterations += len(retry.log.residuals) - 1
                if retry.status is SolveStatus.CONVERGED or retry.log.residuals[-1] < out.log.residuals[-1]:
                    out = retry
            keys_W, held = out.keys_W, out.held
            if out.crossings.count == 0 or out.status is not SolveStatus.CONVERGED or attempt == passes - 1:
                # restarts only follow a converged pass: the crossings of an unconverged iterate are
                # not trustworthy, and restarting from them made a failing step diverge (hit-a2);
                # the stepper splits such a step instead (Stepper.max_substep_depth)
                break
            # a pair crossed although every iteration detected with ω: restart from φ0 with a smaller
            # ω, the crossing rows constrained from the start (seed 000 §4.1, Remark 3.2)
            collisions.add(out.crossings)
            omega *= opts.omega_decay
            stats.restarts += 1
        status = out.status
        stats.crossings = out.crossings.count
        if stats.crossings:
            status = SolveStatus.MAX_ITERATIONS
        stats.omega = omega
        R = out.rows
        if R is not None:
            stretch, _ = stretch_rows_of(R)  # stretch limits are counted in held_edges only
            stats.contact_count = R.count - int(stretch.sum())
            stats.min_gap = float(R.gap[~stretch].min()) if stats.contact_count else float("inf")
            stats.collision_rows = R.self_count - int(stretch.sum())
            working_limits = int(np.count_nonzero(np.isin(keys_W, R.keys[stretch])))  # a pass without holding
            stats.active_collisions = int(np.count_nonzero(keys_W < 0)) - working_limits
        stats.active_keys = np.array(sorted(keys_W.tolist()), dtype=np.int64)
        stats.active_contacts = int(stats.active_keys.size) - (working_limits if R is not None else 0)
        stats.observation = collisions.rows if collisions is not None else None
        if held.size:  # M Δφ = A_Eᵀ ζ: an upper bound with Σζ > 0 pushes the ends apart (a lower one with
            # Σζ < 0 pulls them together): it is not holding the edge back, release it
            held = held[model.stretch_limits.sign[held] * out.lam[model.constraint_count + held] <= 0.0]
        stats.held, stats.held_edges = held, int(held.size)
        return SolveResult(x=out.x, lam=out.lam, status=status, iterations=iterations,
                           residual=out.log.residuals[-1], log=out.log, contact_impulse=out.contact_impulse), stats

    @staticmethod
    def _step_length(model, x, dx, rows, residuals, soft, dsoft, limited, tolerance) -> float:
        """Backtracking for models with length limits: the QP step is halved (≤ 3 times) while the
        largest relative violation of the rows (``rows`` of ``model.held_constraints``; ``soft`` and
        ``dsoft`` (k,): the compliant part α λ of each row, 0 for hard rows, and its change by the
        step) and of the limits that were inequality rows of the QP (``limited``, limit indices)
        exceeds twice the largest of the last three iterates' (``residuals``, the last one x's; the rule of
        :class:`~isocloth.solvers.projection.SolverProjection`) and the ``tolerance``. Full QP steps
        made strained starts diverge; below the tolerance a step is never shortened, since the
        friction iteration expects whole QP steps (a sheet on a μ = 0.5 incline kept sliding)."""
        cons, lim = model.held_constraints, model.stretch_limits

        def merit(y, t):
            C = cons.value(y)[rows] - (soft + t * dsoft)
            return max(float(np.max(np.abs(C) / cons.scale[rows], initial=0.0)),
                       float(np.max(lim.violation(y)[limited], initial=0.0)))

        # the rows' residual at x is residuals[-1]; only its limits' violation is new
        ref = max(2.0 * max(max(residuals[-3:]), float(np.max(lim.violation(x)[limited], initial=0.0))),
                  tolerance)
        step = 1.0
        for _ in range(3):
            if merit(x + step * dx, step) <= ref:
                break
            step *= 0.5
        return step

    @staticmethod
    def _with_slack(w3, A_E, A_I, first: int, alpha):
        """The QP's inverse masses and rows with one slack coordinate per compliant equality row:
        rows ``first`` … of A_E (m_E, 3n) get the column −1 of a coordinate of inverse mass
        ``alpha`` (h,) [m²/kg] (None: no compliant rows, inputs returned). Minimising
        ½ Δsᵀ α⁻¹ Δs with the row C + ∇C Δφ − Δs = 0 is the compliant row C = α λ."""
        if alpha is None or not alpha.size:
            return w3, A_E, A_I
        h = alpha.size
        P = sp.csr_matrix((np.full(h, -1.0), (first + np.arange(h), np.arange(h))), shape=(A_E.shape[0], h))
        return (np.concatenate([w3, alpha]), sp.hstack([A_E, P], format="csr"),
                sp.hstack([A_I, sp.csr_matrix((A_I.shape[0], h))], format="csr"))

    @staticmethod
    def _pad(f: np.ndarray, w: np.ndarray) -> np.ndarray:
        """f (3n,) extended by zeros to the length of ``w`` (slack coordinates carry no force)."""
        return f if f.size == w.size else np.concatenate([f, np.zeros(w.size - f.size)])

    def _pass(self, model, x_prev, x0, t, dt, keys_W, det, omega, collisions, stats, held,
              hold: bool = True) -> _Pass:
        """One iteration of thesis Algorithm 2 from φ0 (seed 000 §4.1); ``held`` (h,) int64: the
        element length limits held as equality rows; with ``hold`` (and the active-set solver) the
        limits in a QP's working set join them for the rest of the pass."""
        # the stretch-limit rows of held edges live in model.held_constraints; the plain
        # constraints (the same rows without them) are cheaper to evaluate while none is held
        cons = model.held_constraints if held.size else model.constraints
        rows = model.rows_holding(held)
        limits = model.stretch_limits
        # the held limits are compliant rows C_e = s_e (:meth:`StretchLimits.compliance`), solved
        # with one slack coordinate s_e of inverse mass α_e each: row C_e − s_e = 0
        soft = np.zeros(limits.count if limits is not None else 0)
        # the nonconforming model's jumps as compliant rows (or None), in the edge form: one vector row
        # per interior edge on four midpoints. Its energy ½ k w_e ‖D_e φ‖² has the zero set of the
        # predictor's corner form (ClothModel.conformity) and its cost for triangles counter-rotating
        # about a vertex, while a corner row reaches the vertex's whole fan (docs/design/nonconforming.md §4)
        jump = model.jump_rows
        soft_jump = np.zeros(jump.shape[0]) if jump is not None else None
        # slack inverse masses α = 1 / (w_e k dt²): the rows' energy over the step is dt² · ½ k w_e ‖D_e φ‖²
        jump_alpha = (np.full(jump.shape[0], 1.0 / (EDGE_JUMP_WEIGHT * dt * dt * model.conformity_stiffness))
                      if jump is not None else None)
        nA = model.active_rows.size
        n = x0.shape[0]
        w = model.inverse_masses
        w3 = np.repeat(w, 3)
        free_mask = w > 0
        scale = cons.scale[rows]
        x = np.array(x0, dtype=np.float64, copy=True)
        log = IterLog()
        lam = np.zeros(model.held_constraints.row_count)
        fric = FrictionImpulses()
        status = SolveStatus.MAX_ITERATIONS
        R = None
        crossings = CollisionRows.empty()
        step_max = np.inf
        A_coll = None  # Jacobian of the collision rows (constant while the set does not change)
        faces = mesh_faces(model.surface_mesh) if self.face_midpoints and model.obstacles else None
        # collisions are detected on the cloth's surface (the nonconforming model's ghost: rows on its
        # vertices act on the nodes through model.surface_map, see inequality_rows)
        surface_free = model.surface_free_mask
        xs_prev = model.surface_positions(x_prev)
        best = (np.inf, None, None, None, None, None)  # smallest residual after a QP: returned if not converged
        contact_impulse = np.zeros((n, 3))  # Σ of the QPs' A_Iᵀγ + f (contact rows and friction)
        settled_keys = None  # row keys of the linearisation whose friction loop settled at the current x
        grasped = not free_mask.all()  # only the forces of grasps use it (isocloth.step.grasp_forces)
        for j in range(self.max_iterations + 1):
            check_budget()
            C, J = cons.value_and_jacobian(x)
            c = C[rows]
            if held.size:
                c[nA:] -= soft[held]
            A_E = J[rows]
            res = float(np.max(np.abs(c) / scale)) if rows.size else 0.0
            tic = time.perf_counter()
            cand = None
            if det is not None:
                # Collisions_ω(φⁿ →Δt φ_j) join the observation set (thesis Algorithm 2, lines 2, 12)
                cand, found = collisions.observe(det, xs_prev, model.surface_positions(x), omega=omega, t_prev=t - dt,
                                                 t=t, free_mask=surface_free,
                                                 penetration_tolerance=self.penetration_tolerance)
                if found:
                    A_coll = None
            R, A_I, A_coll = inequality_rows(model, x, t, self.margin, collisions.rows if collisions is not None
                                             else None, faces, A_coll, held, x_prev=x_prev, t_prev=t - dt)
            stats.detection_time += time.perf_counter() - tic
            held_alpha = model.held_compliance(held, dt) if held.size else None
            if jump is not None:  # compliant jump rows after the held rows: D φ − s = 0
                A_E = sp.vstack([A_E, jump], format="csr")
                c = np.concatenate([c, jump @ x.ravel() - soft_jump])
                held_alpha = jump_alpha if held_alpha is None else np.concatenate([held_alpha, jump_alpha])
            w_q, A_E_q, A_I_q = self._with_slack(w3, A_E, A_I, nA, held_alpha)
            stretch, stretch_index = stretch_rows_of(R)
            min_gap = float(R.gap[~stretch].min()) if R.count > stretch_index.size else np.inf
            log.residuals.append(res)
            keys = R.keys
            working = np.flatnonzero(np.isin(keys, keys_W)) if keys_W.size else np.zeros(0, dtype=np.int64)
            factor = None
            f = np.zeros((n, 3))
            # ε1 applies once a QP has been solved; before that any penetration triggers one (a
            # tolerated penetration left for the next step would make the contact velocity jitter)
            gap_ok = min_gap >= (-self.penetration_tolerance if j > 0 else 0.0)
            if limits is not None:  # every edge not held within its stretch bound to half the relative tolerance
                viol = limits.violation(x)
                viol[held] = 0.0
                gap_ok = gap_ok and float(viol.max(initial=0.0)) <= 0.5 * self.tolerance
            settled = True
            if settled_keys is not None and res <= self.tolerance and gap_ok \
                    and np.array_equal(settled_keys, keys[fric.rows(R)]):
                pass  # friction settled at this iterate in the last linearisation's friction loop
            elif fric.has_impulses():
                if fric.rows(R).size:
                    # the Delassus operator is recomputed at every linearisation (with the factor the
                    # next QP uses): reusing it across iterations made the friction iteration stall on
                    # cloth lying flat on a plane, whose nearly dependent rows respond differently at
                    # each linearisation (docs/design/friction.md)
                    factor = self._factor(w_q, A_E_q, A_I_q, working, stats)
                settled = fric.update(R, x, x_prev, dt, factor, self, f, stats)
            # friction has stabilised (eq. 6, ε2): its pending change moves no contact point by more
            # than ε2, or the last QP, which applied the previous change, moved no node by more than
            # ε2 (the Delassus prediction can overstate motions along nearly dependent rows)
            settled = settled or (j > 0 and step_max <= self.slip_tolerance)
            done = res <= self.tolerance and gap_ok and settled
            if j > 0 and res < best[0]:
                best = (res, x, lam.copy(), keys_W, R, contact_impulse.copy())
            if j > 0 and not (res <= self.divergence_ratio * max(log.residuals[0], self.tolerance)):
                # the linearised QPs diverge (residual far above the start's): stop, keep the status
                # MAX_ITERATIONS so the stepper can split the step; never return this iterate's
                # successors, whose growing swept boxes made collision detection quadratic
                status = SolveStatus.STALLED
                break
            if done or j == self.max_iterations:
                if cand is not None:
                    # final check with ω = 0 on the same candidates (the ω-box contains the 0-box)
                    tic = time.perf_counter()
                    crossings = det.narrow_phase(cand, omega=0.0, proximity=False)
                    if crossings.count:
                        crossings = crossings.take(crossings.movable(surface_free))
                    stats.detection_time += time.perf_counter() - tic
                if done:
                    status = SolveStatus.CONVERGED
                break
            fric.commit()
            withdraw = np.zeros((n, 3))
            fric.withdraw_normal(withdraw)  # the normal impulses that x_j already includes
            # the friction loop of this linearisation: QP and friction problem alternate with one
            # factorization until friction settles at the QP's iterate (docs/design/friction.md)
            x_j, soft_j, soft_jump_j, f_cum = x, soft.copy(), soft_jump, f
            settled_keys, last_change, qp = None, np.inf, None
            active_set = isinstance(self.qp_solver, SolverActiveSet)
            for k in range(self.friction_loop):
                f = f_cum + withdraw
                if active_set:
                    if factor is None:
                        factor = self._factor(w_q, A_E_q, A_I_q, working, stats)
                    qp = self.qp_solver.solve_qp(w_q, self._pad(f.ravel(), w_q), A_E_q, c, A_I_q, R.gap, working,
                                                 factor=factor, start=qp.state if qp is not None else None)
                else:
                    qp = self.qp_solver.solve_qp(w_q, self._pad(f.ravel(), w_q), A_E_q, c, A_I_q, R.gap, working)
                dx = qp.dx[:3 * n].reshape(n, 3)
                step = 1.0
                soft = soft_j.copy()
                if limits is not None:
                    ds = np.zeros(rows.size)
                    ds[nA:] = qp.dx[3 * n:3 * n + rows.size - nA]
                    s0 = np.zeros(rows.size)
                    s0[nA:] = soft[held]
                    step = self._step_length(model, x_j, dx, rows, log.residuals, s0, ds, stretch_index,
                                             self.tolerance)
                    soft[held] += step * qp.dx[3 * n:3 * n + rows.size - nA]
                x = x_j + step * dx
                if jump is not None:
                    soft_jump = soft_jump_j + step * qp.dx[w_q.size - jump.shape[0]:]
                fric.set_normal_impulse(R, qp.gamma)
                stats.qp_iterations += qp.iterations
                stats.constraints_added += qp.added
                stats.constraints_removed += qp.removed
                stats.factorizations += qp.factorizations
                stats.updates += qp.updates
                # a new linearisation when a stretch limit enters the working set (the rows change when it is
                # held), the QP refactorized, or nothing carries friction
                if (k == self.friction_loop - 1 or (active_set and qp.state is None) or np.any(stretch[qp.working])
                        or not fric.rows(R).size):
                    break
                # friction for the normal impulses and slips of this iterate, with the QP's working set
                if not active_set and factor is None:
                    factor = self._factor(w_q, A_E_q, A_I_q, working, stats)
                response = qp.state if active_set else factor.bordered(qp.working)
                f_inc = np.zeros((n, 3))
                if fric.update(R, x, x_prev, dt, response, self, f_inc, stats):
                    fric.discard()
                    settled_keys = keys[fric.rows(R)]
                    break
                change = float(np.abs(f_inc).max())
                if change > _SLOW_FRICTION_LOOP * last_change:
                    fric.discard()  # converging slowly: linearise again
                    break
                last_change = change
                fric.commit()
                f_cum = f_cum + f_inc
            if grasped:
                contact_impulse += step * ((A_I_q.T @ qp.gamma)[:3 * n].reshape(n, 3) + f)
            step_max = float(np.abs(x - x_j).max()) if x.size else 0.0
            lam[rows] += qp.zeta_E[:rows.size]
            keys_W = keys[qp.working]
            taut = qp.working[stretch[qp.working]]
            if taut.size and hold and active_set:
                # stretch limits in the working set are held, as equality rows, for the rest of the
                # step: the working set of the limits only grows within a step (released at its end)
                e = stretch_index[np.searchsorted(np.flatnonzero(stretch), taut)]
                # the multiplier ζ of ‖p_a − p_b‖² − b² that exerts the same force as γ on the row
                lam[model.constraint_count + e] -= limits.sign[e] * qp.gamma[taut] / (2.0 * limits.bound[e])
                held = np.union1d(held, e)
                cons, rows = model.held_constraints, model.rows_holding(held)
                scale = cons.scale[rows]
                keys_W = keys_W[~stretch[qp.working]]
        if status is not SolveStatus.CONVERGED and best[1] is not None and best[0] < log.residuals[-1]:
            res_b, x, lam, keys_W, R, contact_impulse = best
            log.residuals.append(res_b)
        return _Pass(x, lam, status, keys_W, R, crossings, log, held, contact_impulse)

