"""Compliant rows of the projection: a row holding C = α λ is a spring along the row.

A node of mass m pulled from a fixed node beyond the length b of a squared-length row
C = ‖p₁ − p₀‖² − b² with compliance α. The closest point in the mass metric with the spring energy
C² / (2α) solves, along the line, m (x − x₀) = −2 x λ and x² − b² = α λ, a scalar equation solved
here with brentq; the closest-point mode (``stationarity``) must reach it, the fast projection
holds C = α λ with its own (path-dependent) multiplier. α → 0 is the hard row (x = b).
"""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import brentq

from isocloth.fem.inextensibility import InextensibilityConstraints, RowKind
from isocloth.fem.stretch_limits import stretch_limits
from isocloth.mesh.generators import rectangle
from isocloth.solvers.projection import SolverProjection


def _one_length_row(b):
    empty = InextensibilityConstraints(
        row_count=0, node_count=2, row_kind=np.zeros(0, np.int8), row_node=np.zeros(0, np.int64),
        row_edge=np.zeros((0, 2), np.int64), C0=np.zeros(0), scale=np.zeros(0),
        pair_row=np.zeros(0, np.int64), pair_node=np.zeros(0, np.int64), A=sp.csr_matrix((0, 2)))
    return empty.with_length_rows(np.array([[0, 1]]), np.array([b]), RowKind.STRETCH_LIMIT)


@pytest.mark.parametrize("alpha", [0.0, 1e-3, 1e-2, 1e-1])
def test_a_compliant_length_row_is_a_spring(alpha):
    m, b, x0 = 0.01, 0.1, 0.12
    cons = _one_length_row(b)
    x = np.array([[0.0, 0.0, 0.0], [x0, 0.0, 0.0]])
    expected = brentq(lambda y: y * y - b * b - alpha * m * (x0 - y) / (2 * y), b, x0)
    exact = SolverProjection(tolerance=1e-8, max_iterations=200, stationarity=1e-6).solve(
        x, np.array([0.0, 1.0 / m]), cons, np.array([0]), compliance=np.array([alpha]))
    assert exact.status.value == "converged"
    assert exact.x[1, 0] == pytest.approx(expected, rel=1e-8)
    assert m * (exact.x[1, 0] - x0) == pytest.approx(-2 * exact.x[1, 0] * exact.lam[0], rel=1e-6)
    fast = SolverProjection(tolerance=1e-8, max_iterations=100).solve(
        x, np.array([0.0, 1.0 / m]), cons, np.array([0]), compliance=np.array([alpha]))
    assert fast.status.value == "converged"
    y = fast.x[1, 0]
    assert y * y - b * b == pytest.approx(alpha * fast.lam[0], rel=1e-6, abs=1e-9 * b * b)
    assert fast.x[1, 1:] == pytest.approx([0.0, 0.0], abs=1e-14)
    if alpha > 0:
        assert y - b > 0.5 * (expected - b) > 0  # the spring gives, by the right order


def test_compliance_of_a_held_limit_is_the_fabrics_tensile_stiffness():
    """α = 4 b² / (k dt²): the force 2 b λ / dt² of a row at C = α λ equals k (ℓ − b) to first order."""
    lim = stretch_limits(rectangle(0.2, 0.2, 3, 3), 0.01)
    held = np.arange(lim.count)
    k, dt = 1e4, 0.01
    alpha = lim.compliance(held, k, dt)
    b = lim.bound[held]
    stretch = 1e-4 * b  # ℓ − b
    C = (b + stretch) ** 2 - b ** 2
    force = 2 * b * (C / alpha) / dt ** 2
    np.testing.assert_allclose(force, k * stretch, rtol=2e-4)


def test_negative_compliance_is_refused():
    cons = _one_length_row(0.1)
    x = np.array([[0.0, 0.0, 0.0], [0.12, 0.0, 0.0]])
    with pytest.raises(ValueError, match="compliance"):
        SolverProjection().solve(x, np.array([0.0, 1.0]), cons, np.array([0]), compliance=np.array([-1.0]))
