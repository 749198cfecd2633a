"""Fast assembly of the Schur complement S = ∇C M⁻¹ ∇Cᵀ for quadratic constraint rows.

For rows C_r = Σ_ij T^{rij}⟨p_i,p_j⟩ − C0_r, ∂C_r/∂p_i = 2 (A x)_{(r,i)} (see
``isocloth.fem.inextensibility``), so

    S_{r s} = Σ_i w_i ⟨∂C_r/∂p_i, ∂C_s/∂p_i⟩ = 4 Σ_i w_i ⟨(Ax)_{(r,i)}, (Ax)_{(s,i)}⟩.

The set of (r, s, i) triples is fixed by the mesh, the enforced rows and the free nodes, so it
is computed once; each iteration then only sums products (numba kernel). Small systems are
assembled dense and factored with LAPACK; larger ones in CSC form for a sparse Cholesky.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.linalg import lapack

from isocloth.solvers._schur_kernels import apply_transpose, schur_values
from isocloth.solvers.linalg import DENSE_LIMIT, spd_factor

__all__ = ["SchurSystem"]


def _cholmod():
    """scikit-sparse's CHOLMOD module, or None when it is not installed (optional, faster)."""
    try:
        from sksparse import cholmod
    except ImportError:
        return None
    return cholmod


class SchurSystem:
    """Fixed-pattern Schur complement of a set of enforced rows.

    Parameters
    ----------
    pair_row, pair_node : (P,) int64, the (row, node) pairs of the constraint tensor.
    rows : (k,) int64, enforced rows (global numbering).
    inv_mass : (n,) float64 [1/kg], 0 for prescribed nodes.
    row_count : int, total number of rows m.
    dense : bool or None, force dense/sparse assembly (default: dense when k ≤ DENSE_LIMIT).
    """

    def __init__(self, pair_row, pair_node, rows, inv_mass, row_count, *, dense=None):
        k = rows.size
        self.k = k
        self.n = inv_mass.size
        self.dense = (k <= DENSE_LIMIT) if dense is None else bool(dense)
        local = np.full(row_count, -1, dtype=np.int64)
        local[rows] = np.arange(k)
        keep = np.flatnonzero((local[pair_row] >= 0) & (inv_mass[pair_node] > 0))
        nodes = pair_node[keep]
        order = np.argsort(nodes, kind="stable")
        keep, nodes = keep[order], nodes[order]
        self.pairs = keep.astype(np.int64)
        self.prow = local[pair_row[keep]].astype(np.int64)
        self.pnode = nodes.astype(np.int64)
        self.pw = inv_mass[nodes].astype(np.float64)
        # all (a, b) pairs of kept pairs that share a node
        starts = np.flatnonzero(np.r_[True, nodes[1:] != nodes[:-1]]) if nodes.size else np.zeros(0, np.int64)
        counts = np.diff(np.r_[starts, nodes.size])
        reps = np.repeat(counts, counts)  # group size for each member
        a_local = np.repeat(np.arange(nodes.size), reps)
        member_start = np.repeat(starts, counts)  # start of each member's group
        b_off = np.arange(a_local.size) - np.repeat(np.cumsum(np.r_[0, reps[:-1]]), reps)
        b_local = np.repeat(member_start, reps) + b_off
        ra, rb = self.prow[a_local], self.prow[b_local]
        self.ta = keep[a_local].astype(np.int64)
        self.tb = keep[b_local].astype(np.int64)
        self.tw = 4.0 * self.pw[a_local]
        if self.dense:
            self.ts = (ra * k + rb).astype(np.int64)
            self._values = np.zeros(k * k)
        else:
            key = ra * k + rb
            uniq, inv = np.unique(key, return_inverse=True)
            self.ts = inv.astype(np.int64)
            self._values = np.zeros(uniq.size)
            r, c = uniq // k, uniq % k
            order = np.lexsort((r, c))  # CSC order: by column then row
            self._csc_perm = order
            self._csc_indices = r[order]
            self._csc_indptr = np.r_[0, np.cumsum(np.bincount(c, minlength=k))]
        self._dx = np.zeros((self.n, 3))

    def matrix(self, AX: np.ndarray):
        """S at the current A x: dense (k, k) ndarray or scipy.sparse.csc_matrix."""
        schur_values(AX, self.ta, self.tb, self.ts, self.tw, self._values)
        if self.dense:
            return self._values.reshape(self.k, self.k)
        return sp.csc_matrix((self._values[self._csc_perm], self._csc_indices, self._csc_indptr),
                             shape=(self.k, self.k))

    def solve(self, AX: np.ndarray, c: np.ndarray, regularization: float, backend: str = "auto") -> np.ndarray:
        """Δλ = (S + εI)⁻¹ c, ε = regularization·max diag S.

        Raises
        ------
        numpy.linalg.LinAlgError if S + εI is not positive definite.
        """
        S = self.matrix(AX)
        if self.dense and backend in ("auto", "dense"):
            S = S.copy()
            d = np.einsum("ii->i", S)
            eps = regularization * (d.max() if d.size else 0.0)
            d += eps
            L, info = lapack.dpotrf(S, lower=1, clean=0, overwrite_a=1)
            if info != 0:
                raise np.linalg.LinAlgError(f"Schur complement not positive definite (LAPACK info {info})")
            x, info = lapack.dpotrs(L, c, lower=1)
            return x
        if backend in ("auto", "cholmod") and _cholmod() is not None:
            return self._cholmod_solve(S, c, regularization)
        return spd_factor(S, regularization=regularization, backend="auto" if backend == "dense" else backend).solve(c)

    def _cholmod_solve(self, S, c, regularization):
        """CHOLMOD (scikit-sparse) with the symbolic analysis done once for the fixed pattern."""
        eps = regularization * float(S.diagonal().max()) if self.k else 0.0
        if getattr(self, "_symbolic", None) is None:
            self._symbolic = _cholmod().analyze(S, mode="auto")
        self._symbolic.cholesky_inplace(S, beta=eps)
        return self._symbolic(c)

    def displacement(self, AX: np.ndarray, dl: np.ndarray) -> np.ndarray:
        """Δφ = −M⁻¹ ∇Cᵀ Δλ as (n, 3) float64 [m] (a view reused between calls)."""
        apply_transpose(AX, self.pairs, self.prow, self.pnode, self.pw, dl, self._dx)
        return self._dx
