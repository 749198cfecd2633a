"""Fixed-pattern assembly of A + c Σ_p B_p on the free coordinates.

Implicit steps with an element energy (e.g. the membrane stabilisation, ``isocloth.fem.membrane``)
solve, every step, with S = A_ff + c H_ff, where A is a constant sparse matrix, H = Σ_p B_p a sum of
small dense blocks B_p (one per quadrature point, on the coordinates ``dofs[p]``) that change every
step, and _ff keeps the free (not prescribed) coordinates. The sparsity pattern of S never changes:
:class:`BlockAssembly` works it out once and then fills S's CSC data with one scatter-add pass (numba), where
building H as a scipy matrix, slicing the free block and adding A made the whole predictor call
2.4× slower on a 63-node sheet (1.25 vs 0.51 ms; benchmarks/RESULTS.md, "Predictor with the membrane
stabilisation"). The fixed pattern also
lets CHOLMOD keep its symbolic analysis (:class:`~isocloth.solvers.linalg.SPDFactorCache`).
"""

from __future__ import annotations

import numba as nb
import numpy as np
import scipy.sparse as sp

__all__ = ["BlockAssembly"]


@nb.njit(cache=True)
def _scatter_add(base, pos, values, sel, c, out):
    """out = base; out[pos[m]] += c · values[sel[m]] for every m."""
    for m in range(base.size):
        out[m] = base[m]
    for m in range(pos.size):
        out[pos[m]] += c * values[sel[m]]


class BlockAssembly:
    """S = A_ff + c Σ_p B_p[free, free] on a fixed CSC pattern.

    Parameters
    ----------
    A : (N, N) scipy.sparse matrix, the constant part (symmetric).
    dofs : (p, q) int64, the coordinates of each block (0 ≤ dofs < N; repeats allowed).
    free : (N,) bool, the coordinates kept in S (prescribed ones are False).

    Raises
    ------
    ValueError
        If the shapes do not match or a block coordinate is out of range.
    """

    def __init__(self, A, dofs: np.ndarray, free: np.ndarray) -> None:
        A = sp.csr_matrix(A)
        dofs = np.asarray(dofs, dtype=np.int64)
        free = np.asarray(free, dtype=bool)
        N = A.shape[0]
        if A.shape != (N, N) or free.shape != (N,) or dofs.ndim != 2:
            raise ValueError(f"need A (N, N), free (N,) and dofs (p, q); got {A.shape}, {free.shape}, {dofs.shape}")
        if dofs.size and (dofs.min() < 0 or dofs.max() >= N):
            raise ValueError(f"block coordinates must lie in [0, {N}), got [{dofs.min()}, {dofs.max()}]")
        self.size = int(free.sum())
        self._free = free
        self._dofs = dofs
        nf = self.size
        local = np.full(N, -1, dtype=np.int64)
        local[free] = np.arange(nf)
        C = A.tocoo()
        keep = free[C.row] & free[C.col]
        ra, ca, va = local[C.row[keep]], local[C.col[keep]], C.data[keep]
        q = dofs.shape[1]
        rb = local[np.repeat(dofs, q, axis=1).ravel()]
        cb = local[np.tile(dofs, (1, q)).ravel()]
        self._sel = np.flatnonzero((rb >= 0) & (cb >= 0))
        rb, cb = rb[self._sel], cb[self._sel]
        keys = np.concatenate([ca * nf + ra, cb * nf + rb])  # column-major: CSC order, rows sorted
        uniq, inverse = np.unique(keys, return_inverse=True)
        self.nnz = int(uniq.size)
        self.indices = (uniq % nf).astype(np.int32)
        self.indptr = np.searchsorted(uniq // nf, np.arange(nf + 1)).astype(np.int32)
        self._base = np.bincount(inverse[:va.size], weights=va, minlength=self.nnz)
        self._pos = inverse[va.size:]
        self._A = A
        self._coupled = bool((~free).any())
        if self.nnz >= np.iinfo(np.int32).max:
            raise ValueError(f"{self.nnz} nonzeros do not fit 32-bit CSC indices")

    def _check(self, blocks) -> np.ndarray:
        blocks = np.asarray(blocks, dtype=np.float64)
        p, q = self._dofs.shape
        if blocks.shape != (p, q, q):
            raise ValueError(f"blocks must have shape {(p, q, q)} (one per row of dofs), got {blocks.shape}")
        return blocks

    def matrix(self, blocks: np.ndarray, c: float) -> sp.csc_matrix:
        """S = A_ff + c Σ_p B_p restricted to the free coordinates, (n_f, n_f) csc with sorted
        indices; ``blocks`` (p, q, q) float64. The pattern is the same on every call.

        Raises
        ------
        ValueError
            ``blocks`` of another shape.
        """
        blocks = self._check(blocks)
        data = np.empty(self.nnz)
        _scatter_add(self._base, self._pos, blocks.reshape(-1), self._sel, float(c), data)
        S = sp.csc_matrix((data, self.indices, self.indptr), shape=(self.size, self.size))
        S.has_sorted_indices = True
        return S

    def prescribed_coupling(self, blocks: np.ndarray, c: float, v: np.ndarray) -> np.ndarray:
        """(A + c Σ_p B_p)[free, prescribed] v[prescribed], (n_f,) float64, for v (N,) (its free
        entries are ignored): the right-hand-side term of eliminated prescribed coordinates."""
        blocks = self._check(blocks)
        if not self._coupled:
            return np.zeros(self.size)
        vg = np.where(self._free, 0.0, np.asarray(v, dtype=np.float64))
        y = self._A @ vg
        y += c * np.bincount(self._dofs.ravel(), weights=np.einsum("pij,pj->pi", blocks, vg[self._dofs]).ravel(),
                             minlength=vg.size)
        return y[self._free]
