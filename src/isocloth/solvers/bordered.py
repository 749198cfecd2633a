"""Schur complement of a set of rows with a few rows appended: a bordered factorization.

The rows of a projection are split into the base rows (the model's constraints) and h appended
rows (e.g. element edges held at their stretch bound, :mod:`isocloth.fem.stretch_limits`), whose
set changes from step to step. With S the base block, K = ∇C_b M⁻¹ ∇C_hᵀ (k × h) and
D = ∇C_h M⁻¹ ∇C_hᵀ + diag α_h + εI (h × h), all at one linearisation point A φ_f,

    [S  K] [a]   [r]        T = D − Kᵀ S⁻¹ K (h × h, dense),
    [Kᵀ D] [b] = [s],       b = T⁻¹ (s − Kᵀ S⁻¹ r),   a = S⁻¹ r − (S⁻¹ K) b

(block elimination; Golub & Van Loan, *Matrix Computations*, §3.2). S is factored once per
linearisation point and shared by every appended set (it is the base rows' own
:class:`~isocloth.solvers.schur.SchurSystem`); a new set costs h solves with that factor and a
dense h × h Cholesky instead of a symbolic analysis and a factorization of the whole system.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from isocloth.solvers._schur_kernels import apply_transpose, schur_values
from isocloth.solvers.schur import SchurSystem, same_node_pairs

__all__ = ["BorderedSchur"]


class BorderedSchur:
    """The Schur complement of ``base.rows`` followed by ``appended`` rows, factored by block
    elimination on the factorization of ``base`` (same interface as
    :class:`~isocloth.solvers.schur.SchurSystem` for :class:`~isocloth.solvers.projection.SolverProjection`).

    Parameters
    ----------
    base : SchurSystem
        Schur complement of the base rows, built on the same constraint tensor (same pairs, so
        the same A φ).
    pair_row, pair_node : (P,) int64, the (row, node) pairs of the constraint tensor.
    appended : (h,) int64, the appended rows (global numbering, none of them a base row).
    inv_mass : (n,) float64 [1/kg], 0 for prescribed nodes (the base's).
    row_count : int, total number of rows m.
    """

    def __init__(self, base: SchurSystem, pair_row, pair_node, appended, inv_mass, row_count):
        appended = np.asarray(appended, dtype=np.int64)
        kb, h = base.k, appended.size
        self.base = base
        self.appended = appended
        self.kb, self.h, self.k, self.n = kb, h, kb + h, base.n
        self.dense = base.dense
        local = np.full(row_count, -1, dtype=np.int64)
        local[appended] = np.arange(h)
        keep = np.flatnonzero((local[pair_row] >= 0) & (inv_mass[pair_node] > 0))
        ext_node = pair_node[keep]
        ext_row = local[pair_row[keep]]
        ext_w = inv_mass[ext_node].astype(np.float64)
        # K: every base pair at the node of an appended pair (base pairs are sorted by node)
        lo = np.searchsorted(base.pnode, ext_node, side="left")
        hi = np.searchsorted(base.pnode, ext_node, side="right")
        counts = hi - lo
        a = np.repeat(np.arange(keep.size), counts)
        b = np.repeat(lo - np.cumsum(np.r_[0, counts[:-1]]), counts) + np.arange(counts.sum())
        self._k_ta, self._k_tb = keep[a], base.pairs[b]
        self._k_ts = base.prow[b] * h + ext_row[a]  # row-major (base row, appended row)
        self._k_tw = 4.0 * ext_w[a]
        # D: every pair of appended pairs at one node (both orders: the full h × h block)
        i, j = same_node_pairs(ext_node)
        self._d_ta, self._d_tb = keep[i], keep[j]
        self._d_ts = ext_row[i] * h + ext_row[j]
        self._d_tw = 4.0 * ext_w[i]
        self.pairs = np.r_[base.pairs, keep].astype(np.int64)
        self.prow = np.r_[base.prow, kb + ext_row].astype(np.int64)
        self.pnode = np.r_[base.pnode, ext_node].astype(np.int64)
        self.pw = np.r_[base.pw, ext_w]
        self._K = np.zeros(kb * h)
        self._D = np.zeros(h * h)
        self._Kf = self._Z = self._T = None
        self._base_version = -1
        self.factor_x = None  # recorded by the caller (SolverProjection)
        self.factorizations = 0
        self._dx = np.zeros((self.n, 3))

    def blocks(self, AX: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """K = ∇C_b M⁻¹ ∇C_hᵀ (kb, h) and ∇C_h M⁻¹ ∇C_hᵀ (h, h), float64, at A φ = AX (P, 3) [m]
        (views of buffers reused between calls; units of the Schur complement, m²/kg)."""
        schur_values(AX, self._k_ta, self._k_tb, self._k_ts, self._k_tw, self._K)
        schur_values(AX, self._d_ta, self._d_tb, self._d_ts, self._d_tw, self._D)
        return self._K.reshape(self.kb, self.h), self._D.reshape(self.h, self.h)

    def matrix(self, AX: np.ndarray) -> np.ndarray:
        """The full Schur complement at A φ = AX (P, 3) [m], dense (k, k) float64 [m²/kg] (new array)."""
        S = self.base.matrix(AX)
        S = S.toarray() if hasattr(S, "toarray") else S
        K, D = self.blocks(AX)
        return np.block([[S, K], [K.T, D]])

    def factorize(self, AX: np.ndarray, regularization: float, backend: str = "auto",
                  compliance: np.ndarray | None = None) -> None:
        """Factor the bordered system at A φ = AX (P, 3) with ``compliance`` (k,) [m²/kg] (or None)
        on its diagonal: the base is refactored unless its factorization is already at AX with the
        same base compliance, then T = D − Kᵀ S⁻¹ K is factored densely.

        Raises
        ------
        numpy.linalg.LinAlgError if the base or T is not positive definite.
        """
        self._T = None
        base = self.base
        c_base = None if compliance is None else compliance[:self.kb]
        if c_base is not None and not c_base.any():
            c_base = None
        if not (base.has_factor and base.factor_AX is not None and base.factor_AX.shape == AX.shape
                and np.array_equal(base.factor_AX, AX)
                and (base.factor_compliance is None) == (c_base is None)
                and (c_base is None or np.array_equal(base.factor_compliance, c_base))):
            base.factor_x = None
            base.factorize(AX, regularization, backend, c_base)
        K, D = self.blocks(AX)
        Z = self._base_solutions(K)
        T = D - K.T @ Z
        T.flat[:: self.h + 1] += base.factor_shift
        if compliance is not None:
            T.flat[:: self.h + 1] += compliance[self.kb:]
        L, info = lapack.dpotrf(T, lower=1, clean=0, overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"bordered Schur complement not positive definite (LAPACK info {info})")
        self._Kf, self._Z, self._T = K.copy(), Z, L
        self._base_version = base.factorizations
        self.factorizations += 1

    def _base_solutions(self, K: np.ndarray) -> np.ndarray:
        """Z = S⁻¹ K (kb, h) with the base's current factorization. Its columns depend on one
        appended row each, so a sparse base keeps them (until it is refactored) for the other
        appended sets that share that row: a new set costs solves for its new rows only. Each is
        solved on its own, so that a column does not depend on the set it was first solved with
        (blocked solves may round differently)."""
        base = self.base
        if base.dense:
            return base.solve_factored(K)
        kept = base.__dict__.setdefault("_border_columns", {})
        if kept.get(None) != base.factorizations:
            kept.clear()
            kept[None] = base.factorizations
        for j, r in enumerate(self.appended.tolist()):
            if r not in kept:
                kept[r] = base.solve_factored(np.ascontiguousarray(K[:, j]))
        return np.column_stack([kept[r] for r in self.appended.tolist()]) if self.h else np.zeros((self.kb, 0))

    @property
    def factor_AX(self) -> np.ndarray | None:
        """(P, 3) float64 [m], A φ at the factorization (the base's), None without a current one."""
        return self.base.factor_AX if self.has_factor else None

    @property
    def factor_AX_absmax(self) -> float:
        """max |A φ| at the factorization [m] (the base's)."""
        return self.base.factor_AX_absmax

    @property
    def factor_shift(self) -> float:
        """ε of the factorization (the base's) [m²/kg]."""
        return self.base.factor_shift

    @property
    def has_factor(self) -> bool:
        """True while the last :meth:`factorize` stands on the base's current factorization."""
        return self._T is not None and self.base.has_factor and self._base_version == self.base.factorizations

    def solve_factored(self, c: np.ndarray) -> np.ndarray:
        """The solution (k,) float64 of the factored bordered system for right-hand side c (k,).

        Raises
        ------
        RuntimeError if the system is not factored (or the base was refactored since).
        """
        if not self.has_factor:
            raise RuntimeError("BorderedSchur.solve_factored called without a current factorization")
        a = self.base.solve_factored(c[:self.kb])
        b, _ = lapack.dpotrs(self._T, c[self.kb:] - self._Kf.T @ a, lower=1)
        return np.r_[a - self._Z @ b, b]

    def displacement(self, AX: np.ndarray, dl: np.ndarray) -> np.ndarray:
        """Δφ = −M⁻¹ ∇Cᵀ Δλ as (n, 3) float64 [m] over base and appended rows (a view reused between calls)."""
        apply_transpose(AX, self.pairs, self.prow, self.pnode, self.pw, dl, self._dx)
        return self._dx
