"""Numba kernels for element areas (private; wrapper: ``topology._areas``)."""

import numba as nb
import numpy as np



@nb.njit(cache=True)
def element_areas_kernel(tri, quad, out):
    """Triangle areas ½|e1 × e2| then bilinear quad areas (2×2 Gauss of |φ_ξ × φ_η|) into out."""
    t = tri.shape[0]
    for e in range(t):
        ax = tri[e, 1, 0] - tri[e, 0, 0]
        ay = tri[e, 1, 1] - tri[e, 0, 1]
        az = tri[e, 1, 2] - tri[e, 0, 2]
        bx = tri[e, 2, 0] - tri[e, 0, 0]
        by = tri[e, 2, 1] - tri[e, 0, 1]
        bz = tri[e, 2, 2] - tri[e, 0, 2]
        cx, cy, cz = ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx
        out[e] = 0.5 * np.sqrt(cx * cx + cy * cy + cz * cz)
    g = 1.0 / np.sqrt(3.0)
    for e in range(quad.shape[0]):
        s = 0.0
        for gp in range(4):
            xi = -g if gp == 0 or gp == 3 else g
            eta = -g if gp < 2 else g
            # ∂φ/∂ξ = ¼[(1−η)(p2−p1) + (1+η)(p3−p4)],  ∂φ/∂η = ¼[(1−ξ)(p4−p1) + (1+ξ)(p3−p2)]
            ux = 0.25 * ((1 - eta) * (quad[e, 1, 0] - quad[e, 0, 0]) + (1 + eta) * (quad[e, 2, 0] - quad[e, 3, 0]))
            uy = 0.25 * ((1 - eta) * (quad[e, 1, 1] - quad[e, 0, 1]) + (1 + eta) * (quad[e, 2, 1] - quad[e, 3, 1]))
            uz = 0.25 * ((1 - eta) * (quad[e, 1, 2] - quad[e, 0, 2]) + (1 + eta) * (quad[e, 2, 2] - quad[e, 3, 2]))
            vx = 0.25 * ((1 - xi) * (quad[e, 3, 0] - quad[e, 0, 0]) + (1 + xi) * (quad[e, 2, 0] - quad[e, 1, 0]))
            vy = 0.25 * ((1 - xi) * (quad[e, 3, 1] - quad[e, 0, 1]) + (1 + xi) * (quad[e, 2, 1] - quad[e, 1, 1]))
            vz = 0.25 * ((1 - xi) * (quad[e, 3, 2] - quad[e, 0, 2]) + (1 + xi) * (quad[e, 2, 2] - quad[e, 1, 2]))
            cx = uy * vz - uz * vy
            cy = uz * vx - ux * vz
            cz = ux * vy - uy * vx
            s += np.sqrt(cx * cx + cy * cy + cz * cz)  # Gauss weights are 1
        out[t + e] = s
