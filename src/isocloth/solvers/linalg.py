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

__all__ = ["SPDFactor", "spd_factor", "DENSE_LIMIT"]

DENSE_LIMIT = 600  # systems up to this size use dense LAPACK (measured crossover, see benchmarks)


class SPDFactor:
    """A factorization of S + εI with ``solve(b)``; b (m,) or (m, k) float64."""

    def __init__(self, backend: str, solve):
        self.backend = backend
        self._solve = solve

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
        return SPDFactor("dense", lambda b: la.cho_solve(c, b, check_finite=False))
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
