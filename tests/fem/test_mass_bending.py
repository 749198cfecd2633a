"""Lumped mass (eq. 2.10) and isometric bending matrix (Bergou et al.)."""

import numpy as np
import pytest

from isocloth.fem.bending import bending_matrix, stiffness_matrix
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
    K = bending_matrix(mesh, topology.interior_nodes(mesh)).toarray()
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
