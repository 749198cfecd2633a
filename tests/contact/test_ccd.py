"""Continuous collision detection: coplanarity cubic, node–face and edge–edge tests (seed 000 §3.1, §3.3)."""

import numpy as np
import pytest

from isocloth.contact._ccd_kernels import cubic_roots_unit
from isocloth.contact.ccd import (
    closest_point_triangle,
    closest_points_segments,
    coplanarity_coefficients,
    coplanarity_times,
    edge_edge_ccd,
    vertex_face_ccd,
)

DT = 0.01
SPEED = 10.0  # m/s: 10 cm per step, larger than the 5 cm primitives
TRI = np.array([[0.0, 0.0, 0.0], [0.05, 0.0, 0.0], [0.0, 0.05, 0.0]])


def _roots(c):
    c = np.asarray(c, dtype=np.float64)
    out = np.empty(4)
    k = cubic_roots_unit(c, 1e-14 * max(1.0, np.abs(c).max()), out)
    return out[:k]


def _poly(roots, lead=1.0):
    return lead * np.poly(roots)


# -- the cubic ------------------------------------------------------------------------------------------
def test_cubic_three_simple_roots():
    assert np.allclose(_roots(_poly([0.2, 0.5, 0.9])), [0.2, 0.5, 0.9], atol=1e-12)


def test_cubic_double_root_grazing():
    # (s − 0.3)² (s − 2): a tangency at 0.3 without a sign change must still be found
    r = _roots(_poly([0.3, 0.3, 2.0]))
    assert r.shape == (1,) and abs(r[0] - 0.3) < 1e-6


def test_cubic_degenerate_leading_coefficients():
    assert np.allclose(_roots([0.0, 1.0, -0.9, 0.14]), [0.2, 0.7])  # quadratic (s−0.2)(s−0.7)
    assert np.allclose(_roots([0.0, 0.0, 2.0, -1.0]), [0.5])  # linear
    assert _roots([0.0, 0.0, 0.0, 1.0]).size == 0  # constant, non-zero
    assert _roots([1e-30, 0.0, 2.0, -1.0]).size == 1  # tiny cubic term


def test_cubic_roots_at_the_ends_and_outside():
    assert np.allclose(_roots(_poly([0.0, 1.0, 3.0])), [0.0, 1.0])
    assert _roots(_poly([-0.5, 1.5, 2.0])).size == 0


def test_coplanarity_coefficients_match_the_determinant():
    rng = np.random.default_rng(0)
    x, v = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    c = coplanarity_coefficients(x, v)
    for t in (0.0, 0.3, -1.2):
        y = x + t * v
        assert np.polyval(c, t) == pytest.approx(np.linalg.det(y[:3] - y[3]), rel=1e-10, abs=1e-12)


def test_coplanarity_times_in_seconds():
    x = np.vstack([TRI, [0.01, 0.01, 0.05]])
    v = np.zeros((4, 3))
    v[3, 2] = -SPEED
    assert np.allclose(coplanarity_times(x, v, DT), [0.005])


# -- node–face ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("from_above", [True, False])
def test_node_through_face_at_10_m_s(from_above):
    s = 1.0 if from_above else -1.0
    p0 = np.array([0.01, 0.02, 0.05 * s])
    p1 = p0 - [0.0, 0.0, SPEED * DT * s]
    hit = vertex_face_ccd(p0, TRI, p1, TRI, DT)
    assert hit is not None and not hit.proximity
    assert hit.time == pytest.approx(0.005, abs=1e-12)
    # barycentric weights of (0.01, 0.02) in the triangle: u = 0.4, v = 0.2, w = 0.4
    assert np.allclose(hit.weights, [1.0, -0.4, -0.2, -0.4])
    assert np.allclose(hit.normal, [0.0, 0.0, s])  # oriented so that H(φⁿ) ≥ 0
    assert hit.value(np.vstack([p0, TRI])) == pytest.approx(0.05)
    assert hit.value(np.vstack([p1, TRI])) == pytest.approx(-0.05)


def test_node_face_both_moving_tilted():
    """Tilted triangle moving up while the node moves down (relative 10 m/s); time from geometry."""
    rng = np.random.default_rng(1)
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    tri0 = TRI @ R.T
    n = R[:, 2]
    c = tri0.mean(axis=0)
    p0 = c + 0.03 * n
    tri1 = tri0 + 0.04 * n
    p1 = p0 - 0.06 * n
    hit = vertex_face_ccd(p0, tri0, p1, tri1, DT)
    # distance 0.03 closes at 0.1 per step
    assert hit.time == pytest.approx(0.003, rel=1e-9)
    assert np.allclose(hit.weights, [1.0, -1 / 3, -1 / 3, -1 / 3])
    assert np.allclose(hit.normal, n)


def test_proximity_shift_detects_earlier():
    """With ω and τ0 the shifted pair meets when the distance is 2ωτ0 (seed 000 §3.3)."""
    p0 = np.array([0.01, 0.01, 0.05])
    p1 = p0 - [0.0, 0.0, 0.1]
    for omega in (0.0, 0.25, 0.5):
        hit = vertex_face_ccd(p0, TRI, p1, TRI, DT, thickness=0.01, omega=omega)
        assert hit.time == pytest.approx((0.05 - 2 * omega * 0.01) / SPEED, abs=1e-12)
        assert hit.distance == pytest.approx(2 * omega * 0.01, abs=1e-12)
        assert hit.normal[2] > 0


def test_node_passing_beside_or_stopping_short():
    p0 = np.array([0.06, 0.06, 0.05])  # outside the triangle's shadow
    assert vertex_face_ccd(p0, TRI, p0 - [0, 0, 0.1], TRI, DT) is None
    p0 = np.array([0.01, 0.01, 0.05])
    p1 = np.array([0.01, 0.01, 0.004])  # stops 4 mm above
    assert vertex_face_ccd(p0, TRI, p1, TRI, DT) is None
    hit = vertex_face_ccd(p0, TRI, p1, TRI, DT, thickness=0.005, proximity=True)
    assert hit.proximity and hit.distance == pytest.approx(0.004) and hit.normal[2] == pytest.approx(1.0)


def test_node_face_no_motion():
    p = np.array([0.01, 0.01, 0.02])
    assert vertex_face_ccd(p, TRI, p, TRI, DT) is None
    p = np.array([0.01, 0.01, 0.0])  # resting in the face: coplanar at t = 0
    hit = vertex_face_ccd(p, TRI, p, TRI, DT)
    assert hit is not None and hit.time == 0.0


def test_coplanar_motion_entering_the_face():
    """Node sliding inside the triangle's plane (cubic ≡ 0): detected when it enters."""
    p0 = np.array([-0.02, 0.01, 0.0])
    p1 = np.array([0.05, 0.01, 0.0])
    hit = vertex_face_ccd(p0, TRI, p1, TRI, DT)
    assert hit.time == pytest.approx(DT * 0.02 / 0.07, rel=1e-9)
    assert np.allclose(hit.weights, [1.0, -0.8, 0.0, -0.2])
    miss = vertex_face_ccd(p0 + [0, 0.1, 0], TRI, p1 + [0, 0.1, 0], TRI, DT)
    assert miss is None


# -- edge–edge ------------------------------------------------------------------------------------------
def test_edge_through_edge_at_10_m_s():
    ea0 = np.array([[-0.03, 0.01, 0.05], [0.02, 0.01, 0.05]])
    ea1 = ea0 - [0.0, 0.0, 0.1]
    eb = np.array([[0.0, -0.03, 0.0], [0.0, 0.02, 0.0]])
    hit = edge_edge_ccd(ea0, eb, ea1, eb, DT)
    assert hit.time == pytest.approx(0.005, abs=1e-12)
    alpha, beta = 0.6, 0.8  # crossing at (0, 0.01)
    assert np.allclose(hit.weights, [1 - alpha, alpha, -(1 - beta), -beta])
    assert np.allclose(hit.normal, [0.0, 0.0, 1.0])
    assert hit.value(np.vstack([ea0, eb])) == pytest.approx(0.05)
    assert hit.value(np.vstack([ea1, eb])) == pytest.approx(-0.05)
    # from below: the normal flips
    hit = edge_edge_ccd(ea1, eb, ea0, eb, DT)
    assert np.allclose(hit.normal, [0.0, 0.0, -1.0]) and hit.value(np.vstack([ea1, eb])) > 0


def test_edges_passing_and_stopping():
    eb = np.array([[0.0, -0.03, 0.0], [0.0, 0.02, 0.0]])
    ea0 = np.array([[0.01, 0.01, 0.05], [0.06, 0.01, 0.05]])  # passes beside eb's line end
    assert edge_edge_ccd(ea0, eb, ea0 - [0, 0, 0.1], eb, DT) is None
    ea0 = np.array([[-0.03, 0.01, 0.05], [0.02, 0.01, 0.05]])
    ea1 = ea0 - [0, 0, 0.047]
    assert edge_edge_ccd(ea0, eb, ea1, eb, DT) is None
    hit = edge_edge_ccd(ea0, eb, ea1, eb, DT, thickness=0.005, proximity=True)
    assert hit.proximity and hit.distance == pytest.approx(0.003) and hit.normal[2] == pytest.approx(1.0)


def test_parallel_edges_moving_through_each_other():
    """Parallel edges: the four points are always coplanar (cubic ≡ 0). An obstacle segment (a
    stick) is caught with the direction between the closest points as normal; two parallel cloth
    edges give no edge–edge row (no common normal; their end nodes' node–face rows hold them)."""
    eb = np.array([[0.0, 0.0, 0.0], [0.05, 0.0, 0.0]])
    ea0 = np.array([[0.02, 0.0, 0.05], [0.07, 0.0, 0.05]])
    v = np.vstack([np.tile([0.0, 0.0, -SPEED], (2, 1)), np.zeros((2, 3))])
    assert np.allclose(coplanarity_coefficients(np.vstack([ea0, eb]), v), 0.0)
    hit = edge_edge_ccd(ea0, eb, ea0 - [0, 0, 0.1], eb, DT, obstacle=True)
    assert hit is not None and hit.time == pytest.approx(0.005, abs=1e-12)
    assert np.allclose(hit.normal, [0, 0, 1]) and hit.value(np.vstack([ea0, eb])) > 0
    assert edge_edge_ccd(ea0, eb, ea0 - [0, 0, 0.1], eb, DT) is None
    assert edge_edge_ccd(ea0, eb, ea0 - [0, 0, 0.048], eb, DT, thickness=0.005, proximity=True) is None
    # nearly parallel (3 mrad, above the 1 mrad cut): caught, normal vertical
    ea0t = ea0 + np.array([[0.0, 0.0, 0.0], [0.0, 1.5e-4, 0.0]])
    hit = edge_edge_ccd(ea0t, eb, ea0t - [0, 0, 0.1], eb, DT)
    assert hit is not None and abs(hit.normal[2]) == pytest.approx(1.0)
    # parallel but offset sideways: never touch
    assert edge_edge_ccd(ea0 + [0, 0.01, 0], eb, ea0 + [0, 0.01, -0.1], eb, DT, obstacle=True) is None


def test_edge_edge_no_motion():
    ea = np.array([[-0.03, 0.01, 0.0], [0.02, 0.01, 0.0]])
    eb = np.array([[0.0, -0.03, 0.0], [0.0, 0.02, 0.0]])
    hit = edge_edge_ccd(ea, eb, ea, eb, DT)  # crossing at rest
    assert hit is not None and hit.time == 0.0
    assert edge_edge_ccd(ea + [0, 0, 0.01], eb, ea + [0, 0, 0.01], eb, DT) is None


def test_closest_point_helpers():
    w, d = closest_point_triangle([0.01, 0.01, 0.02], TRI)
    assert np.allclose(w, [0.6, 0.2, 0.2]) and d == pytest.approx(0.02)
    w, d = closest_point_triangle([-0.01, -0.01, 0.0], TRI)
    assert np.allclose(w, [1, 0, 0]) and d == pytest.approx(np.sqrt(2) * 0.01)
    a, b, d = closest_points_segments([[0, 0, 0], [1, 0, 0]], [[0.25, -1, 1], [0.25, 1, 1]])
    assert (a, b, d) == pytest.approx((0.25, 0.5, 1.0))


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="dt"):
        vertex_face_ccd(np.zeros(3), TRI, np.zeros(3), TRI, 0.0)
    with pytest.raises(ValueError, match="face0"):
        vertex_face_ccd(np.zeros(3), TRI[:2], np.zeros(3), TRI, DT)
    with pytest.raises(ValueError, match="finite"):
        edge_edge_ccd(np.full((2, 3), np.nan), TRI[:2], TRI[:2], TRI[:2], DT)
