"""Lumped (row-sum) mass matrix of the area measure, thesis eq. 2.9–2.10."""

from __future__ import annotations

import numpy as np

from isocloth.fem.quadrature import element_metric, reference_element
from isocloth.mesh.mesh import Mesh

__all__ = ["lumped_mass", "consistent_mass"]


def _element_blocks(mesh: Mesh):
    """Yield (faces (e,k) int64, rest corners (e,k,3), reference element) per element type."""
    tri_c, quad_c = mesh.rest_corners
    if mesh.triangle_count:
        yield mesh.triangles, tri_c, reference_element(3)
    if mesh.quad_count:
        yield mesh.quads, quad_c, reference_element(4)


def lumped_mass(mesh: Mesh) -> np.ndarray:
    """Row-sum lumped area mass m_k = Σ_j ∫ 𝒩_k 𝒩_j dA = ∫ 𝒩_k dA of the rest shape.

    Parameters
    ----------
    mesh : Mesh

    Returns
    -------
    (n,) float64
        Nodal areas [m²]; multiply by an areal density ρ [kg/m²] to get masses [kg].
        Nodes that belong to no face get 0.

    Source: thesis eq. 2.9–2.10 (m_k := (M_L)_kk).
    """
    m = np.zeros(mesh.node_count)
    for faces, corners, ref in _element_blocks(mesh):
        _, _, _, dA = element_metric(corners, ref)
        np.add.at(m, faces, dA @ ref.N)  # Σ_l N_k(x_l) dA_l per element corner
    return m


def consistent_mass(mesh: Mesh):
    """Consistent area mass matrix M_ij = ∫ 𝒩_i 𝒩_j dA (thesis eq. 2.9).

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, n), float64 [m²]
    """
    import scipy.sparse as sp

    rows, cols, vals = [], [], []
    for faces, corners, ref in _element_blocks(mesh):
        _, _, _, dA = element_metric(corners, ref)
        loc = np.einsum("eg,gi,gj->eij", dA, ref.N, ref.N)
        k = faces.shape[1]
        rows.append(np.repeat(faces, k, axis=1).ravel())
        cols.append(np.tile(faces, (1, k)).ravel())
        vals.append(loc.ravel())
    n = mesh.node_count
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
