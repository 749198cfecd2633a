"""Isometric bending matrix K = Lᵀ M L (Bergou et al. 2006, thesis §2.5).

Discrete Laplacian: the FEM (weak) Laplace–Beltrami operator of the rest shape with its
natural boundary term,

    (S − B) x ≈ ∫ 𝒩_i Δx dA,   S_ij = ∫ ∇𝒩_i · ∇𝒩_j dA,   B_ij = ∫_∂Ω 𝒩_i (∇𝒩_j · ν) ds,

L = M_L⁻¹ (S − B), ν the outward conormal of the rest boundary. P1 elements give the cotangent
Laplacian, Q1 the bilinear-element one (2×2 Gauss inside, 2-point Gauss on boundary edges).
Why this one:

- one operator for triangles and quads that converges to Laplace–Beltrami under refinement, so κ
  means the same on every mesh (the Cusick drape coefficient must not depend on the mesh);
- for an isometric deformation of a flat sheet L x is the mean-curvature normal, so ½ κ xᵀ K x is
  the Willmore (bending) energy (Bergou et al. 2006, "A quadratic bending model for inextensible
  surfaces");
- S − B annihilates every affine map of a flat rest shape *exactly* (the integration by parts is
  exact for affine fields with these quadratures), so flat states and rigid motions have zero
  bending energy, boundary rows included;
- at a boundary node the normal second derivative cancels between S and B (it is exactly zero in
  1-D), so the row measures the curvature *along* the boundary. Free edges therefore carry the
  bending energy of the boundary curve while the curvature across them stays free (the free-edge
  condition). Bergou et al. drop boundary rows altogether; then a strip of half an element along
  every boundary bends for free and the drape of a sheet depends on the resolution (Cusick test).

Units: S and B are dimensionless, M in m², so K is in m⁻² and κ [N·m] makes ½ κ xᵀ K x an energy [J].
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from isocloth.fem.mass import _element_blocks, lumped_mass
from isocloth.fem.quadrature import REFERENCE_CORNERS, element_metric, shape_functions
from isocloth.mesh.mesh import Mesh
from isocloth.mesh.topology import boundary_edges

__all__ = ["stiffness_matrix", "boundary_flux_matrix", "laplacian_matrix", "bending_matrix"]


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


_GAUSS_2 = (0.5 - 0.5 / np.sqrt(3.0), 0.5 + 0.5 / np.sqrt(3.0))  # 2-point Gauss on [0, 1], weights ½


def boundary_flux_matrix(mesh: Mesh) -> sp.csr_matrix:
    """Boundary term B_ij = ∫_∂Ω 𝒩_i (∇_S𝒩_j · ν) ds of the weak Laplacian on the rest shape.

    ν is the outward unit conormal (in the tangent plane of the boundary element, perpendicular to
    the edge). Each boundary edge is integrated with 2-point Gauss using the shape functions of the
    one element it belongs to.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, n), float64, dimensionless; non-zero only in rows of
    boundary nodes. (S − B) annihilates affine maps of a flat rest shape.
    """
    n = mesh.node_count
    bnd = boundary_edges(mesh)
    if bnd.size == 0:
        return sp.csr_matrix((n, n))
    keys = np.sort(bnd[:, 0] * n + bnd[:, 1])
    rows, cols, vals = [], [], []
    for faces, corners, ref in _element_blocks(mesh):
        k = faces.shape[1]
        ref_c = REFERENCE_CORNERS[k]
        for l in range(k):
            a, b = faces[:, l], faces[:, (l + 1) % k]
            key = a * n + b
            pos = np.clip(np.searchsorted(keys, key), 0, keys.size - 1)
            on = np.flatnonzero((keys[pos] == key) & (a != b))
            if on.size == 0:
                continue
            X = corners[on]  # (e, k, 3)
            edge = X[:, (l + 1) % k] - X[:, l]
            length = np.linalg.norm(edge, axis=1)
            t_hat = edge / length[:, None]
            for s_g in _GAUSS_2:
                p = ref_c[l] + s_g * (ref_c[(l + 1) % k] - ref_c[l])
                N, dxi, deta = (arr[0] for arr in shape_functions(k, p[None, :]))
                X_xi = np.einsum("k,ekd->ed", dxi, X)
                X_eta = np.einsum("k,ekd->ed", deta, X)
                E = np.einsum("ed,ed->e", X_xi, X_xi)
                F = np.einsum("ed,ed->e", X_xi, X_eta)
                G = np.einsum("ed,ed->e", X_eta, X_eta)
                det = E * G - F * F
                # surface gradient ∇𝒩_j = g^{ab} ∂_a𝒩_j ∂_bX, (e, k, 3)
                grad = (np.einsum("e,k,ed->ekd", G / det, dxi, X_xi) - np.einsum("e,k,ed->ekd", F / det, deta, X_xi)
                        + np.einsum("e,k,ed->ekd", E / det, deta, X_eta) - np.einsum("e,k,ed->ekd", F / det, dxi, X_eta))
                normal = np.cross(X_xi, X_eta)
                normal /= np.linalg.norm(normal, axis=1)[:, None]
                nu = np.cross(t_hat, normal)  # outward: the element lies to the left of a -> b
                flux = np.einsum("ekd,ed->ek", grad, nu)  # ∇𝒩_j · ν
                w = 0.5 * length
                loc = w[:, None, None] * N[None, :, None] * flux[:, None, :]  # (e, i, j)
                rows.append(np.repeat(faces[on], k, axis=1).ravel())
                cols.append(np.tile(faces[on], (1, k)).ravel())
                vals.append(loc.ravel())
    if not vals:
        return sp.csr_matrix((n, n))
    B = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    B.sum_duplicates()
    return B


def laplacian_matrix(mesh: Mesh) -> sp.csr_matrix:
    """Weak Laplace–Beltrami operator S − B of the rest shape (see the module docstring).

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, n), float64, dimensionless. (S − B) x ≈ ∫ 𝒩_i Δx dA [m²·x];
    rows sum to 0 and affine maps of a flat rest shape are in its kernel.
    """
    return (stiffness_matrix(mesh) - boundary_flux_matrix(mesh)).tocsr()


def bending_matrix(mesh: Mesh, nodes: np.ndarray | None = None) -> sp.csr_matrix:
    """Bending matrix K = (S − B)ᵀ M⁻¹ (S − B) (= Lᵀ M L with L = M⁻¹ (S − B)).

    Parameters
    ----------
    mesh : Mesh
    nodes : (k,) int64, optional
        Nodes whose curvature rows enter K (default: all nodes with mass).

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, n), float64 [m⁻²], symmetric positive semi-definite.
    The force on the nodes is −κ K x (applied per coordinate).
    """
    m_all = lumped_mass(mesh)
    idx = np.flatnonzero(m_all > 0) if nodes is None else np.asarray(nodes, dtype=np.int64)
    if idx.size == 0:
        return sp.csr_matrix((mesh.node_count, mesh.node_count))
    LI = laplacian_matrix(mesh)[idx]
    K = (LI.T @ sp.diags(1.0 / m_all[idx]) @ LI).tocsr()
    K.sum_duplicates()
    return K
