"""External forces of the cloth model (thesis eq. 2.19 and §2.5.1)."""

from __future__ import annotations

import numpy as np

__all__ = ["gravity_force", "shear_force_and_hessian"]


def gravity_force(area_mass: np.ndarray, delta: float, g: float) -> np.ndarray:
    """Virtual-mass gravity f_δ = −δ M 𝒢 (thesis §2.5.1).

    Parameters
    ----------
    area_mass : (n,) float64 [m²], lumped nodal areas.
    delta : float [kg/m²], virtual gravitational density δ.
    g : float [m/s²].

    Returns
    -------
    (n, 3) float64 [N], zero in x and y.
    """
    f = np.zeros((area_mass.size, 3))
    f[:, 2] = -delta * g * area_mass
    return f


def shear_force_and_hessian(shear_rows, area_mass: np.ndarray, k_s: float, x: np.ndarray):
    """Shear energy S = (k_s/2) C_Fᵀ M C_F, its force and Gauss–Newton Hessian (thesis eq. 2.17–2.18).

    Parameters
    ----------
    shear_rows : InextensibilityConstraints with one F row per node.
    area_mass : (n,) float64 [m²] (lumped M).
    k_s : float [N/m⁵].
    x : (n, 3) float64 [m].

    Returns
    -------
    f : (n, 3) float64 [N], −k_s ∇C_Fᵀ M C_F
    H : scipy.sparse.csr_matrix (3n, 3n), k_s ∇C_Fᵀ M ∇C_F (positive semi-definite; the exact
        Hessian is indefinite, Baraff–Witkin approximation as in thesis §2.4.6).
    """
    import scipy.sparse as sp

    C, J = shear_rows.value_and_jacobian(x)
    m = area_mass[shear_rows.row_node]
    f = -(k_s * (J.T @ (m * C))).reshape(-1, 3)
    H = (k_s * (J.T @ sp.diags(m) @ J)).tocsr()
    return f, H
