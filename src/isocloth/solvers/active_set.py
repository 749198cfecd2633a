"""Active-set solver for the contact QPs of Coltraro et al. (thesis §3.5, Algorithm 2; seed 000 Alg. 1).

One linearised QP (seed 000 eq. 5, thesis eq. 3.4):

    min_Δφ ½ Δφᵀ M Δφ − Δφᵀ f      s.t.   A_E Δφ + c_E = 0   (inextensibility, always in W)
                                            A_I Δφ + h   ≥ 0   (contacts, Signorini)

with M diagonal (inverse masses w; w = 0 marks prescribed coordinates). For the working set W the
KKT system is solved in multiplier form (seed 000 eq. 13, the Delassus matrix):

    (G W Gᵀ) ζ = −g − G W f,    Δφ = W (Gᵀ ζ + f),     G = [A_E; A_I[W]], g = [c_E; h[W]],

where the contact multipliers ζ_I = Δγ must be ≥ 0. The method starts from an infeasible point
and a warm-started working set, moves the contact with the most negative multiplier to the
observation set O and the most violated constraint of O to W, one at a time (Remark 5.1;
no cycling by Proposition 1).

Factorization updates (chosen by measurement, docs/design/linear-algebra.md): the matrix
A0 = G0 W G0ᵀ of the initial working set is factorized once per QP (:class:`WorkingFactor`;
dense LAPACK or CHOLMOD with the symbolic analysis reused). Constraints added later enter through
their coupling block B = G0 W A_Kᵀ, and constraints removed from G0 through artificial
multipliers (thesis eq. 3.15):

    [A0  B  Sᵀ] [x0]   [b0]
    [Bᵀ  D  0 ] [xK] = [bK]          S selects the removed rows (x0[R] = 0).
    [S   0  0 ] [y ]   [0 ]

Eliminating x0 leaves a small dense symmetric system in (xK, y) of size |K| + |R|, grown or shrunk
by one row and column per change; each change costs one solve with the base factor. A constraint
whose gradient is linearly dependent on W (tiny pivot λ² of thesis eq. 3.13, Remark 3.5.3) is
swapped with the working contact of largest |α| in ∇G = Σ α_i ∇H_i (Remark 5.2); a dependent
constraint of the equality rows alone is skipped (Lemma 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp

from isocloth.solvers.budget import check_budget
from isocloth.solvers.linalg import SPDFactorCache, spd_factor

__all__ = ["QPResult", "SolverActiveSet", "WorkingFactor", "qp_kkt_residuals"]


@dataclass
class QPResult:
    """Solution of one QP.

    Attributes
    ----------
    dx : (N,) float64, the minimiser Δφ
    zeta_E : (m_E,) float64, equality multipliers (sign: M Δφ = A_Eᵀ ζ_E + A_Iᵀ γ + f)
    gamma : (m_I,) float64, contact multipliers (≥ 0, zero outside W)
    working : (k,) int64, inequality rows in the final working set
    iterations : int, KKT systems solved
    added, removed, dependent_swaps : int, working-set changes
    factorizations : int, full factorizations done by this call (0 when a factor was passed in)
    updates : int, bordered (Schur-complement) updates of the factor
    converged : bool, False when ``max_changes`` was reached
    state : the final working set as updates of the factor passed in (``start`` of a next QP with
        the same matrices and factor and another linear term or right-hand side), None after a rebase
    """

    dx: np.ndarray
    zeta_E: np.ndarray
    gamma: np.ndarray
    working: np.ndarray
    iterations: int = 0
    added: int = 0
    removed: int = 0
    dependent_swaps: int = 0
    factorizations: int = 0
    updates: int = 0
    converged: bool = True
    state: object = field(default=None, repr=False)


class WorkingFactor:
    """Factorization of the Delassus matrix A0 = G0 W G0ᵀ of an initial working set.

    Parameters
    ----------
    w : (N,) float64, inverse masses per coordinate [1/kg] (0 = prescribed)
    A_E : (m_E, N) sparse, equality rows; A_I : (m_I, N) sparse, inequality rows
    working : (k,) int64, inequality rows in the working set (G0 = [A_E; A_I[working]])
    regularization : float, relative diagonal shift ε of :func:`~isocloth.solvers.linalg.spd_factor`
        (×100 and ×1e4 are tried if the factorization fails)
    backend : "auto" | "dense" | "cholmod" | "splu"
    cache : SPDFactorCache, optional, reuses CHOLMOD's symbolic analysis between factors
    refinement : int, iterative-refinement steps of :meth:`solve` (default 0; the QP refines its
        bordered system as a whole, see :meth:`SolverActiveSet.solve_qp`)

    Raises
    ------
    numpy.linalg.LinAlgError if A0 + εI is not positive definite (non-finite input).
    """

    def __init__(self, w, A_E, A_I, working, *, regularization: float = 1e-12, backend: str = "auto",
                 cache: SPDFactorCache | None = None, refinement: int = 0) -> None:
        self._inputs = (w, A_E, A_I)
        A_E = sp.csr_matrix(A_E)
        A_I = sp.csr_matrix(A_I)
        self.w = np.asarray(w, dtype=np.float64)
        self.mE = A_E.shape[0]
        self.working = np.asarray(working, dtype=np.int64)
        self.G0 = sp.vstack([A_E, A_I[self.working]], format="csr") if self.working.size else A_E
        self.m0 = self.G0.shape[0]
        self.G0W = self.G0.multiply(self.w[None, :]).tocsr()
        self.G0W_csc = self.G0W.tocsc()
        self.G0W_csc.sort_indices()
        self._factor = None
        self.eps = 0.0
        self.refinement = refinement
        if not self.m0:
            return
        A0 = (self.G0W @ self.G0.T).tocsc()
        self.A0 = A0
        dmax = float(A0.diagonal().max())
        fac = cache.factor if cache is not None else spd_factor
        # relative shift ε: rows that are dependent at flat states (cloth flat on a flat obstacle:
        # A0 has eigenvalues down to ~1e-13·max) become soft instead of producing huge multipliers;
        # larger shifts only if the factorization fails
        shifts = [regularization, 100 * regularization, 1e4 * regularization] if regularization > 0 else [0.0]
        for k, reg in enumerate(shifts):
            try:
                self._factor = fac(A0, regularization=reg, backend=backend)
            except Exception as exc:  # LAPACK / CHOLMOD: not positive definite
                if k == len(shifts) - 1 or not _not_positive_definite(exc):
                    raise
                continue
            self.eps = reg * dmax
            break

    def coupling(self, a) -> np.ndarray:
        """G0 W aᵀ (m0,) for a row a (``indices``, ``data``)."""
        if not self.m0:
            return np.zeros(0)
        ip, ix, dv = self.G0W_csc.indptr, self.G0W_csc.indices, self.G0W_csc.data
        starts, ends = ip[a.indices], ip[a.indices + 1]
        lens = ends - starts
        if lens.sum() == 0:
            return np.zeros(self.m0)
        sel = np.concatenate([np.arange(b, e) for b, e in zip(starts, ends)])
        return np.bincount(ix[sel], weights=dv[sel] * np.repeat(a.data, lens), minlength=self.m0)

    def matches(self, w, A_E, A_I, working) -> bool:
        """True when this factor was built for these inputs (same objects, same working set)."""
        a, b, c = self._inputs
        return a is w and b is A_E and c is A_I and np.array_equal(np.asarray(working, dtype=np.int64), self.working)

    def solve(self, b: np.ndarray) -> np.ndarray:
        """A0⁻¹ b for b (m0,) or (m0, k) float64: the factor of A0 + εI followed by ``refinement``
        steps of iterative refinement against A0. Directions of A0 with eigenvalues ≳ ε are
        solved to full accuracy; nearly dependent ones (eigenvalues ≪ ε) stay soft."""
        if not self.m0:
            return np.zeros_like(b)
        x = self._factor.solve(b)
        if self.eps > 0:
            for _ in range(self.refinement):
                x = x + self._factor.solve(b - self.A0 @ x)
        return x

    def bordered(self, working) -> "_Bordered":
        """This factor updated to the working set ``working`` (inequality rows, int64) by bordered
        updates (rows of the base that are not in it removed, the others added), as a QP that started
        from the base and ended in ``working`` holds it (``QPResult.state``); the friction problem of
        the interior-point baseline uses it so that both solvers see the same Delassus operator."""
        bord = _Bordered(self)
        A_I = sp.csr_matrix(self._inputs[2])
        final = set(int(r) for r in np.asarray(working, dtype=np.int64))
        for i, r in enumerate(self.working):
            if int(r) not in final:
                bord.remove_base(self.mE + i)
        for r in sorted(final - set(int(r) for r in self.working)):
            bord.add(_Row(A_I, r), r)
        return bord

    def contact_compliance(self, T) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The response of the QP's working set to forces along the rows T (t, N′), for the friction
        problem: (D (t, t) float64 as in :meth:`compliance`; the inequality rows (k,) int64 of the
        working set; their multipliers' change per unit force along T, (k, t) float64)."""
        D, Z = self.compliance(T)
        return D, self.working, Z[self.mE:]

    def compliance(self, T, refine: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Response of the QP with working set G0 to forces along the rows T (t, N) (or (t, N′),
        N′ < N: rows on the first N′ coordinates, the others zero).

        Returns
        -------
        D : (t, t) float64, T P Tᵀ with P = W − W G0ᵀ A0⁻¹ G0 W, the map from a force f to the
            displacement Δφ = P f. D is the Schur complement, with respect to the G0 block, of the
            Delassus matrix [G0; T] W [G0; T]ᵀ: the Delassus operator of the rows T once the
            working constraints are eliminated (seed 000 eq. 13). Symmetric positive semi-definite.
        Z : (m0, t) float64, −A0⁻¹ G0 W Tᵀ, the change of the multipliers ζ of G0 per unit force
            along each row of T (its rows mE + i are the contact multipliers of ``working[i]``).

        A0⁻¹ is the factor of A0 + εI (nearly dependent rows soft); ``refine`` adds two steps of
        iterative refinement against A0.
        """
        T = _tangent_rows(T, self.w.size)  # rows given on the leading coordinates (e.g. without slack ones)
        TW = T.multiply(self.w[None, :]).tocsr()
        out = (TW @ T.T).toarray()
        Z = np.zeros((self.m0, T.shape[0]))
        if self.m0 and T.shape[0]:
            B = (self.G0W @ T.T).toarray()
            Z = self._factor.solve(B)
            if refine:
                for _ in range(2):
                    Z = Z + self._factor.solve(B - self.A0 @ Z)
            out -= B.T @ Z
            Z = -Z
        return 0.5 * (out + out.T), Z


def _tangent_rows(T, n: int) -> sp.csr_matrix:
    """T (t, N′) as CSR with N ≥ N′ columns (rows given on the leading coordinates, the others zero)."""
    T = sp.csr_matrix(T)
    if T.shape[1] < n:
        T = sp.hstack([T, sp.csr_matrix((T.shape[0], n - T.shape[1]))], format="csr")
    return T


class _Bordered:
    """Solves with G W Gᵀ for the working set G0 with rows added/removed (module docstring)."""

    def __init__(self, base: WorkingFactor):
        self.base = base
        self.kind: list[int] = []  # +1: added inequality row, −1: removed base row
        self.ref: list[int] = []  # inequality row (added) or base index (removed)
        self.rows: list = []  # sparse row a (added) or None
        self.b: list[np.ndarray] = []  # G0 W aᵀ, or e_r
        self.z: list[np.ndarray] = []  # A0⁻¹ b
        self.K = np.zeros((0, 0))

    def _column(self, a):
        """(b, z, coupling with the current entries, diagonal) of a new added row a (1, N)."""
        base = self.base
        b = base.coupling(a)  # G0 W aᵀ
        z = base.solve(b)
        aW = _row_w_dense(a, base.w)
        kv = np.empty(len(self.kind))
        for p, (kd, ref) in enumerate(zip(self.kind, self.ref)):
            if kd > 0:
                r = self.rows[p]
                kv[p] = aW[r.indices] @ r.data - b @ self.z[p]
            else:
                kv[p] = -z[ref]
        d = float(aW[a.indices] @ a.data)
        return b, z, kv, d, d - float(b @ z)

    def _append(self, kind, ref, row, b, z, kv, diag):
        k = len(self.kind)
        K = np.empty((k + 1, k + 1))
        K[:k, :k] = self.K
        K[:k, k] = kv
        K[k, :k] = kv
        K[k, k] = diag
        self.K = K
        self.kind.append(kind)
        self.ref.append(ref)
        self.rows.append(row)
        self.b.append(b)
        self.z.append(z)

    def add(self, a, ineq_row: int, column=None) -> None:
        b, z, kv, _, diag = column if column is not None else self._column(a)
        self._append(+1, ineq_row, a, b, z, kv, diag)

    def remove_base(self, i: int) -> None:
        e = np.zeros(self.base.m0)
        e[i] = 1.0
        z = self.base.solve(e)
        kv = np.array([-self.z[p][i] if kd > 0 else -z[ref] for p, (kd, ref) in enumerate(zip(self.kind, self.ref))])
        self._append(-1, i, None, e, z, kv, -z[i])

    def remove_entry(self, p: int) -> None:
        keep = np.r_[0:p, p + 1:len(self.kind)]
        self.K = self.K[np.ix_(keep, keep)]
        for lst in (self.kind, self.ref, self.rows, self.b, self.z):
            del lst[p]

    def removed_base(self) -> list[int]:
        return [r for kd, r in zip(self.kind, self.ref) if kd < 0]

    def contact_compliance(self, T) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`WorkingFactor.contact_compliance` for the current working set (the base's rows
        without the removed ones, with the added ones), through the bordered system."""
        base = self.base
        T = _tangent_rows(T, base.w.size)
        TW = T.multiply(base.w[None, :]).tocsr()
        D = (TW @ T.T).toarray()
        t = T.shape[0]
        removed = set(self.removed_base())
        keep = [base.mE + i for i in range(base.working.size) if base.mE + i not in removed]
        added = [p for p, kd in enumerate(self.kind) if kd > 0]
        rows = [int(base.working[e - base.mE]) for e in keep] + [self.ref[p] for p in added]
        if not t:
            return D, np.array(rows, dtype=np.int64), np.zeros((len(rows), 0))
        B0 = (base.G0W @ T.T).toarray()
        BK = np.zeros((len(self.kind), t))
        for p in added:
            r = self.rows[p]
            BK[p] = TW[:, r.indices] @ r.data  # a_p W Tᵀ
        x0, v = self.solve(B0, BK)
        D -= B0.T @ x0 + BK[added].T @ v[added]
        Z = -np.vstack([x0[keep], v[added]]) if rows else np.zeros((0, t))
        return 0.5 * (D + D.T), np.array(rows, dtype=np.int64), Z

    def refine(self, b0, bK, x0, v, steps: int) -> tuple[np.ndarray, np.ndarray]:
        """Iterative refinement of a solution (x0, v) of :meth:`solve` against the unshifted
        G W Gᵀ of the current working set (the base factor is of A0 + εI). A step is kept only
        if it reduces the residual tenfold: along nearly dependent rows (eigenvalues ≪ ε) the
        refinement converges slowly and would only inflate the multipliers there."""
        base = self.base
        added = [p for p, kd in enumerate(self.kind) if kd > 0]
        rem = self.removed_base()

        def residual(x0, v):
            u = base.G0.T @ x0
            for p in added:
                _add_row(u, self.rows[p], v[p])
            Wu = base.w * u
            r0 = b0 - base.G0 @ Wu
            if rem:
                r0[rem] = 0.0  # rows of removed constraints: absorbed by their artificial multipliers
            rK = np.array([(bK[p] - self.rows[p].dot(Wu)) if kd > 0 else 0.0 for p, kd in enumerate(self.kind)])
            return r0, rK

        r0, rK = residual(x0, v)
        norm = max(float(np.abs(r0).max(initial=0.0)), float(np.abs(rK).max(initial=0.0)))
        for _ in range(steps):
            dx0, dv = self.solve(r0, rK)
            x1, v1 = x0 + dx0, v + dv
            s0, sK = residual(x1, v1)
            n1 = max(float(np.abs(s0).max(initial=0.0)), float(np.abs(sK).max(initial=0.0)))
            if not n1 <= 0.1 * norm:
                break
            x0, v, r0, rK, norm = x1, v1, s0, sK, n1
        return x0, v

    def solve(self, b0: np.ndarray, bK: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Solve with the current set; bK holds one value per entry (0 for removed rows).
        Returns (x0 (m0,), v (entries,)) with x0[removed] = 0."""
        u = self.base.solve(b0)
        if not self.kind:
            return u, np.zeros((0,) + np.shape(b0)[1:])
        v = _small_solve(self.K, bK - np.array([bp @ u for bp in self.b]))
        x0 = u - np.column_stack(self.z) @ v
        rem = self.removed_base()
        if rem:
            x0[rem] = 0.0
        return x0, v


@dataclass
class SolverActiveSet:
    """Active-set QP solver with warm start and factorization updates (thesis Algorithm 2).

    Parameters (numerics only)
    ----------
    multiplier_tolerance : float
        A working contact leaves W when its multiplier is below −tol·|γ|∞.
    feasibility_tolerance : float [m]
        An observed constraint enters W when A_I Δφ + h < −tol (must be below ε1).
    dependence_tolerance : float
        Relative pivot λ²/(a W aᵀ) below which a constraint is linearly dependent (Remark 3.5.3).
    max_changes : int
        Cap on working-set changes per QP.
    regularization : float
        Relative diagonal shift ε of the base factorization (×100, ×1e4 if that factorization
        fails). The same shift enters the Delassus operator of friction, so both see the same
        (slightly soft) nearly dependent rows; see docs/design/friction.md.
    refinement : int
        Iterative-refinement steps of each KKT solve against the unshifted matrix: rows whose
        eigenvalues are ≳ ε are then solved to full accuracy (two steps took a recorded cloth QP
        from 5e-5 m to 2e-8 m of the interior-point solution); nearly dependent ones stay soft.
    backend : passed to the base factorization.
    batch : int
        Violated constraints entering W per KKT solve: the most violated one, then (up to
        ``batch`` in all, in order of violation) violated ones whose free coordinates are disjoint
        from those of the constraints already taken in this round, so that they do not couple
        through the mass matrix. Each still passes the dependence test on its own. 1 is thesis
        Remark 3.5.5(4); with many violated rows (a layer of cloth falling through another:
        hundreds of rows) batches cut the KKT solves several-fold (docs/design/self-collision.md).
    rebase : int
        Working-set changes held in the bordered (dense) block before the current working set is
        factorized afresh (each change solves with that block).
    """

    multiplier_tolerance: float = 1e-10
    feasibility_tolerance: float = 1e-6
    dependence_tolerance: float = 1e-10
    max_changes: int = 500
    batch: int = 16
    rebase: int = 32
    regularization: float = 1e-12
    refinement: int = 0
    backend: str = "auto"
    _cache: SPDFactorCache = field(default_factory=SPDFactorCache, repr=False)

    def factorize(self, w, A_E, A_I, working) -> WorkingFactor:
        """The base factor of a working set (reused by :meth:`solve_qp` when passed as ``factor``)."""
        return WorkingFactor(w, A_E, A_I, working, regularization=self.regularization, backend=self.backend,
                             cache=self._cache)

    def solve_qp(self, w, f, A_E, c_E, A_I, h, working=None, *, factor: WorkingFactor | None = None,
                 start=None) -> QPResult:
        """Solve one QP (see module docstring).

        Parameters
        ----------
        w : (N,) float64, inverse masses per coordinate (0 = prescribed)
        f : (N,) float64, linear term (lagged friction force, seed 000 eq. 5)
        A_E : (m_E, N) sparse, c_E : (m_E,) — equality rows
        A_I : (m_I, N) sparse, h : (m_I,) — inequality rows (A_I Δφ + h ≥ 0)
        working : int array, warm-start working set (inequality rows), optional
        factor : WorkingFactor of (w, A_E, A_I, working), optional (saves the factorization)
        start : ``QPResult.state`` of an earlier QP with the same w, A_E, A_I and ``factor``: the
            active-set iterations start from its final working set (warm start without refactorizing);
            it is updated in place (the earlier result's ``state`` then describes this QP's working set)

        Returns
        -------
        QPResult
        """
        A_E_in, A_I_in = A_E, A_I
        A_E = sp.csr_matrix(A_E)
        A_I = sp.csr_matrix(A_I)
        mE, mI = A_E.shape[0], A_I.shape[0]
        W0 = np.unique(np.asarray(working if working is not None else [], dtype=np.int64))
        W0 = W0[(W0 >= 0) & (W0 < mI)]
        res = QPResult(np.zeros(w.size), np.zeros(mE), np.zeros(mI), W0)
        if factor is None or not factor.matches(w, A_E_in, A_I_in, W0):
            factor = self.factorize(w, A_E, A_I, W0)
            res.factorizations = 1
        bord = start if isinstance(start, _Bordered) and start.base is factor else _Bordered(factor)
        G0 = factor.G0
        Wf = w * f
        b0 = -np.concatenate([c_E, h[W0]]) - G0 @ Wf
        base_rows = list(W0)  # inequality row of base entry mE + i
        skipped: set[int] = set()
        dx = np.zeros(w.size)
        for _ in range(self.max_changes + 1):
            check_budget()
            if len(bord.kind) > self.rebase:
                # many changes since the base factor: factorize the current working set (keeps the
                # dense bordered block, solved at every change, small)
                removed = set(bord.removed_base())
                cur = np.array(sorted([base_rows[i] for i in range(len(base_rows)) if (mE + i) not in removed]
                                      + [r for kd, r in zip(bord.kind, bord.ref) if kd > 0]), dtype=np.int64)
                factor = self.factorize(w, A_E, A_I, cur)
                res.factorizations += 1
                bord = _Bordered(factor)
                G0 = factor.G0
                b0 = -np.concatenate([c_E, h[cur]]) - G0 @ Wf
                base_rows = list(cur)
            bK = np.array([(-h[r] - bord.rows[p].dot(Wf)) if kd > 0 else 0.0
                           for p, (kd, r) in enumerate(zip(bord.kind, bord.ref))])
            x0, v = bord.refine(b0, bK, *bord.solve(b0, bK), self.refinement)
            res.iterations += 1
            force = G0.T @ x0 + f
            added = [p for p, kd in enumerate(bord.kind) if kd > 0]
            for p in added:
                _add_row(force, bord.rows[p], v[p])
            dx = w * force
            # contact multipliers of the working set: (row, value, entry) for base and added contacts
            removed = set(bord.removed_base())
            work = [(base_rows[i], x0[mE + i], ("base", mE + i)) for i in range(len(base_rows))
                    if (mE + i) not in removed]
            work += [(bord.ref[p], v[p], ("add", p)) for p in added]
            gam = np.array([g for _, g, _ in work])
            scale = float(np.abs(gam).max()) if gam.size else 1.0
            if gam.size and gam.min() < -self.multiplier_tolerance * scale:
                # most negative multiplier leaves W (Remark 5.1)
                self._drop(bord, work[int(np.argmin(gam))][2])
                res.removed += 1
                res.updates += 1
                if res.added + res.removed > self.max_changes:
                    break
                continue
            # most violated observed constraint enters W
            viol = A_I @ dx + h
            if work:
                viol[[r for r, _, _ in work]] = np.inf
            if skipped:
                viol[list(skipped)] = np.inf
            if mI == 0 or viol.min() >= -self.feasibility_tolerance:
                res.dx = dx
                res.zeta_E = x0[:mE].copy()
                res.gamma = np.zeros(mI)
                if work:
                    res.gamma[[r for r, _, _ in work]] = gam
                res.working = np.array(sorted(r for r, _, _ in work), dtype=np.int64)
                res.state = bord if bord.base is factor and not res.factorizations else None
                return res
            for n_in, k in enumerate(self._entering(viol, A_I, w)):
                a = _Row(A_I, k)
                col = bord._column(a)
                b, _, kv, d, diag = col
                lam2 = diag - (kv @ _small_solve(bord.K, kv) if kv.size else 0.0)
                if lam2 <= self.dependence_tolerance * max(d, 1e-300):
                    if n_in:
                        continue  # a later row of the batch: leave it to the next round
                    # ∇H_k = Σ α_i ∇G_i (Remark 5.2): H_k enters and a working contact leaves. Which
                    # one: the dual ratio test of Goldfarb & Idnani (1983) — entering H_k with
                    # multiplier t leaves Δφ unchanged and moves the others to γ_i − t α_i, so the
                    # first to reach zero, argmin_{α_i > 0} γ_i/α_i, leaves. (The thesis' largest
                    # |α| cycled on parallel cloth layers, whose edge–edge rows are combinations
                    # of node–face rows.) No α_i > 0: H_k cannot be met together with W; skipped
                    aW = _row_w_dense(a, w)
                    bK_a = np.array([aW[bord.rows[p].indices] @ bord.rows[p].data if kd > 0 else 0.0
                                     for p, kd in enumerate(bord.kind)])
                    a0, av = bord.solve(b, bK_a)
                    alpha = np.array([a0[e[1]] if e[0] == "base" else av[e[1]] for _, _, e in work])
                    amax = float(np.abs(alpha).max()) if alpha.size else 0.0
                    pos = np.flatnonzero(alpha > 1e-9 * amax) if amax >= 1e-12 else np.zeros(0, dtype=np.int64)
                    if pos.size == 0:
                        skipped.add(k)  # dependent on the equality rows alone (Lemma 1), or on W
                        break
                    ratio = np.maximum(gam[pos], 0.0) / alpha[pos]
                    self._drop(bord, work[int(pos[np.argmin(ratio)])][2])
                    res.dependent_swaps += 1
                    col = None  # the set changed: recompute the coupling
                bord.add(a, k, col)
                res.added += 1
                res.updates += 1
                if col is None:
                    break  # after a swap, solve again before adding more
            if res.added + res.removed > self.max_changes:
                break
        res.converged = False
        res.dx = dx
        return res

    def _entering(self, viol: np.ndarray, A_I, w: np.ndarray) -> list[int]:
        """Rows entering W this round: the most violated, then violated rows (by violation) whose
        free coordinates are disjoint from those already taken, ``batch`` at most."""
        k0 = int(np.argmin(viol))
        if self.batch <= 1:
            return [k0]
        cand = np.flatnonzero(viol < -self.feasibility_tolerance)
        if cand.size <= 1:
            return [k0]
        cand = cand[np.argsort(viol[cand], kind="stable")]
        taken = [k0]
        used = np.zeros(w.size, dtype=bool)
        ip, ix = A_I.indptr, A_I.indices
        cols = ix[ip[k0]:ip[k0 + 1]]
        used[cols[w[cols] > 0]] = True
        for k in cand[1:]:
            if len(taken) >= self.batch:
                break
            cols = ix[ip[k]:ip[k + 1]]
            cols = cols[w[cols] > 0]
            if used[cols].any():
                continue
            used[cols] = True
            taken.append(int(k))
        return taken

    @staticmethod
    def _drop(bord: _Bordered, entry) -> None:
        kind, idx = entry
        if kind == "base":
            bord.remove_base(idx)
        else:
            bord.remove_entry(idx)


def _not_positive_definite(exc: Exception) -> bool:
    return isinstance(exc, np.linalg.LinAlgError) or type(exc).__name__ == "CholmodNotPositiveDefiniteError"


class _Row:
    """Row k of a CSR matrix as (indices, data), without building a scipy matrix."""

    __slots__ = ("indices", "data")

    def __init__(self, A, k: int):
        s, e = A.indptr[k], A.indptr[k + 1]
        self.indices = A.indices[s:e]
        self.data = A.data[s:e]

    def dot(self, v: np.ndarray) -> float:
        return float(self.data @ v[self.indices])


def _row_w_dense(a, w: np.ndarray) -> np.ndarray:
    """Dense (N,) vector W aᵀ of a sparse (1, N) CSR row."""
    out = np.zeros(w.size)
    out[a.indices] = a.data * w[a.indices]
    return out


def _add_row(out: np.ndarray, row, value: float) -> None:
    """out += rowᵀ · value for a sparse (1, N) CSR row."""
    out[row.indices] += row.data * value


def _small_solve(K: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Solve the small symmetric (indefinite) bordered system; least squares if it is singular."""
    try:
        return la.solve(K, rhs, assume_a="sym", check_finite=False)
    except (la.LinAlgError, ValueError):
        return np.linalg.lstsq(K, rhs, rcond=None)[0]


def qp_kkt_residuals(w, f, A_E, c_E, A_I, h, res: QPResult) -> dict:
    """KKT residuals of a QP solution (seed 000 eq. 7): stationarity, feasibility, sign, complementarity.

    Stationarity is measured on free coordinates (w > 0) as ‖Δφ/w − (A_Eᵀζ + A_Iᵀγ + f)‖∞.
    """
    free = w > 0
    force = A_E.T @ res.zeta_E + A_I.T @ res.gamma + f
    stat = np.abs(res.dx[free] / w[free] - force[free]).max() if free.any() else 0.0
    slack = A_I @ res.dx + h
    return {
        "stationarity": float(stat),
        "equality": float(np.abs(A_E @ res.dx + c_E).max()) if A_E.shape[0] else 0.0,
        "inequality": float(max(0.0, -slack.min())) if slack.size else 0.0,
        "dual_sign": float(max(0.0, -res.gamma.min())) if res.gamma.size else 0.0,
        "complementarity": float(np.abs(res.gamma * slack).max()) if slack.size else 0.0,
    }
