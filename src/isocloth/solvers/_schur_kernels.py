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
