"""Linearised projection step in a general metric, by a sparse KKT factorization.

The fast projection (thesis §2.6.1) corrects the unconstrained step in the mass metric M. When
the implicit-Euler predictor treats a stiff bending term implicitly, its system matrix

    W = (ρ + dt α) M + dt² κ K + dt β K        (predictor, thesis eq. 2.20)

is far from M, and a correction along M⁻¹∇Cᵀ throws the bending equilibrium away every step: the
nodes jitter once dt² κ (π/h)⁴ / ρ ≳ 10 (h the node spacing; see docs/design/bending.md). Projecting
in the metric W instead makes the whole step the constrained implicit-Euler step
min ½ (φ − φ0)ᵀ W (φ − φ0) s.t. C(φ) = 0, whose fixed points are exact equilibria. W⁻¹ is dense, so
instead of the Schur complement ∇C W⁻¹ ∇Cᵀ each linearised QP is solved through its quasi-definite
KKT system

    [ W    ∇Cᵀ ] [ Δφ ]   [  0 ]
    [ ∇C  −ε I ] [ Δλ ] = [ −C ],

ε a tiny relative shift (the rows are redundant at flat states, as in the Schur form). Quasi-definite
matrices have an LDLᵀ factorization for every symmetric ordering (Vanderbei 1995), so CHOLMOD's
simplicial LDLᵀ is used with its symbolic analysis done once (the pattern is fixed); SciPy's SuperLU
is the fallback. Prescribed (grasped) nodes are eliminated (Δφ = 0 there).

The factorization is kept (:meth:`KKTSystem.factorize`, :meth:`KKTSystem.solve_factored`) so that
the projection can take chord steps with it at later iterates.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from isocloth.solvers.schur import _cholmod

__all__ = ["KKTSystem"]


class KKTSystem:
    """Fixed-pattern KKT system of the enforced rows in the metric W (per coordinate).

    Parameters
    ----------
    constraints : InextensibilityConstraints
    rows : (k,) int64
        Enforced rows.
    metric : scipy.sparse matrix (n, n) float64 [kg]
        Symmetric positive definite metric W acting on each coordinate.
    inv_mass : (n,) float64
        Inverse masses; nodes with 0 are prescribed and eliminated.
    """

    def __init__(self, constraints, rows: np.ndarray, metric, inv_mass: np.ndarray) -> None:
        n = constraints.node_count
        free = np.flatnonzero(inv_mass > 0)
        self.n, self.free, self.k = n, free, rows.size
        col_of = np.full(3 * n, -1, dtype=np.int64)
        col_of[(3 * free[:, None] + np.arange(3)).ravel()] = np.arange(3 * free.size)
        row_of = np.full(constraints.row_count, -1, dtype=np.int64)
        row_of[rows] = np.arange(rows.size)
        # entries of the constraint Jacobian's fixed CSR pattern (value index = pair*3 + d)
        indptr, indices = constraints._jac_indptr, constraints._jac_indices
        jrow = np.repeat(np.arange(constraints.row_count), np.diff(indptr))
        keep = (row_of[jrow] >= 0) & (col_of[indices] >= 0)
        self._jsel = np.flatnonzero(keep)
        jr, jc = row_of[jrow[keep]], col_of[indices[keep]]
        Wf = sp.kron(sp.csr_matrix(metric)[free][:, free], sp.identity(3), format="coo")
        m = 3 * free.size
        self._m = m
        self._w_nnz = Wf.nnz
        r = np.concatenate([Wf.row, m + jr, jc, m + np.arange(rows.size)])
        c = np.concatenate([Wf.col, jc, m + jr, m + np.arange(rows.size)])
        self._w_data = Wf.data
        # COO -> CSC once; later calls only permute the new values into place
        order = np.lexsort((r, c))
        r, c = r[order], c[order]
        first = np.r_[True, (np.diff(r) != 0) | (np.diff(c) != 0)]
        slot = np.cumsum(first) - 1
        self._order, self._slot = order, slot
        self._nnz = int(slot[-1]) + 1 if slot.size else 0
        self._indices = r[first].astype(np.int32)
        self._indptr = np.searchsorted(c[first], np.arange(m + rows.size + 1)).astype(np.int32)
        self._diag_scale = float(Wf.diagonal().max()) if m else 1.0
        self._factor = None  # CHOLMOD analysis (reused for every numeric factorization)
        self._lu = None
        self._factored = False
        self.factor_AX = None  # A x at the factorization (linearisation point of chord steps)
        self.factor_x = None  # positions of the factorization, recorded by the caller (SolverProjection)
        self.factor_AX_absmax = 0.0
        self.factorizations = 0

    def matrix(self, AX: np.ndarray, eps: float, compliance: np.ndarray | None = None) -> sp.csc_matrix:
        """The KKT matrix at the current A x (CSC, fixed pattern); ``compliance`` (k,) [m²/kg]
        joins −εI in the lower right block (compliant rows)."""
        jv = 2.0 * AX.ravel()[self._jsel]  # ∇C = 2 [T⊗x, T⊗y, T⊗z] (eq. 2.16)
        low = np.full(self.k, -eps) if compliance is None else -eps - compliance
        vals = np.concatenate([self._w_data, jv, jv, low])
        data = np.bincount(self._slot, weights=vals[self._order], minlength=self._nnz)
        N = self._m + self.k
        return sp.csc_matrix((data, self._indices, self._indptr), shape=(N, N))

    @property
    def size(self) -> int:
        """Order of the KKT matrix, 3·(free nodes) + k."""
        return self._m + self.k

    @property
    def has_factor(self) -> bool:
        """True once :meth:`factorize` has succeeded."""
        return self._factored

    def factorize(self, AX: np.ndarray, regularization: float, compliance: np.ndarray | None = None) -> None:
        """Factor the KKT matrix at A x (ε = regularization · max|∇C|² / max diag W; ``compliance``
        (k,) float64 [m²/kg] per-row compliance α, or None) and keep it.

        Raises
        ------
        numpy.linalg.LinAlgError
            If the factorization fails (non-finite input).
        """
        self._factored = False
        jmax = float(np.abs(AX).max()) * 2.0 if AX.size else 1.0
        if not np.isfinite(jmax):
            raise np.linalg.LinAlgError("KKT matrix has non-finite entries")
        eps = max(regularization, 1e-300) * jmax * jmax / self._diag_scale
        K = self.matrix(AX, eps, compliance)
        chol = _cholmod()
        if chol is not None:
            if self._factor is None:
                self._factor = chol.analyze(K, mode="simplicial")
            self._factor.cholesky_inplace(K)
        else:
            self._lu = splu(K)
        self._factored = True
        self.factor_AX = np.array(AX, dtype=np.float64, copy=True)
        self.factor_AX_absmax = float(np.abs(self.factor_AX).max()) if AX.size else 0.0
        self.factorizations += 1

    def solve_factored(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The linearised QP with the kept factorization: (Δφ (n, 3) float64 [m], Δλ (k,) float64),
        Δφ = −W⁻¹ ∇C_fᵀ Δλ with ∇C_f Δφ = −c (∇C_f at the factorization's A x).

        Raises
        ------
        numpy.linalg.LinAlgError
            If the solution is not finite.
        RuntimeError
            If :meth:`factorize` has not been called.
        """
        if not self._factored:
            raise RuntimeError("KKTSystem.solve_factored called before factorize()")
        rhs = np.concatenate([np.zeros(self._m), -c])
        sol = self._factor(rhs) if self._lu is None else self._lu.solve(rhs)
        if not np.isfinite(sol).all():
            raise np.linalg.LinAlgError("KKT solve produced non-finite values")
        dx = np.zeros((self.n, 3))
        dx[self.free] = sol[: self._m].reshape(-1, 3)
        return dx, sol[self._m:]

    def solve(self, AX: np.ndarray, c: np.ndarray, regularization: float) -> tuple[np.ndarray, np.ndarray]:
        """One linearised QP at A x: returns (Δφ (n, 3) float64 [m], Δλ (k,) float64).

        ε = regularization · max|∇C|² / max diag W keeps the (redundant) rows solvable.

        Raises
        ------
        numpy.linalg.LinAlgError
            If the factorization fails (non-finite input).
        """
        self.factorize(AX, regularization)
        return self.solve_factored(c)
