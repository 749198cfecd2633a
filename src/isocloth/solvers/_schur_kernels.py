"""Numba kernels for the Schur complement ∇C M⁻¹ ∇Cᵀ (private; wrappers in schur.py validate)."""

import numba as nb
import numpy as np


@nb.njit(cache=True)
def schur_values(AX, ta, tb, ts, tw, out):
    """out[ts[t]] += tw[t] · ⟨AX[ta[t]], AX[tb[t]]⟩ for every triple t (out zeroed first)."""
    out[:] = 0.0
    for t in range(ta.shape[0]):
        a = ta[t]
        b = tb[t]
        out[ts[t]] += tw[t] * (AX[a, 0] * AX[b, 0] + AX[a, 1] * AX[b, 1] + AX[a, 2] * AX[b, 2])


@nb.njit(cache=True)
def apply_transpose(AX, pairs, prow, pnode, pw, dl, out):
    """out[i] −= pw · 2 AX[p] dl[prow] over kept pairs p (out zeroed first): Δφ = −M⁻¹∇CᵀΔλ."""
    out[:] = 0.0
    for q in range(pairs.shape[0]):
        p = pairs[q]
        s = 2.0 * pw[q] * dl[prow[q]]
        i = pnode[q]
        out[i, 0] -= s * AX[p, 0]
        out[i, 1] -= s * AX[p, 1]
        out[i, 2] -= s * AX[p, 2]


@nb.njit(cache=True)
def constraint_values(indptr, indices, data, x, pair_row, pair_node, C0, local, AX, c):
    """AX = A x (CSR, 3 columns) and c = C(x) of the enforced rows (eq. 2.15) in one pass.

    ``local`` (m,) maps a global row to its position in ``c`` (−1: row not enforced); ``C0`` (m,).
    Summation orders match ``A @ x`` and ``value_from`` (bit-identical with NumPy 2.4 on x86-64)."""
    m = C0.shape[0]
    full = np.zeros(m)
    for p in range(indptr.shape[0] - 1):
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        for q in range(indptr[p], indptr[p + 1]):
            j = indices[q]
            v = data[q]
            a0 += v * x[j, 0]
            a1 += v * x[j, 1]
            a2 += v * x[j, 2]
        AX[p, 0] = a0
        AX[p, 1] = a1
        AX[p, 2] = a2
        i = pair_node[p]
        full[pair_row[p]] += (a0 * x[i, 0] + a2 * x[i, 2]) + a1 * x[i, 1]  # numpy einsum's order
    for r in range(m):
        li = local[r]
        if li >= 0:
            c[li] = full[r] - C0[r]


@nb.njit(cache=True)
def schur_apply(AX, pairs, prow, pnode, pw, v, shift, tmp, out):
    """out = (∇C M⁻¹ ∇Cᵀ + diag shift) v for the kept pairs (tmp (n, 3) scratch): the Schur
    complement applied without assembling it, 4 Σ_i w_i ⟨AX_(r,i), AX_(s,i)⟩ v_s."""
    tmp[:] = 0.0
    for q in range(pairs.shape[0]):
        p = pairs[q]
        s = 2.0 * pw[q] * v[prow[q]]
        i = pnode[q]
        tmp[i, 0] += s * AX[p, 0]
        tmp[i, 1] += s * AX[p, 1]
        tmp[i, 2] += s * AX[p, 2]
    for r in range(out.shape[0]):
        out[r] = shift[r] * v[r]
    for q in range(pairs.shape[0]):
        p = pairs[q]
        i = pnode[q]
        out[prow[q]] += 2.0 * (AX[p, 0] * tmp[i, 0] + AX[p, 1] * tmp[i, 1] + AX[p, 2] * tmp[i, 2])
