"""Factorizations of the symmetric positive (semi-)definite systems of the solvers.

Backends (chosen by size, see ``docs/design/linear-algebra.md`` and ``benchmarks/``):
- "dense": LAPACK Cholesky (scipy.linalg.cho_factor) — fastest for small systems;
- "cholmod": supernodal CHOLMOD — scikit-sparse when installed (needs SuiteSparse headers,
  installed by setup.sh), else the ``cholespy`` wheel — large sparse systems;
- "splu": SciPy's SuperLU — fallback when cholespy is unavailable.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp

__all__ = ["SPDFactor", "spd_factor", "SPDFactorCache", "DENSE_LIMIT"]

DENSE_LIMIT = 600  # systems up to this size use dense LAPACK (measured crossover, see benchmarks)


class SPDFactor:
    """A factorization of S + εI with ``solve(b)``; b (m,) or (m, k) float64.

    ``pivot_ratio()`` is the smallest over the largest Cholesky pivot (1.0 when the backend does
    not expose its pivots): ~1e-16 means S + εI is numerically singular.
    """

    def __init__(self, backend: str, solve, pivots=None):
        self.backend = backend
        self._solve = solve
        self._pivots = pivots

    def pivot_ratio(self) -> float:
        if self._pivots is None:
            return 1.0
        d = np.abs(np.asarray(self._pivots() if callable(self._pivots) else self._pivots))
        return float(d.min() / d.max()) if d.size and d.max() > 0 else 0.0

    def solve(self, b: np.ndarray) -> np.ndarray:
        return self._solve(b)


def _cholespy(S: sp.spmatrix):
    try:
        from cholespy import CholeskySolverD, MatrixType
    except ImportError:  # pragma: no cover - optional backend
        return None
    C = S.tocoo()  # full symmetric matrix in COO form
    solver = CholeskySolverD(S.shape[0], C.row.astype(np.int32), C.col.astype(np.int32),
                             C.data.astype(np.float64), MatrixType.COO)

    def solve(b):
        b = np.ascontiguousarray(b, dtype=np.float64)
        x = np.empty_like(b)
        solver.solve(b, x)
        return x

    return solve


def spd_factor(S, *, regularization: float = 0.0, backend: str = "auto") -> SPDFactor:
    """Factor S + ε I, ε = regularization · max(diag S).

    Parameters
    ----------
    S : (m, m) ndarray or scipy.sparse matrix, symmetric positive semi-definite.
    regularization : float
        Relative diagonal shift (keeps rank-deficient systems, e.g. the flat-sheet Schur
        complement, factorable).
    backend : "auto" | "dense" | "cholmod" | "splu"

    Raises
    ------
    ValueError
        For an unknown backend. numpy.linalg.LinAlgError if S + εI is not positive definite.
    """
    m = S.shape[0]
    if backend == "auto":
        backend = "dense" if m <= DENSE_LIMIT else "cholmod"
    if backend not in ("dense", "cholmod", "splu"):
        raise ValueError(f"unknown backend {backend!r}; use auto, dense, cholmod or splu")
    diag = S.diagonal() if sp.issparse(S) else np.diag(S)
    eps = regularization * (float(diag.max()) if m else 0.0)
    if eps <= 0 and regularization > 0:
        eps = regularization
    if backend == "dense":
        D = S.toarray() if sp.issparse(S) else np.array(S, dtype=np.float64)
        D[np.diag_indices(m)] += eps
        c = la.cho_factor(D, lower=True, check_finite=False)
        return SPDFactor("dense", lambda b: la.cho_solve(c, b, check_finite=False),
                         pivots=lambda: np.diag(c[0]) ** 2)
    Ss = sp.csc_matrix(S) + eps * sp.identity(m, format="csc")
    if backend == "cholmod":
        try:
            from sksparse.cholmod import cholesky

            f = cholesky(Ss.tocsc())
            return SPDFactor("cholmod", f)
        except ImportError:
            pass
        solve = _cholespy(Ss)
        if solve is not None:
            return SPDFactor("cholmod", solve)
    lu = sp.linalg.splu(Ss.tocsc())
    return SPDFactor("splu", lu.solve)


class SPDFactorCache:
    """Factorizations of a sequence of SPD matrices that often share one sparsity pattern.

    Like :func:`spd_factor`, but for sparse systems above ``DENSE_LIMIT`` with scikit-sparse
    installed, CHOLMOD's symbolic analysis (fill-reducing ordering) is redone only when the pattern
    changes, and the numeric factorization is done in place on the stored analysis. The contact
    solver factorizes ∇G M⁻¹ ∇Gᵀ once per linearisation; between linearisations the pattern changes
    only when the warm-start working set does.

    Parameters
    ----------
    mode : "simplicial" | "supernodal" | "auto"
        CHOLMOD factorization mode. Simplicial is the default: on the cloth Schur complements
        (≈ 60 non-zeros per row) it factorized ~2× faster than supernodal with one BLAS thread
        (docs/design/linear-algebra.md).

    Notes
    -----
    A returned factor is valid until the next call of :meth:`factor` (the numeric factorization
    is overwritten in place).
    """

    def __init__(self, mode: str = "simplicial") -> None:
        if mode not in ("simplicial", "supernodal", "auto"):
            raise ValueError(f"unknown CHOLMOD mode {mode!r}; use simplicial, supernodal or auto")
        self.mode = mode
        self._symbolic = None
        self._pattern = None
        self.analyses = 0

    def factor(self, S, *, regularization: float = 0.0, backend: str = "auto") -> SPDFactor:
        """Factor S + ε I (ε = regularization · max diag S); same conventions as :func:`spd_factor`."""
        m = S.shape[0]
        if backend == "auto":
            backend = "dense" if m <= DENSE_LIMIT else "cholmod"
        if backend != "cholmod" or not sp.issparse(S):
            return spd_factor(S, regularization=regularization, backend=backend)
        try:
            from sksparse.cholmod import analyze
        except ImportError:
            return spd_factor(S, regularization=regularization, backend=backend)
        S = sp.csc_matrix(S)
        S.sort_indices()
        diag = S.diagonal()
        eps = regularization * (float(diag.max()) if m else 0.0)
        if eps <= 0 and regularization > 0:
            eps = regularization
        pat = self._pattern
        if pat is None or pat[0].shape != S.indptr.shape or pat[1].shape != S.indices.shape \
                or not (np.array_equal(pat[0], S.indptr) and np.array_equal(pat[1], S.indices)):
            self._symbolic = analyze(S, mode=self.mode)
            self._pattern = (S.indptr.copy(), S.indices.copy())
            self.analyses += 1
        f = self._symbolic
        f.cholesky_inplace(S, beta=eps)
        return SPDFactor("cholmod", f, pivots=f.D)
