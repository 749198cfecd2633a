"""Numba kernels of the membrane stabilisation (private; wrapper: ``membrane.MembraneOperator``).

Per quadrature point p with corners nodes[p] (k of them), shape-function derivatives D[p] (2, k)
along the rest-orthonormal frame and rest weight dA0[p]:
tangents t_a = Σ_i D_ai x_i, Green strain ε_ab = ½ (t_a·t_b − δ_ab), energy ½ k_m dA0 |ε|²_F,
force on corner i −k_m dA0 Σ_ab ε_ab D_ai t_b, and the Gauss–Newton block k_m dA0 Σ_s j_s j_sᵀ with
j_s the gradients of (ε11, ε22, √2 ε12): j_0[i, d] = D_0i t_0d, j_1[i, d] = D_1i t_1d,
j_2[i, d] = (D_0i t_1d + D_1i t_0d)/√2.
"""

import numba as nb
import numpy as np


@nb.njit(cache=True)
def force_and_blocks_kernel(nodes, D, dA0, x, k_m, force, blocks, want_blocks):
    """Add the membrane force to ``force`` (n, 3) and, if ``want_blocks``, write the Gauss–Newton
    blocks (p, 3k, 3k) into ``blocks`` (coordinates 3·local corner + d)."""
    p, k = nodes.shape
    r2 = 1.0 / np.sqrt(2.0)
    t = np.empty((2, 3))
    j = np.empty((3, 3 * k))
    for q in range(p):
        for a in range(2):
            for d in range(3):
                s = 0.0
                for i in range(k):
                    s += D[q, a, i] * x[nodes[q, i], d]
                t[a, d] = s
        e00 = 0.5 * (t[0, 0] * t[0, 0] + t[0, 1] * t[0, 1] + t[0, 2] * t[0, 2] - 1.0)
        e11 = 0.5 * (t[1, 0] * t[1, 0] + t[1, 1] * t[1, 1] + t[1, 2] * t[1, 2] - 1.0)
        e01 = 0.5 * (t[0, 0] * t[1, 0] + t[0, 1] * t[1, 1] + t[0, 2] * t[1, 2])
        w = k_m * dA0[q]
        for i in range(k):
            d0, d1 = D[q, 0, i], D[q, 1, i]
            # Σ_ab ε_ab D_ai t_b = (ε00 D0 + ε01 D1) t_0 + (ε01 D0 + ε11 D1) t_1
            c0 = e00 * d0 + e01 * d1
            c1 = e01 * d0 + e11 * d1
            node = nodes[q, i]
            for d in range(3):
                force[node, d] -= w * (c0 * t[0, d] + c1 * t[1, d])
                j[0, 3 * i + d] = d0 * t[0, d]
                j[1, 3 * i + d] = d1 * t[1, d]
                j[2, 3 * i + d] = (d0 * t[1, d] + d1 * t[0, d]) * r2
        if want_blocks:
            for u in range(3 * k):
                for v in range(u, 3 * k):
                    b = w * (j[0, u] * j[0, v] + j[1, u] * j[1, v] + j[2, u] * j[2, v])
                    blocks[q, u, v] = b
                    blocks[q, v, u] = b
