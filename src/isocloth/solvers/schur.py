"""Fast assembly of the Schur complement S = ∇C M⁻¹ ∇Cᵀ for quadratic constraint rows.

For rows C_r = Σ_ij T^{rij}⟨p_i,p_j⟩ − C0_r, ∂C_r/∂p_i = 2 (A x)_{(r,i)} (see
``isocloth.fem.inextensibility``), so

    S_{r s} = Σ_i w_i ⟨∂C_r/∂p_i, ∂C_s/∂p_i⟩ = 4 Σ_i w_i ⟨(Ax)_{(r,i)}, (Ax)_{(s,i)}⟩.

The set of (r, s, i) triples is fixed by the mesh, the enforced rows and the free nodes, so it
is computed once; each iteration then only sums products (numba kernel). Small systems are
assembled dense and factored with LAPACK; larger ones in CSC form for a sparse Cholesky
(CHOLMOD through scikit-sparse: symbolic analysis once, with a nested-dissection ordering;
simplicial below ``SUPERNODAL_MIN_ROWS`` rows, supernodal above; measured in
docs/design/linear-algebra.md).

The factorization is kept (:meth:`SchurSystem.factorize`, :meth:`SchurSystem.solve_factored`)
so that the projection can take further steps with it at later iterates (chord steps).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.linalg import lapack

from isocloth.solvers._schur_kernels import apply_transpose, schur_apply, schur_values
from isocloth.solvers.linalg import DENSE_LIMIT, spd_factor

__all__ = ["SchurSystem", "same_node_pairs", "schur_product", "SUPERNODAL_MIN_ROWS", "CHOLMOD_MODES", "ORDERINGS"]

# Above this many rows CHOLMOD's supernodal factorization (BLAS-3 on dense supernodes) beats the
# simplicial one on the Schur complements of quad sheets with one OpenBLAS thread (nesdis ordering):
# simplicial 31.7 vs supernodal 47.1 ms at 3407 rows, equal at 5727, 232.6 vs 164.5 ms at 10332
# (benchmarks/RESULTS.md). With the reference BLAS they were equal at 2828 rows.
SUPERNODAL_MIN_ROWS = 5700
CHOLMOD_MODES = ("auto", "simplicial", "supernodal", "cholmod")
ORDERINGS = ("nesdis", "metis", "amd", "default")


def _cholmod():
    """scikit-sparse's CHOLMOD module, or None when it is not installed (optional, faster)."""
    try:
        from sksparse import cholmod
    except ImportError:
        return None
    return cholmod


def same_node_pairs(nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) int64 arrays of every ordered pair of positions with nodes[i] == nodes[j] (i == j
    included), grouped by node in the order of a stable sort of ``nodes`` (n,) int64."""
    order = np.argsort(nodes, kind="stable")
    sorted_nodes = nodes[order]
    starts = np.flatnonzero(np.r_[True, sorted_nodes[1:] != sorted_nodes[:-1]]) if nodes.size else np.zeros(0, np.int64)
    counts = np.diff(np.r_[starts, nodes.size])
    reps = np.repeat(counts, counts)  # group size of each member
    i = np.repeat(np.arange(nodes.size), reps)
    offset = np.arange(i.size) - np.repeat(np.cumsum(np.r_[0, reps[:-1]]), reps)  # partner's rank in the group
    j = np.repeat(np.repeat(starts, counts), reps) + offset
    return order[i], order[j]


def schur_product(system, AX: np.ndarray, v: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """(∇C M⁻¹ ∇Cᵀ + diag shift) v (k,) float64 at A φ = AX (P, 3) [m] for the rows and free
    nodes of ``system`` (its ``pairs``, ``prow``, ``pnode``, ``pw``), without assembling the
    matrix; ``shift`` (k,) [m²/kg] (regularisation and compliance)."""
    tmp = getattr(system, "_product_tmp", None)
    if tmp is None or tmp.shape[0] != system.n:
        tmp = system._product_tmp = np.zeros((system.n, 3))
    out = np.empty(system.k)
    schur_apply(AX, system.pairs, system.prow, system.pnode, system.pw, np.ascontiguousarray(v, np.float64),
                shift, tmp, out)
    return out


class SchurSystem:
    """Fixed-pattern Schur complement of a set of enforced rows.

    Parameters
    ----------
    pair_row, pair_node : (P,) int64, the (row, node) pairs of the constraint tensor.
    rows : (k,) int64, enforced rows (global numbering).
    inv_mass : (n,) float64 [1/kg], 0 for prescribed nodes.
    row_count : int, total number of rows m.
    dense : bool or None, force dense/sparse assembly (default: dense when k ≤ DENSE_LIMIT).
    cholmod_mode : "auto" | "simplicial" | "supernodal" | "cholmod"
        Sparse factorization kind: "auto" = simplicial below ``SUPERNODAL_MIN_ROWS`` rows, else
        supernodal; "cholmod" lets CHOLMOD choose (its own flop-count rule).
    ordering : "nesdis" | "metis" | "amd" | "default"
        CHOLMOD fill-reducing ordering; "nesdis" (nested dissection) gave 10–35 % less fill and
        faster factorizations than CHOLMOD's default on cloth sheets; "default" is CHOLMOD's
        own choice (AMD, METIS when AMD fills badly).

    Raises
    ------
    ValueError for an unknown ``cholmod_mode`` or ``ordering``.
    """

    def __init__(self, pair_row, pair_node, rows, inv_mass, row_count, *, dense=None,
                 cholmod_mode: str = "auto", ordering: str = "nesdis"):
        if cholmod_mode not in CHOLMOD_MODES:
            raise ValueError(f"cholmod_mode must be one of {CHOLMOD_MODES}, got {cholmod_mode!r}")
        if ordering not in ORDERINGS:
            raise ValueError(f"ordering must be one of {ORDERINGS}, got {ordering!r}")
        k = rows.size
        self.k = k
        self.n = inv_mass.size
        self.dense = (k <= DENSE_LIMIT) if dense is None else bool(dense)
        if cholmod_mode == "auto":
            cholmod_mode = "simplicial" if k < SUPERNODAL_MIN_ROWS else "supernodal"
        self.cholmod_mode = "auto" if cholmod_mode == "cholmod" else cholmod_mode
        self.ordering = ordering
        self._symbolic = None
        self._factor = None  # ("dense", L) | ("cholmod", Factor) | ("other", SPDFactor)
        self.factor_AX = None  # A x at the factorization (linearisation point of chord steps)
        self.factor_x = None  # positions of the factorization, recorded by the caller (SolverProjection)
        self.factor_AX_absmax = 0.0
        self.factor_compliance = None  # (k,) compliance of the factorization, None without
        self.factor_shift = 0.0  # ε of the factorization
        self.factorizations = 0
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
        a_local, b_local = same_node_pairs(nodes)  # all (a, b) pairs of kept pairs that share a node
        ra, rb = self.prow[a_local], self.prow[b_local]
        # S is symmetric: only its lower triangle (row ≥ column) is assembled, which is all that
        # LAPACK's dpotrf(lower) and CHOLMOD (stype −1) read; a diagonal entry comes from a == b
        low = ra >= rb
        a_local, b_local, ra, rb = a_local[low], b_local[low], ra[low], rb[low]
        self.ta = keep[a_local].astype(np.int64)
        self.tb = keep[b_local].astype(np.int64)
        self.tw = 4.0 * self.pw[a_local]
        if self.dense:
            self.ts = (ra * k + rb).astype(np.int64)  # row-major (ra, rb): the lower triangle
            self._values = np.zeros(k * k)
            self._diag_idx = np.arange(k) * (k + 1)
        else:
            key = rb * k + ra  # column-major: np.unique sorts the entries into CSC order
            uniq, inv = np.unique(key, return_inverse=True)
            self.ts = inv.astype(np.int64)
            self._values = np.zeros(uniq.size)
            r, c = uniq % k, uniq // k
            indptr = np.r_[0, np.cumsum(np.bincount(c, minlength=k))]
            self._diag_idx = indptr[:-1]  # rows are sorted and r ≥ c: the diagonal comes first
            if k and not np.array_equal(r[self._diag_idx], np.arange(k)):
                raise ValueError("Schur complement pattern lacks a diagonal entry (a row without free nodes)")
            idx_dtype = np.int32 if uniq.size < 2**31 else np.int64
            # lower triangle in CSC form sharing self._values: the factorization reads it in place
            self._lower = sp.csc_matrix((self._values, r.astype(idx_dtype), indptr.astype(idx_dtype)),
                                        shape=(k, k), copy=False)
        self._dx = np.zeros((self.n, 3))

    def _assemble(self, AX: np.ndarray) -> None:
        """Fill the lower triangle of S(A x) into ``self._values`` (numba kernel)."""
        schur_values(AX, self.ta, self.tb, self.ts, self.tw, self._values)

    def matrix(self, AX: np.ndarray):
        """S at A x, full symmetric: dense (k, k) ndarray or scipy.sparse.csc_matrix (new arrays)."""
        self._assemble(AX)
        if self.dense:
            L = self._values.reshape(self.k, self.k)
            return L + L.T - np.diag(np.diag(L))
        L = self._lower.copy()
        return (L + L.T - sp.diags(L.diagonal())).tocsc()

    def factorize(self, AX: np.ndarray, regularization: float, backend: str = "auto",
                  compliance: np.ndarray | None = None) -> None:
        """Factor S(A x) + εI + diag(α), ε = regularization·max diag S, and keep it (with a copy of A x).

        Parameters
        ----------
        AX : (P, 3) float64, A φ at the linearisation point [m].
        regularization : float, relative diagonal shift ε (≥ 0).
        compliance : (k,) float64 [m²/kg] or None, per-row compliance α added to the diagonal
            (compliant rows, see :class:`~isocloth.solvers.projection.SolverProjection`).
        backend : "auto" | "dense" | "cholmod" | "splu"
            "auto": LAPACK for dense systems, else CHOLMOD (scikit-sparse), else
            :func:`isocloth.solvers.linalg.spd_factor` (cholespy / SuperLU).

        Raises
        ------
        numpy.linalg.LinAlgError if S + εI is not positive definite.
        """
        self._factor = None
        self._assemble(AX)
        eps = regularization * float(self._values[self._diag_idx].max()) if self.k else 0.0
        if compliance is not None:
            self._values[self._diag_idx] += compliance
        if self.dense and backend in ("auto", "dense"):
            S = self._values.reshape(self.k, self.k).copy()
            S.flat[self._diag_idx] += eps
            L, info = lapack.dpotrf(S, lower=1, clean=0, overwrite_a=1)
            if info != 0:
                raise np.linalg.LinAlgError(f"Schur complement not positive definite (LAPACK info {info})")
            self._factor = ("dense", L)
        else:
            chol = _cholmod() if backend in ("auto", "cholmod") and not self.dense else None
            if chol is not None:
                S = self._lower
            else:
                S = self.matrix(AX)
                if compliance is not None:
                    S = (S + sp.diags(compliance)).tocsc()
            if chol is not None:
                if self._symbolic is None:
                    self._symbolic = chol.analyze(S, mode=self.cholmod_mode, ordering_method=self.ordering)
                try:
                    self._symbolic.cholesky_inplace(S, beta=eps)
                except chol.CholmodNotPositiveDefiniteError as e:
                    raise np.linalg.LinAlgError(f"Schur complement not positive definite ({e})") from e
                self._factor = ("cholmod", self._symbolic)
            else:
                self._factor = ("other", spd_factor(S, regularization=regularization,
                                                    backend="auto" if backend == "dense" else backend))
        self.factor_AX = np.array(AX, dtype=np.float64, copy=True)
        self.factor_AX_absmax = float(np.abs(self.factor_AX).max()) if AX.size else 0.0
        self.factor_compliance = None if compliance is None else np.array(compliance, dtype=np.float64)
        self.factor_shift = eps
        self.factorizations += 1

    @property
    def has_factor(self) -> bool:
        """True once :meth:`factorize` has succeeded."""
        return self._factor is not None

    def solve_factored(self, c: np.ndarray) -> np.ndarray:
        """Δλ = (S_f + εI)⁻¹ c with the kept factorization, (k,) float64.

        Raises
        ------
        RuntimeError if :meth:`factorize` has not been called.
        """
        if self._factor is None:
            raise RuntimeError("SchurSystem.solve_factored called before factorize()")
        kind, f = self._factor
        if kind == "dense":
            x, info = lapack.dpotrs(f, c, lower=1)
            return x
        return f(c) if kind == "cholmod" else f.solve(c)

    def solve(self, AX: np.ndarray, c: np.ndarray, regularization: float, backend: str = "auto") -> np.ndarray:
        """Δλ = (S + εI)⁻¹ c, ε = regularization·max diag S (factorize, then solve).

        Raises
        ------
        numpy.linalg.LinAlgError if S + εI is not positive definite.
        """
        self.factorize(AX, regularization, backend)
        return self.solve_factored(c)

    def displacement(self, AX: np.ndarray, dl: np.ndarray) -> np.ndarray:
        """Δφ = −M⁻¹ ∇Cᵀ Δλ as (n, 3) float64 [m] (a view reused between calls)."""
        apply_transpose(AX, self.pairs, self.prow, self.pnode, self.pw, dl, self._dx)
        return self._dx
