"""GLI, dGLI and the dGLI cloth coordinates (Coltraro et al., thesis §7.2–7.3)."""

import numpy as np
import pytest
from scipy import integrate
from scipy.spatial.transform import Rotation

from isocloth.mesh.generators import rectangle
from isocloth.perception import (classify, cloth_coordinates, coordinate_matrix, davies_bouldin, dgli,
                                 directional_derivative, distance_matrix, inverse_cube_integral, polyline_gli, segment_gli, sheet_segments,
                                 spearman_distance)
from isocloth.perception.baselines import (boundary_frechet, boundary_hausdorff, corner_distances, edge_distances,
                                           segment_distance)

E3 = np.array([0.0, 0.0, 1.0])
Z = np.zeros(3)


def gli_integral(A, B, C, D):
    """Eq. 7.1 by numerical double integration over the two segments."""
    AB, CD = B - A, D - C

    def f(t, s):
        r = C + t * CD - A - s * AB
        return r @ np.cross(CD, AB) / np.linalg.norm(r) ** 3

    return integrate.dblquad(f, 0.0, 1.0, 0.0, 1.0, epsabs=1e-13, epsrel=1e-12)[0] / (4 * np.pi)


def test_segment_gli_is_the_double_integral_with_its_sign():
    rng = np.random.default_rng(0)
    for _ in range(6):
        A, B, C, D = rng.normal(size=(4, 3))
        g = segment_gli(A, B, C, D)[0]
        assert g == pytest.approx(gli_integral(A, B, C, D), rel=1e-9, abs=1e-13)
        mirrored = [p * [1.0, 1.0, -1.0] for p in (A, B, C, D)]
        assert segment_gli(*mirrored)[0] == pytest.approx(-g, rel=1e-12)  # the sign factor (eq. 7.3)
    flat = [np.array(p, float) for p in ([0, 0, 0], [1, 0, 0], [0, 1, 0], [1.2, 1.1, 0])]
    assert segment_gli(*flat)[0] == 0.0


def square(centre, axes):
    u, v = (np.asarray(a, dtype=float) for a in axes)
    c = np.asarray(centre, dtype=float)
    return np.array([c + u + v, c - u + v, c - u - v, c + u - v, c + u + v])


def test_closed_polylines_give_their_linking_number():
    ring = square([0, 0, 0], ([1, 0, 0], [0, 1, 0]))
    linked = square([1, 0, 0], ([1, 0, 0], [0, 0, 1]))  # threads through the first ring
    apart = square([5, 0, 0], ([1, 0, 0], [0, 0, 1]))
    assert abs(polyline_gli(ring, linked)) == pytest.approx(1.0, abs=1e-12)
    assert polyline_gli(ring, apart) == pytest.approx(0.0, abs=1e-12)


def test_dgli_is_the_exact_directional_derivative_also_for_flat_segments():
    rng = np.random.default_rng(1)
    configs = [rng.normal(size=(4, 3)) for _ in range(4)]
    configs.append(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1.2, 1.1, 0]], float))  # coplanar: 𝒢 = 0
    for A, B, C, D in configs:
        exact = directional_derivative(A, B, C, D, Z, E3, Z, E3)[0]
        assert dgli(A, B, C, D)[0] == pytest.approx(exact, rel=1e-5, abs=1e-9)
        # central difference of the closed form (eq. 7.3) where it is well conditioned (not coplanar)
        if abs(segment_gli(A, B, C, D)[0]) > 1e-3:
            h = 1e-5
            fd = (segment_gli(A, B + h * E3, C, D + h * E3) - segment_gli(A, B - h * E3, C, D - h * E3))[0] / (2 * h)
            assert exact == pytest.approx(fd, rel=1e-5)
        # symmetric in (AB) <-> (CD); moving A and C instead gives the opposite sign
        assert dgli(C, D, A, B)[0] == pytest.approx(dgli(A, B, C, D)[0], rel=1e-5, abs=1e-9)
        assert directional_derivative(A, B, C, D, E3, Z, E3, Z)[0] == pytest.approx(-exact, rel=1e-9, abs=1e-12)
    flat = configs[-1]
    expected = -0.0112351499  # ∂𝒱·ℐ at coplanarity, ℐ by adaptive double integration (independent of the code)
    assert dgli(*flat)[0] == pytest.approx(expected, rel=1e-7)
    # ... and by the quadrature of eq. 7.5 (inverse_cube_integral), which also gives 𝒢 = 𝒱·ℐ off the plane
    A, B, C, D = flat
    dV = (C - A) @ np.cross(D - C, E3) + (C - A) @ np.cross(E3, B - A)
    assert dgli(*flat)[0] == pytest.approx(dV * inverse_cube_integral(A, B, C, D)[0], rel=1e-5)
    for A, B, C, D in configs[:-1]:
        V = (C - A) @ np.cross(D - C, B - A)
        assert V * inverse_cube_integral(A, B, C, D)[0] == pytest.approx(segment_gli(A, B, C, D)[0], rel=1e-9)


def test_dgli_is_clipped_for_nearly_intersecting_segments():
    # CD passes 0.1 µm above AB, near B and near C: 𝒢 is close to −1/2 but its derivative stays of order 1/length,
    # -2.39766370065013764 by the arcsin form (eq. 7.3) in 50-digit arithmetic (mpmath, central difference h = 1e-12)
    A, B, C, D = (np.array(p, float) for p in ([-1, 0, 0], [1, 0, 0], [0.9, -0.1, 1e-7], [0.9, 0.9, 1e-7]))
    assert dgli(A, B, C, D, clip=None)[0] == pytest.approx(-2.39766370065013764, rel=1e-8)
    # an end point 0.1 mm from the other segment: dGLI grows as 1/distance and is clipped (Remark 7.3.3)
    C = B + 1e-4 * np.array([0.7, -0.3, 0.5])
    D = C + [0.2, 1.0, 0.1]
    assert dgli(A, B, C, D, clip=None)[0] > 500.0
    assert dgli(A, B, C, D)[0] == 100.0 and dgli(A, B, C, D, clip=5.0)[0] == 5.0
    assert dgli(A, A + 1.0, A, D)[0] == 100.0  # segments that meet
    with pytest.raises(ValueError, match="epsilon"):
        dgli(A, B, C, D, epsilon=0.0)


def folded_corner(x, corner, width):
    """Fold the triangle within ``width`` (along both sides) of a corner of the flat unit sheet
    over its diagonal, onto the sheet (2 mm above it)."""
    y = x.copy()
    c = x[corner, :2]
    d = -np.sign(c)  # into the sheet
    s = (x[:, :2] - c) @ d / np.sqrt(2.0)
    inside = s < width / np.sqrt(2.0)
    foot = c + d * (width / 2.0)
    n = d / np.linalg.norm(d)
    p = x[inside, :2]
    y[inside, :2] = p - 2.0 * ((p - foot) @ n)[:, None] * n
    y[inside, 2] = 0.002
    return y


def test_cloth_coordinates_see_a_fold_and_ignore_moves_on_the_table():
    mesh = rectangle(1.0, 1.0, 20, 20)
    seg, corners, loop = sheet_segments(mesh)
    assert seg.shape == (8, 2) and corners.size == 4
    x = mesh.vertices.copy()
    flat = cloth_coordinates(x, seg)
    assert flat.shape == (28,) and coordinate_matrix(flat).shape == (8, 8)
    moved = Rotation.from_euler("z", 37, degrees=True).apply(x) + [0.3, -2.0, 0.0]
    assert np.allclose(cloth_coordinates(moved, seg), flat, rtol=1e-6, atol=1e-9)
    folded = cloth_coordinates(folded_corner(x, corners[0], 0.3), seg)
    assert np.any(np.sign(folded) * np.sign(flat) < 0)  # entries change sign when a corner folds
    assert spearman_distance(flat, folded) > 0.2
    with pytest.raises(ValueError, match="segments"):
        cloth_coordinates(x, [[0, 1]])


def test_distances_davies_bouldin_and_classifier():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=28), rng.normal(size=28)
    assert spearman_distance(a, a) == pytest.approx(0.0) and spearman_distance(a, -a) == pytest.approx(2.0)
    assert spearman_distance(a, 400.0 * a + 3.0) == pytest.approx(0.0)  # scale-free (real vs simulated cloth)
    one = a + 0.05 * rng.normal(size=(10, 28))
    two = b + 0.05 * rng.normal(size=(10, 28))
    X, labels = np.vstack([one, two]), np.repeat(["a", "b"], 10)
    good = davies_bouldin(X, labels)
    mixed = davies_bouldin(X, rng.permutation(labels))
    assert good < 0.3 < mixed
    M = distance_matrix(X)
    assert np.allclose(M, M.T) and M[:10, :10].max() < M[:10, 10:].min()
    label, dist = classify(two[0], {"a": one[:3], "b": b})
    assert label == "b" and dist["b"] < dist["a"]


def test_baselines():
    P0, P1 = np.array([[0.0, 0, 0]]), np.array([[1.0, 0, 0]])
    rng = np.random.default_rng(4)
    for _ in range(20):
        Q0, Q1 = rng.normal(size=(2, 1, 3))
        s = np.linspace(0, 1, 401)
        brute = np.linalg.norm((P0 + s[:, None] * (P1 - P0))[:, None] - (Q0 + s[:, None] * (Q1 - Q0))[None], axis=2).min()
        assert segment_distance(P0, P1, Q0, Q1)[0] == pytest.approx(brute, abs=2e-3)
    mesh = rectangle(1.0, 1.0, 10, 10)
    seg, corners, loop = sheet_segments(mesh)
    x = mesh.vertices
    assert edge_distances(x, seg).shape == (28,) and corner_distances(x, corners).shape == (6,)
    assert corner_distances(x, corners).max() == pytest.approx(np.sqrt(2.0))
    curve = x[loop]
    turned = Rotation.from_euler("xyz", [10, 20, 30], degrees=True).apply(curve) + 1.0
    assert boundary_frechet(curve, turned) == pytest.approx(0.0, abs=1e-9)
    assert boundary_hausdorff(curve, turned) == pytest.approx(0.0, abs=1e-9)
    assert boundary_frechet(curve, curve * [1.0, 1.2, 1.0]) > 0.05
