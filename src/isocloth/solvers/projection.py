"""Fast projection onto the inextensibility constraints (Goldenthal et al. 2007; thesis §2.6.1).

Problem (thesis eq. 2.21): min_φ (φ − φ0)ᵀ M (φ − φ0)  s.t.  C(φ) = 0.
Sequence of linearised QPs: min Δφᵀ M Δφ s.t. C(φ_j) + ∇C(φ_j) Δφ = 0, whose solution is

    (∇C M⁻¹ ∇Cᵀ) Δλ = C(φ_j),    Δφ = −M⁻¹ ∇Cᵀ Δλ.

Prescribed (grasped) nodes have zero inverse mass, i.e. their positional constraints are
eliminated exactly. At flat configurations ∇C M⁻¹ ∇Cᵀ is singular (out-of-plane columns of
∇C vanish); a relative diagonal shift ε keeps it factorable, and components of C in its null
space produce no motion because Δφ = −M⁻¹∇CᵀΔλ. A backtracking step (halving while the scaled
residual norm grows past twice the largest of the last three iterates' norms, at most 3 times)
keeps large, fast folds from oscillating.

Factor reuse. Large systems are factored by CHOLMOD, whose numeric factorization costs as much as
dozens of triangular solves with it. An iteration may instead keep the last factorization
S_f = S(φ_f) + εI, computed at an earlier iterate φ_f, possibly of the previous time step, and use it
as the preconditioner of conjugate gradients on the current Newton system (Saad, *Iterative Methods
for Sparse Linear Systems*, 2003, §9.2; the "inexact Newton" step of Dembo, Eisenstat & Steihaug 1982):

    (S(φ_j) + εI) Δλ = C(φ_j)  to a scaled residual of η |C|,   Δφ = −M⁻¹ ∇C(φ_j)ᵀ Δλ,

whose product with S(φ_j) is applied through ∇C without assembling it. The step is then a Newton
step up to that residual; S is refactored at φ_j when conjugate gradients need more than
``KRYLOV_ITERATIONS`` iterations or ∇C has drifted from the factorization's by more than
``reuse_drift``. In the implicit-Euler metric (KKT path) the kept factorization is used for chord
steps instead: Δφ from the KKT solve of φ_f, kept only if it shrinks the scaled residual norm by
``refactor_ratio``, within a time step only, converging to ``chord_tolerance`` × tolerance. φ_f is
returned (``SolveResult.factor_point``) and the stepper carries it in the State, so a step is a
function of its State (resumed runs are bit-identical). Normals of an *earlier* iterate in the mass
metric would act as a force along the motion and change the period of a swinging plate
(docs/design/linear-algebra.md).

Stopping rule: max_r |C_r| / scale_r ≤ tolerance (default 1e-3, the thesis' "relative tolerance
of 0.1 %"), where scale_r is the rest metric magnitude ½(E0+G0) of metric rows and l² of edge
rows (so 1e-3 bounds the relative squared-length error of boundary edges by 0.1 %).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isocloth.solvers.bordered import BorderedSchur
from isocloth.solvers.budget import check_budget
from isocloth.solvers.kkt import KKTSystem
from isocloth.solvers.linalg import DENSE_LIMIT
from isocloth.solvers.result import IterLog, SolveResult, SolveStatus
from isocloth.solvers._schur_kernels import constraint_values
from isocloth.solvers.schur import CHOLMOD_MODES, ORDERINGS, SchurSystem, schur_product

__all__ = ["SolverProjection"]

CACHED_SYSTEMS = 8
"""Linear systems (and constraint evaluators) kept per solver, one per set of enforced rows."""


@dataclass
class SolverProjection:
    """Fast projection solver (equality constraints only).

    Parameters (numerics only; physics lives in Material)
    ----------
    tolerance : float
        Relative residual at which to stop (default 1e-3).
    max_iterations : int
        Cap on linearised QPs per step.
    regularization : float
        Relative diagonal shift of the Schur complement.
    backend : str
        Linear solver backend for :func:`isocloth.solvers.linalg.spd_factor`.
    metric : "auto" | "mass" | "implicit"
        Metric of the projection: the lumped mass (thesis §2.6.1), the implicit-Euler matrix W
        with bending (:mod:`isocloth.solvers.kkt`), or "auto": W when the stepper's predictor has
        a stiffness ratio above ``implicit_metric_ratio``, else the mass.
    implicit_metric_ratio : float
        Threshold of "auto" (see :meth:`isocloth.step.predictor.Predictor.stiffness_ratio`).
    stationarity : float
        0 (default): the fast projection of the thesis (each linearised QP starts from the current
        iterate; stops on the residual alone). > 0: closest-point projection, i.e. SQP on
        min ½|φ − φ0|²_W s.t. C(φ) = 0 with the metric as Hessian, iterated until the Lagrangian
        gradient, as a displacement, is below ``stationarity`` × |φ − φ0|∞. Its fixed points are
        static equilibria; the fast projection's are not (it moves along the normals of its
        iterates, not of its result), which biases quasi-static shapes at large dt
        (docs/design/equilibria.md). It converges linearly, at a rate set by the geometric
        stiffness of the multipliers, and costs several iterations per step.
    min_iterations : int
        Linearised QPs per step even when φ0 already meets the tolerance (default 1). With 0, a
        nearly static sheet falls freely inside the tolerance band until the residual crosses it,
        then is pulled back: a limit cycle that biases quasi-static shapes (near-flat sheets can
        sag by about L√tolerance; tests/physics/test_cantilever.py). Free for dynamic scenes,
        whose steps need at least one iteration anyway.
    reuse_factor : bool
        Keep the last factorization (see the module docstring) when the system is factored
        sparsely (more than ``DENSE_LIMIT`` rows): preconditioned Newton steps in the mass metric,
        chord steps in the implicit one; never in the closest-point mode (``stationarity`` > 0).
        Default True.
    refactor_ratio : float
        Implicit metric: a chord step must reduce the scaled residual norm to at most this
        fraction (in (0, 1)), else S is refactored (default 0.8).
    chord_tolerance : float
        A step whose last correction was taken on the kept factorization (a chord step, or an
        inexact Newton step in the mass metric) stops only at ``chord_tolerance`` × ``tolerance``
        (in (0, 1]; default 0.1): such steps stop just below the tolerance, where an exact Newton
        step usually overshoots it by orders of magnitude, and a residual left in the tolerance band
        keeps nearly static cloth moving (docs/design/linear-algebra.md).
    reuse_drift : float
        The kept factorization is dropped once the iterate's ∇C has moved from the factorization's
        by more than this fraction, max |A(φ − φ_f)| / max |A φ_f| (> 0; default 0.1): bounds the
        age of S_f (docs/design/linear-algebra.md).
    merit_growth : float
        Line search of Newton steps: the step is halved (≤ 3 times) while the scaled residual norm
        exceeds ``merit_growth`` × the largest norm of the last three iterates (≥ 1; default 2).
        1 restores the strictly monotone rule of earlier versions (compare with the current
        iterate only), which took 10.6 instead of 8.9 iterations per step on the 660-node sheet
        of benchmarks/bench_realtime.py.
    cholmod_mode, ordering : str
        Sparse factorization kind and fill-reducing ordering, see
        :class:`isocloth.solvers.schur.SchurSystem` (defaults "auto", "nesdis").
    """

    tolerance: float = 1e-3
    max_iterations: int = 50
    regularization: float = 1e-9
    backend: str = "auto"
    metric: str = "auto"
    implicit_metric_ratio: float = 0.5
    stationarity: float = 0.0
    min_iterations: int = 1
    reuse_factor: bool = True
    refactor_ratio: float = 0.8
    chord_tolerance: float = 0.1
    reuse_drift: float = 0.1
    merit_growth: float = 2.0
    cholmod_mode: str = "auto"
    ordering: str = "nesdis"

    def __post_init__(self):
        if not (self.tolerance > 0):
            raise ValueError(f"tolerance must be > 0, got {self.tolerance}")
        if self.max_iterations < 1:
            raise ValueError(f"max_iterations must be ≥ 1, got {self.max_iterations}")
        if not (self.stationarity >= 0):
            raise ValueError(f"stationarity must be ≥ 0, got {self.stationarity}")
        if self.min_iterations < 0:
            raise ValueError(f"min_iterations must be ≥ 0, got {self.min_iterations}")
        if self.metric not in ("auto", "mass", "implicit"):
            raise ValueError(f"metric must be 'auto', 'mass' or 'implicit', got {self.metric!r}")
        if not (0.0 < self.refactor_ratio < 1.0):
            raise ValueError(f"refactor_ratio must be in (0, 1), got {self.refactor_ratio}")
        if not (0.0 < self.chord_tolerance <= 1.0):
            raise ValueError(f"chord_tolerance must be in (0, 1], got {self.chord_tolerance}")
        if not (self.reuse_drift > 0.0):
            raise ValueError(f"reuse_drift must be > 0, got {self.reuse_drift}")
        if not (self.merit_growth >= 1.0):
            raise ValueError(f"merit_growth must be ≥ 1, got {self.merit_growth}")
        if self.cholmod_mode not in CHOLMOD_MODES:
            raise ValueError(f"cholmod_mode must be one of {CHOLMOD_MODES}, got {self.cholmod_mode!r}")
        if self.ordering not in ORDERINGS:
            raise ValueError(f"ordering must be one of {ORDERINGS}, got {self.ordering!r}")

    def _cached(self, name: str, key, build):
        """The object ``build()`` kept under ``key`` in the cache ``name`` (the last
        ``CACHED_SYSTEMS`` keys): a stretch-limited sheet returns to earlier sets of held rows."""
        cache = self.__dict__.setdefault(name, {})
        if key in cache:
            cache[key] = cache.pop(key)  # most recently used last
        else:
            while len(cache) >= CACHED_SYSTEMS:
                cache.pop(next(iter(cache)))
            cache[key] = build()
        return cache[key]

    def _schur(self, constraints, rows, inv_mass) -> SchurSystem:
        key = (id(constraints), rows.tobytes(), id(inv_mass), self.cholmod_mode, self.ordering)
        return self._cached("_cache", key, lambda: SchurSystem(constraints.pair_row, constraints.pair_node, rows, inv_mass,
                                     constraints.row_count, cholmod_mode=self.cholmod_mode,
                                     ordering=self.ordering))

    def _bordered(self, constraints, rows, appended: int, inv_mass) -> BorderedSchur:
        """The system of ``rows`` whose last ``appended`` rows border the (shared) system of the others."""
        key = (id(constraints), rows.tobytes(), appended, id(inv_mass), self.cholmod_mode, self.ordering)
        base = self._schur(constraints, rows[:rows.size - appended], inv_mass)
        return self._cached("_bordered_cache", key, lambda: BorderedSchur(
            base, constraints.pair_row, constraints.pair_node, rows[rows.size - appended:], inv_mass,
            constraints.row_count))

    def _kkt(self, constraints, rows, inv_mass, metric) -> KKTSystem:
        key = (id(constraints), rows.tobytes(), id(inv_mass), id(metric))
        return self._cached("_kkt_cache", key, lambda: KKTSystem(constraints, rows, metric, inv_mass))

    def _evaluator(self, constraints, rows):
        """A function x -> (A x (P, 3), C(x)[rows] (k,)): one numba pass for the quadratic rows
        of InextensibilityConstraints (A in CSR form), else ``A @ x`` and ``value_from``."""
        key = (id(constraints), rows.tobytes())
        return self._cached("_eval_cache", key, lambda: self._build_evaluator(constraints, rows))[2]

    @staticmethod
    def _build_evaluator(constraints, rows):
        """(constraints, rows, evaluate) for :meth:`_evaluator` (the inputs kept alive while keyed by id)."""
        A = constraints.A
        if (getattr(A, "format", None) == "csr" and A.dtype == np.float64 and A.shape[0] > 0
                and hasattr(constraints, "pair_row") and hasattr(constraints, "C0")):
            indptr, indices = A.indptr, A.indices
            local = np.full(constraints.row_count, -1, dtype=np.int64)
            local[rows] = np.arange(rows.size)
            pr, pn, C0 = constraints.pair_row, constraints.pair_node, np.asarray(constraints.C0, np.float64)

            def evaluate(x):
                x = np.ascontiguousarray(x)
                AX = np.empty((A.shape[0], 3))
                c = np.empty(rows.size)
                constraint_values(indptr, indices, A.data, x, pr, pn, C0, local, AX, c)
                return AX, c
        else:
            def evaluate(x):
                AX = constraints.A @ x
                return AX, constraints.value_from(AX, x)[rows]
        return constraints, rows, evaluate

    @staticmethod
    def _jacobian_times(constraints, AX: np.ndarray, d: np.ndarray) -> np.ndarray:
        """∇C(φ) d for d (n, 3): (m,) with ∇C = 2 [T⊗x, T⊗y, T⊗z] (eq. 2.16), AX = A φ."""
        return np.bincount(constraints.pair_row, weights=2.0 * np.einsum("pd,pd->p", AX, d[constraints.pair_node]),
                           minlength=constraints.row_count)

    @staticmethod
    def _jacobian_transpose_times(constraints, dAX: np.ndarray, lam: np.ndarray, inv_mass: np.ndarray) -> np.ndarray:
        """M⁻¹ (2 [T⊗Δx])ᵀ λ as (n, 3), dAX = A Δφ: a displacement [m] (0 at prescribed nodes)."""
        w = 2.0 * lam[constraints.pair_row][:, None] * dAX
        out = np.zeros((inv_mass.size, 3))
        np.add.at(out, constraints.pair_node, w)
        return out * inv_mass[:, None]

    def solve(self, x0: np.ndarray, inv_mass: np.ndarray, constraints, rows: np.ndarray,
              metric=None, factor_point: np.ndarray | None = None,
              compliance: np.ndarray | None = None, appended: int = 0) -> SolveResult:
        """Project x0 onto C = 0.

        Parameters
        ----------
        x0 : (n, 3) float64
            Unconstrained positions φ0^{n+1} [m] (grasped nodes already at their targets).
        inv_mass : (n,) float64
            Inverse lumped masses [1/kg]; 0 for prescribed nodes.
        constraints : InextensibilityConstraints
            Provides ``A``, ``value_from(AX, x)`` and ``scale``.
        rows : (k,) int64
            Rows to enforce (rows touching at least one free node).
        metric : scipy.sparse matrix (n, n), optional
            Project in this metric W [kg] instead of the lumped mass (e.g. the implicit-Euler
            matrix with stiff bending, see :mod:`isocloth.solvers.kkt`); keep the same object
            between calls so its factorization pattern is reused.
        factor_point : (n, 3) float64, optional
            Positions [m] of a factorization to start from (``factor_point`` of the previous
            step's result, carried by the State). None: the first iteration factors afresh.
            Ignored when factor reuse does not apply.
        compliance : (k,) float64 [m²/kg], optional
            Per-row compliance α ≥ 0 (0 = a hard row): row r then holds C_r(φ) = α_r λ_r (λ > 0
            pulls along −∇C_r), a stiff spring along the row (compliant constraints, Servin et
            al. 2006; XPBD, Macklin et al. 2016 eq. 18). Each linearised QP solves
            (S + diag α) Δλ = C − αλ; the residual is that of C − αλ.
            With ``stationarity`` > 0 the fixed point is the closest point with the spring
            energy C² / (2α) added; in the fast projection the springs act along the normals of the
            iterates (like the hard rows).
        appended : int
            In the mass metric, the last ``appended`` rows are factored as a border of the system
            of the others (:class:`~isocloth.solvers.bordered.BorderedSchur`), which keeps its
            factorization, and its factor point, while the appended set changes (default 0: one
            system of all rows).

        Returns
        -------
        SolveResult
            With ``factorizations`` (numeric factorizations of the whole system or, bordered, of
            its base; a new border alone is not counted) and ``factor_point`` (positions
            of the kept factorization, or None when factor reuse does not apply).

        Raises
        ------
        numpy.linalg.LinAlgError
            If a linearised system cannot be factored (non-finite positions).
        ValueError
            If ``compliance`` has the wrong shape or negative entries, ``factor_point`` does
            not fit x0, or ``appended`` is not in [0, k].
        """
        x0 = np.asarray(x0, dtype=np.float64)
        alpha = None
        if compliance is not None:
            alpha = np.asarray(compliance, dtype=np.float64)
            if alpha.shape != rows.shape or not (alpha >= 0).all():
                raise ValueError(f"compliance must be {rows.shape} and ≥ 0, got shape {alpha.shape}")
            if not alpha.any():
                alpha = None
        soft = np.zeros(rows.size)  # α λ of the compliant rows: the row holds C − soft = 0
        x = x0.copy()
        if not 0 <= appended <= rows.size:
            raise ValueError(f"appended must be in [0, {rows.size}], got {appended}")
        if metric is None:
            system = (self._bordered(constraints, rows, appended, inv_mass) if appended
                      else self._schur(constraints, rows, inv_mass))
            sparse = not system.dense
        else:
            system = self._kkt(constraints, rows, inv_mass, metric)
            sparse = system.size > DENSE_LIMIT
        exact = self.stationarity > 0
        reuse = self.reuse_factor and sparse and not exact
        scale = constraints.scale[rows]
        lam = np.zeros(constraints.row_count)
        log = IterLog()
        numeric = getattr(system, "base", system)  # a bordered system refactors only its border when it can
        factorizations = -numeric.factorizations
        valid = False  # whether the kept factorization may be used for a chord step
        # across steps only in the mass metric, where a chord step moves along the normals of the
        # current iterate (the KKT solve returns the normals of the factorization point)
        across = reuse and metric is None
        evaluate = self._evaluator(constraints, rows)
        if across and factor_point is not None:
            fp = np.asarray(factor_point, dtype=np.float64)
            if fp.shape != x0.shape or not np.isfinite(fp).all():
                raise ValueError(f"factor_point must be finite with the shape of x0 {x0.shape}, got shape "
                                 f"{fp.shape}; it belongs to another model or run: pass None "
                                 "(State.factor_point = None)")
            kept = getattr(system, "factor_x", None)
            if not (system.has_factor and kept is not None and kept.shape == fp.shape and np.array_equal(kept, fp)):
                self._factorize(system, evaluate(fp)[0], fp, alpha)  # e.g. a resumed run: the same factor
            valid = True
        AX, c = evaluate(x)
        res = float(np.max(np.abs(c) / scale)) if rows.size else 0.0
        merit = float(np.linalg.norm(c / scale))
        merits = [merit]
        log.residuals.append(res)
        it = 0
        status = SolveStatus.CONVERGED
        stationary = True
        chord_tol = self.chord_tolerance * self.tolerance
        last_chord = False  # the last correction was a chord step: converge further (see chord_tolerance)
        while (res > (chord_tol if last_chord else self.tolerance) or not stationary
               or (it < self.min_iterations and res > 0.0)):
            check_budget()
            if it >= self.max_iterations:
                if not (res <= self.tolerance and stationary):  # else only short of chord_tolerance
                    status = SolveStatus.MAX_ITERATIONS
                break
            if valid and self._drift(system, AX) > self.reuse_drift:
                valid = False
            fresh = not valid
            if fresh:
                self._factorize(system, AX, x, alpha)
                valid = reuse
            # fast projection (thesis §2.6.1): Δφ from the current iterate, right-hand side C_j;
            # closest point: φ_{j+1} = φ0 + Δ with ∇C_j (φ_{j+1} − φ_j) = −C_j, i.e. right-hand
            # side C_j + ∇C_j (φ0 − φ_j) and the step taken from φ0 (SQP with the metric as Hessian)
            base = x
            rhs = c
            if exact and it > 0:
                base = x0
                rhs = c + soft + self._jacobian_times(constraints, AX, x0 - x)[rows]
            newton = fresh
            if metric is None:
                if fresh:
                    dl = system.solve_factored(rhs)
                else:  # the Newton step, solved by conjugate gradients on the kept factorization
                    target = self.FORCING * res  # also below the tolerance (min_iterations, chord_tolerance)
                    dl = self._krylov_solve(system, AX, rhs, alpha, scale, target)
                    if dl is None:
                        valid = False  # the kept factorization is too far from S(φ_j): refactor
                        continue
                    newton = True
                dx = system.displacement(AX, dl)  # normals at the current iterate
            else:
                dx, dl = system.solve_factored(rhs)
            direction = base + dx - x
            # backtracking: halve while the residual norm is above the reference (≤ 3 times); a
            # chord step must in the end shrink the norm by refactor_ratio, else it is discarded
            if newton:
                ref = merit if self.merit_growth == 1.0 else self.merit_growth * max(merits[-3:])
            else:
                ref = self.refactor_ratio * merit
            step = 1.0
            for _ in range(4):
                x_try = x + step * direction
                AX_try, c_try = evaluate(x_try)
                if alpha is not None:
                    c_try = c_try - self._soft(alpha, soft, lam[rows], dl, step, exact and base is x0)
                merit_try = float(np.linalg.norm(c_try / scale))
                if merit_try <= ref or step < 0.2:
                    break
                step *= 0.5
            if not newton and not merit_try <= ref:
                valid = False  # chord step too weak (or not finite): refactor here and redo
                continue
            last_chord = not fresh  # chord or inexact Newton step: converge to chord_tolerance (no limit cycle in the band)
            moved = step * float(np.abs(direction).max()) if direction.size else 0.0
            AX_prev = AX
            x, AX, c, merit = x_try, AX_try, c_try, merit_try
            if alpha is not None:
                soft = self._soft(alpha, soft, lam[rows], dl, step, exact and base is x0)
            merits.append(merit)
            if exact and base is x0:
                lam[rows] = step * dl + (1 - step) * lam[rows]
            else:
                lam[rows] += step * dl
            it += 1
            res = float(np.max(np.abs(c) / scale)) if rows.size else 0.0
            if exact:
                # stationarity of ½|φ − φ0|²_W + λᵀC: the Jacobian changed by 2 T⊗(φ_{j+1} − φ_j)
                # since λ was computed, so the Lagrangian gradient is (∇C_{j+1} − ∇C_j)ᵀ λ; in
                # displacement units (lumped-mass inverse) compare it with the projection's size
                g = self._jacobian_transpose_times(constraints, AX - AX_prev, lam, inv_mass)
                size = float(np.abs(x - x0).max()) if x.size else 0.0
                stationary = float(np.abs(g).max()) <= self.stationarity * size or moved == 0.0
            log.residuals.append(res)
            log.step_lengths.append(step)
        if not np.isfinite(res):
            status = SolveStatus.STALLED
        point = system.factor_x if across and system.has_factor else None
        factorizations += numeric.factorizations
        return SolveResult(x=x, lam=lam, status=status, iterations=it, residual=res, log=log,
                           factorizations=factorizations, factor_point=point)

    FORCING = 0.1
    """Forcing term η of the Newton steps on a kept factorization: conjugate gradients stop at a
    scaled residual of η |C| (measured choice, docs/design/linear-algebra.md)."""

    KRYLOV_ITERATIONS = 20
    """Cap on conjugate-gradient iterations of a Newton step on a kept factorization (a triangular
    solve each); beyond it the system is refactored."""

    def _krylov_solve(self, system, AX, c, alpha, scale, target) -> np.ndarray | None:
        """Δλ with (S(φ_j) + εI + diag α) Δλ = c to max |residual| / scale ≤ ``target``, by
        conjugate gradients preconditioned with the kept factorization S_f (Hestenes & Stiefel
        1952; Saad, *Iterative Methods for Sparse Linear Systems*, Alg. 9.1); None when it does
        not get there within ``KRYLOV_ITERATIONS`` (or the preconditioned operator is not
        positive definite)."""
        shift = np.full(c.size, system.factor_shift)
        if alpha is not None:
            shift += alpha
        x = np.zeros(c.size)
        r = np.array(c, dtype=np.float64)
        z = system.solve_factored(r)
        p = z.copy()
        rz = float(r @ z)
        for k in range(self.KRYLOV_ITERATIONS + 1):
            norm = float(np.max(np.abs(r) / scale)) if c.size else 0.0
            if norm <= target:
                return x
            if k == self.KRYLOV_ITERATIONS or not np.isfinite(norm) or not rz > 0:
                return None
            q = schur_product(system, AX, p, shift)
            pq = float(p @ q)
            if not pq > 0:
                return None
            a = rz / pq
            x += a * p
            r -= a * q
            z = system.solve_factored(r)
            rz_new = float(r @ z)
            p = z + (rz_new / rz) * p
            rz = rz_new
        return None

    @staticmethod
    def _soft(alpha, soft, lam, dl, step, total: bool) -> np.ndarray:
        """α λ of the compliant rows after a step of length ``step``: Δλ = ``dl`` is an increment
        (fast projection), or with ``total`` the new multipliers (closest point, from φ0)."""
        return alpha * (step * dl + (1 - step) * lam) if total else soft + step * alpha * dl

    @staticmethod
    def _drift(system, AX: np.ndarray) -> float:
        """max |A(φ − φ_f)| / max |A φ_f|: how far ∇C has moved since the factorization."""
        ref = system.factor_AX_absmax
        return float(np.abs(AX - system.factor_AX).max()) / ref if ref > 0 else np.inf

    def _factorize(self, system, AX: np.ndarray, x: np.ndarray, compliance: np.ndarray | None = None) -> None:
        """Factor ``system`` at A x (with the rows' ``compliance``) and record the positions x."""
        system.factor_x = None
        if isinstance(system, KKTSystem):
            system.factorize(AX, self.regularization, compliance)
        else:
            system.factorize(AX, self.regularization, self.backend, compliance)
        system.factor_x = np.array(x, dtype=np.float64, copy=True)
        base = getattr(system, "base", None)
        if base is not None and base.factor_x is None:  # the base was refactored here
            base.factor_x = system.factor_x
