"""Lumped mass (eq. 2.10) and isometric bending matrix (Bergou et al.)."""

import numpy as np
import pytest

from isocloth.fem.bending import bending_matrix, laplacian_matrix, stiffness_matrix
from isocloth.fem.mass import consistent_mass, lumped_mass
from isocloth.mesh import topology
from isocloth.mesh.generators import annulus, irregular_rectangle, rectangle


@pytest.mark.parametrize("mesh,area", [(rectangle(0.42, 0.594, 7, 9), 0.42 * 0.594),
                                       (rectangle(0.42, 0.594, 7, 9, element="triangle"), 0.42 * 0.594),
                                       (irregular_rectangle(1.0, 0.5, 200, seed=1), 0.5)])
def test_lumped_mass_sums_to_the_area_and_matches_row_sums(mesh, area):
    m = lumped_mass(mesh)
    assert m.sum() == pytest.approx(area, rel=1e-12)
    assert np.all(m > 0)
    np.testing.assert_allclose(np.asarray(consistent_mass(mesh).sum(axis=1)).ravel(), m, rtol=1e-12)


def test_annulus_area_converges():
    mesh = annulus(0.09, 0.15, 8, 96)
    assert lumped_mass(mesh).sum() == pytest.approx(np.pi * (0.15 ** 2 - 0.09 ** 2), rel=2e-3)


@pytest.mark.parametrize("element", ["quad", "triangle"])
def test_bending_matrix_is_psd_and_zero_on_flat_and_rigid_states(element):
    mesh = rectangle(0.5, 0.4, 8, 7, element=element)
    K = bending_matrix(mesh).toarray()
    np.testing.assert_allclose(K, K.T, atol=1e-12)
    assert np.linalg.eigvalsh(K).min() > -1e-9 * np.abs(K).max()
    x = mesh.vertices
    rng = np.random.default_rng(0)
    R, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    y = x @ R.T + 1.0
    assert np.abs(K @ y).max() < 1e-10 * np.abs(K).max()
    # a bent sheet (cylinder) has positive energy growing like 1/R²
    u = x[:, 0]
    energies = []
    for R_ in (0.5, 0.25):
        yc = np.stack([R_ * np.sin(u / R_), x[:, 1], R_ * (1 - np.cos(u / R_))], 1)
        energies.append(np.einsum("id,ij,jd->", yc, K, yc))
    assert energies[1] / energies[0] == pytest.approx(4.0, rel=0.25)


def test_stiffness_rows_sum_to_zero():
    S = stiffness_matrix(rectangle(0.3, 0.3, 5, 5, element="triangle"))
    assert np.abs(np.asarray(S.sum(axis=1))).max() < 1e-12


@pytest.mark.parametrize("mesh", [rectangle(0.5, 0.4, 8, 7), rectangle(0.5, 0.4, 8, 7, element="triangle"),
                                  annulus(0.09, 0.15, 6, 50), irregular_rectangle(1.0, 0.5, 200, seed=1)],
                         ids=["quads", "triangles", "annulus", "irregular"])
def test_weak_laplacian_with_boundary_term_annihilates_affine_maps(mesh):
    """(S − B) x = 0 for every affine x of the flat rest shape, boundary rows included."""
    L = laplacian_matrix(mesh)
    rng = np.random.default_rng(3)
    A = rng.normal(size=(3, 3))
    y = mesh.vertices @ A.T + rng.normal(size=3)
    assert np.abs(L @ y).max() < 1e-12 * np.abs(L).max()
    # without the boundary term the boundary rows are not zero
    S = stiffness_matrix(mesh)
    b = np.unique(topology.boundary_edges(mesh))
    assert np.abs((S @ y)[b]).max() > 1e-3 * np.abs(S).max()


@pytest.mark.parametrize("R", [0.5, 0.25])
def test_boundary_rows_carry_the_curvature_along_free_edges(R):
    """A strip one element wide has no interior node: Bergou's interior rows give it no bending energy,
    the boundary rows give the Willmore energy ∫ H² dA = A / R² (less the free half-elements at its ends)."""
    L_, w, n = 1.0, 0.05, 21
    mesh = rectangle(L_, w, n, 2)
    x = mesh.vertices
    y = np.stack([R * np.sin(x[:, 0] / R), x[:, 1], R * (1 - np.cos(x[:, 0] / R))], 1)
    assert bending_matrix(mesh, topology.interior_nodes(mesh)).nnz == 0
    energy = np.einsum("id,id->", y, bending_matrix(mesh) @ y)
    h = L_ / (n - 1)
    assert energy == pytest.approx(L_ * w / R ** 2 * (1 - h / L_), rel=0.02)


def test_bending_energy_of_a_cylinder_converges_for_quads():
    """x ᵀ K x → ∫ H² dA = A / R² under refinement, error O(h) (free strips across the fold axis)."""
    W, H_, R = 0.5, 0.4, 0.3
    errors = []
    for n in (11, 21, 41):
        mesh = rectangle(W, H_, n, n)
        x = mesh.vertices
        y = np.stack([R * np.sin(x[:, 0] / R), x[:, 1], R * (1 - np.cos(x[:, 0] / R))], 1)
        errors.append(abs(np.einsum("id,id->", y, bending_matrix(mesh) @ y) / (W * H_ / R ** 2) - 1))
    assert errors[-1] < 0.03
    assert errors[0] / errors[1] > 1.8 and errors[1] / errors[2] > 1.8
