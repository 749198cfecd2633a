"""Reference elements and quadrature rules: P1 triangle and Q1 (bilinear) quadrilateral.

Thesis §2.3 (eq. 2.4) gives the bilinear quad; the triangle element is the standard linear P1
element on the reference triangle {ξ, η ≥ 0, ξ + η ≤ 1} (the thesis only says "everything
works the same with triangles").

Rules (exact for the integrands N_k ∂N_i ∂N_j of Algorithm 1 on flat parallelograms):
- P1: the three edge-midpoint rule, weights 1/6 (exact for degree-2 polynomials).
- Q1: 2×2 Gauss–Legendre at ±1/√3, weights 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ReferenceElement", "reference_element", "element_metric", "shape_functions", "REFERENCE_CORNERS"]


@dataclass(frozen=True)
class ReferenceElement:
    """Shape functions sampled at the quadrature points of one reference element.

    Attributes
    ----------
    corner_count : int
        3 (P1 triangle) or 4 (Q1 quad).
    N : (g, k) float64
        Shape function values N_i at the g quadrature points.
    dN_dxi, dN_deta : (g, k) float64
        Derivatives ∂N_i/∂ξ and ∂N_i/∂η at the quadrature points.
    weights : (g,) float64
        Quadrature weights (reference-element measure).
    """

    corner_count: int
    N: np.ndarray
    dN_dxi: np.ndarray
    dN_deta: np.ndarray
    weights: np.ndarray


#: Corner coordinates (ξ, η) of the reference elements, counter-clockwise.
REFERENCE_CORNERS = {
    3: np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]),
    4: np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]]),  # thesis §2.3: CCW from (−1, −1)
}


def shape_functions(corner_count: int, points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shape functions and their reference derivatives at arbitrary reference points.

    Parameters
    ----------
    corner_count : int
        3 (P1: N = 1 − ξ − η, ξ, η) or 4 (Q1: thesis eq. 2.4).
    points : (g, 2) float64
        Reference coordinates (ξ, η).

    Returns
    -------
    N, dN_dξ, dN_dη : (g, corner_count) float64 each

    Raises
    ------
    ValueError
        For a corner count other than 3 or 4.
    """
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    xi, eta = pts[:, 0:1], pts[:, 1:2]
    if corner_count == 3:
        N = np.hstack([1.0 - xi - eta, xi, eta])
        return N, np.tile([-1.0, 1.0, 0.0], (len(pts), 1)), np.tile([-1.0, 0.0, 1.0], (len(pts), 1))
    if corner_count == 4:
        sx, sy = REFERENCE_CORNERS[4][:, 0][None, :], REFERENCE_CORNERS[4][:, 1][None, :]
        N = 0.25 * (1 + sx * xi) * (1 + sy * eta)  # thesis eq. 2.4
        return N, 0.25 * sx * (1 + sy * eta), 0.25 * sy * (1 + sx * xi)
    raise ValueError(f"elements have 3 (triangle) or 4 (quad) corners, not {corner_count}")


def _p1() -> ReferenceElement:
    pts = np.array([[0.5, 0.0], [0.5, 0.5], [0.0, 0.5]])
    return ReferenceElement(3, *shape_functions(3, pts), np.full(3, 1.0 / 6.0))


def _q1() -> ReferenceElement:
    a = 1.0 / np.sqrt(3.0)
    pts = np.array([[-a, -a], [a, -a], [a, a], [-a, a]])
    return ReferenceElement(4, *shape_functions(4, pts), np.ones(4))


_ELEMENTS = {3: _p1(), 4: _q1()}


def reference_element(corner_count: int) -> ReferenceElement:
    """The reference element with ``corner_count`` corners (3 or 4).

    Raises
    ------
    ValueError
        For any other corner count.
    """
    try:
        return _ELEMENTS[corner_count]
    except KeyError:
        raise ValueError(f"elements have 3 (triangle) or 4 (quad) corners, not {corner_count}") from None


def element_metric(corners: np.ndarray, ref: ReferenceElement):
    """First fundamental form and area weights at the quadrature points of many elements.

    Parameters
    ----------
    corners : (e, k, 3) float64
        Corner positions [m] of e elements with k corners.
    ref : ReferenceElement

    Returns
    -------
    E, F, G : (e, g) float64
        Metric coefficients ⟨φ_ξ,φ_ξ⟩, ⟨φ_ξ,φ_η⟩, ⟨φ_η,φ_η⟩ [m²] (thesis Algorithm 1, lines 6–8).
    dA : (e, g) float64
        Area weights sqrt(|EG − F²|)·w_l [m²] (Algorithm 1, line 9).
    """
    phi_xi = np.einsum("gk,ekd->egd", ref.dN_dxi, corners)
    phi_eta = np.einsum("gk,ekd->egd", ref.dN_deta, corners)
    E = np.einsum("egd,egd->eg", phi_xi, phi_xi)
    F = np.einsum("egd,egd->eg", phi_xi, phi_eta)
    G = np.einsum("egd,egd->eg", phi_eta, phi_eta)
    dA = np.sqrt(np.abs(E * G - F * F)) * ref.weights[None, :]
    return E, F, G, dA
