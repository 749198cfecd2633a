"""Isometric bending matrix K = L_Iᵀ M_I L_I (Bergou et al. 2006, thesis §2.5).

Discrete Laplacian: the FEM one, L = M_L⁻¹ S with the stiffness S_ij = ∫ ∇_S𝒩_i · ∇_S𝒩_j dA
of the rest shape (P1: the cotangent Laplacian; Q1: the bilinear-element Laplacian with 2×2
Gauss quadrature). Why this one: it is defined for triangles and quads alike, converges to the
Laplace–Beltrami operator under refinement (so κ means the same on every mesh: the Cusick
drape coefficient is mesh independent), and for an isometric deformation of a flat sheet
L x is the mean-curvature normal, which makes ½ κ xᵀ K x the Willmore (bending) energy
(Bergou et al. 2006, "A quadratic bending model for inextensible surfaces").

As in Bergou et al., only interior nodes carry curvature: rows of S at boundary nodes hold the
Neumann boundary term, not curvature, and would make a flat sheet resist being flat. With
interior rows only, K annihilates every affine map of a flat rest shape (flat states and rigid
motions have zero bending energy).

Units: S is dimensionless, M in m², so K is in m⁻² and κ [N·m] makes ½ κ xᵀ K x an energy [J].
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from isocloth.fem.mass import _element_blocks, lumped_mass
from isocloth.fem.quadrature import element_metric
from isocloth.mesh.mesh import Mesh

__all__ = ["stiffness_matrix", "bending_matrix"]


def stiffness_matrix(mesh: Mesh) -> sp.csr_matrix:
    """FEM stiffness S_ij = ∫ ∇_S𝒩_i · ∇_S𝒩_j dA on the rest shape.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, n), float64, dimensionless. Symmetric, rows sum to 0.
    """
    rows, cols, vals = [], [], []
    for faces, corners, ref in _element_blocks(mesh):
        E, F, G, dA = element_metric(corners, ref)
        det = E * G - F * F
        # inverse metric g^{-1} = [[G, -F], [-F, E]] / det at each quadrature point
        a, b, c = G / det, -F / det, E / det
        dx, de = ref.dN_dxi, ref.dN_deta
        loc = (np.einsum("eg,gi,gj->eij", a * dA, dx, dx)
               + np.einsum("eg,gi,gj->eij", b * dA, dx, de)
               + np.einsum("eg,gi,gj->eij", b * dA, de, dx)
               + np.einsum("eg,gi,gj->eij", c * dA, de, de))
        k = faces.shape[1]
        rows.append(np.repeat(faces, k, axis=1).ravel())
        cols.append(np.tile(faces, (1, k)).ravel())
        vals.append(loc.ravel())
    n = mesh.node_count
    S = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    S.sum_duplicates()
    return S


def bending_matrix(mesh: Mesh, interior_nodes: np.ndarray) -> sp.csr_matrix:
    """Bending matrix K = S_Iᵀ M_I⁻¹ S_I (= L_Iᵀ M_I L_I with L = M⁻¹ S).

    Parameters
    ----------
    mesh : Mesh
    interior_nodes : (k,) int64
        Nodes that carry curvature (non-boundary nodes).

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, n), float64 [m⁻²], symmetric positive semi-definite.
    The force on the nodes is −κ K x (applied per coordinate).
    """
    S = stiffness_matrix(mesh)
    idx = np.asarray(interior_nodes, dtype=np.int64)
    if idx.size == 0:
        return sp.csr_matrix((mesh.node_count, mesh.node_count))
    SI = S[idx]
    m = lumped_mass(mesh)[idx]
    K = (SI.T @ sp.diags(1.0 / m) @ SI).tocsr()
    K.sum_duplicates()
    return K
