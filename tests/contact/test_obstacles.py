"""Geometric obstacle layer: signed distances, normals, motions and surface velocities (thesis §3.2, §3.6)."""

from pathlib import Path

import numpy as np
import pytest
import trimesh

from isocloth.contact.obstacles import (
    MotionComposite,
    MotionRotation,
    MotionStatic,
    MotionTranslation,
    MotionWaypoints,
    ObstacleBox,
    ObstacleCapsule,
    ObstacleCone,
    ObstacleCylinder,
    ObstacleMesh,
    ObstacleNeedles,
    ObstaclePlane,
    ObstacleSDF,
    ObstacleSphere,
    Pose,
    rotation_matrix,
)

SPHERE_OBJ = Path("/work/shared/data/meshes/codim_ipc/sphere1K_0.3.obj")
needs_sphere_obj = pytest.mark.skipif(not SPHERE_OBJ.is_file(), reason="shared sphere mesh not available")


def box_mesh_obstacle(center, half_extents, **kw):
    tm = trimesh.creation.box(extents=2.0 * np.asarray(half_extents))
    return ObstacleMesh(np.asarray(tm.vertices) + center, np.asarray(tm.faces), **kw)


def all_obstacles():
    """One instance of every primitive, keyed by name, in general position."""
    return {
        "plane": ObstaclePlane(point=(0.1, -0.2, 0.3), normal=(0.0, 0.6, 0.8)),
        "box": ObstacleBox(center=(0.1, 0.2, 0.7), half_extents=(0.5, 0.3, 0.05)),
        "sphere": ObstacleSphere(center=(0.2, -0.1, 0.4), radius=0.35),
        "cylinder": ObstacleCylinder(center=(0.0, 0.1, 0.2), axis=(1.0, 0.0, 0.0), radius=0.2, half_height=0.6),
        "capsule": ObstacleCapsule(a=(-0.3, 0.0, 0.1), b=(0.4, 0.2, 0.3), radius=0.15),
        "cone": ObstacleCone(apex=(0.1, -0.1, 0.6), axis=(0.0, 0.6, 0.8), radius=0.3, height=0.7),
        "needles": ObstacleNeedles(),
        "sdf": ObstacleSDF(lambda q: np.hypot(np.hypot(q[:, 0], q[:, 1]) - 0.3, q[:, 2]) - 0.1),  # torus
        "mesh": box_mesh_obstacle((0.1, 0.2, 0.7), (0.5, 0.3, 0.05)),
    }


def shell_points(obstacle, rng, n=200, lo=0.02, hi=0.5):
    """Random points outside the obstacle (where a convex obstacle's distance is smooth)."""
    pts = rng.uniform(-1.2, 1.2, size=(20 * n, 3))
    sd = obstacle.signed_distance(pts)
    return pts[(sd > lo) & (sd < hi)][:n]


def fd_gradient(f, p, h=1e-6):
    g = np.empty_like(p)
    for i in range(3):
        e = np.zeros(3)
        e[i] = h
        g[:, i] = (f(p + e) - f(p - e)) / (2 * h)
    return g


# --- analytic values -------------------------------------------------------------------------

@pytest.mark.parametrize(
    "obstacle, points, expected",
    [
        (ObstaclePlane(), [(1, 2, 0.3), (0, 0, -0.2), (5, -3, 0)], [0.3, -0.2, 0.0]),
        (ObstaclePlane(point=(0, 0, 1), normal=(0, 0.6, 0.8)), [(0, 0.6, 1.8), (3, 0, 1)], [1.0, 0.0]),
        (ObstacleBox((0, 0, 0.74), (0.5, 0.3, 0.01)),
         [(0, 0, 1.0), (0, 0, 0.74), (0.8, 0.7, 0.74), (0.5, 0.1, 0.745), (0.9, 0.0, 0.74), (0.8, 0.7, 0.75 + 1.2)],
         [0.25, -0.01, 0.5, 0.0, 0.4, np.sqrt(0.3**2 + 0.4**2 + 1.2**2)]),
        (ObstacleSphere((1, 2, 3), 0.5), [(1, 2, 4), (1, 2.3, 3), (1.5, 2, 3), (1, 2, 3)], [0.5, -0.2, 0.0, -0.5]),
        (ObstacleCylinder(radius=0.2, half_height=0.5),
         [(0.5, 0, 0), (0, 0, 0.8), (0.5, 0, 0.9), (0.1, 0, 0), (0, 0, 0.45), (0, 0, 0), (0, 0.2, -0.3), (0, 0, -0.5)],
         [0.3, 0.3, 0.5, -0.1, -0.05, -0.2, 0.0, 0.0]),
        (ObstacleCylinder(axis=(1, 0, 0), radius=0.2, half_height=0.5), [(0.8, 0, 0), (0, 0, 0.5)], [0.3, 0.3]),
        (ObstacleCapsule((0, 0, 0), (1, 0, 0), 0.1),
         [(0.5, 0.3, 0), (1.5, 0, 0), (-0.3, 0.4, 0), (0.5, 0, 0), (0.5, 0, 0.1)], [0.2, 0.4, 0.4, -0.1, 0.0]),
        (ObstacleCone(apex=(0, 0, 1), radius=0.5, height=1.0),  # slant 2ρ + h = 1
         [(0, 0, 1.5), (0, 0, -0.2), (0, 0, 0), (0, 0, 0.1), (1, 0, 0.5), (0, 0.8, -0.4), (0.25, 0, 0.5)],
         [0.5, 0.2, 0.0, -0.1, 1.5 / np.sqrt(5), 0.5, 0.0]),
    ],
    ids=["floor", "tilted-plane", "box", "sphere", "cylinder", "cylinder-x", "capsule", "cone"],
)
def test_signed_distance_matches_analytic_values(obstacle, points, expected):
    np.testing.assert_allclose(obstacle.signed_distance(np.array(points, float)), expected, atol=1e-14)


def test_needles_height_field_is_thesis_eq_3_16_scaled():
    c1, c2 = 20.0, 0.075
    obs = ObstacleNeedles(c1=c1, c2=c2)
    p = np.random.default_rng(0).uniform(-1, 1, (100, 3))
    H_thesis = c1 * c2 * p[:, 2] - np.sin(c1 * p[:, 0]) * np.sin(c1 * p[:, 1])
    np.testing.assert_allclose(obs.signed_distance(p), H_thesis / (c1 * c2), atol=1e-14)
    np.testing.assert_allclose(obs.signed_distance([[0.3, 0.0, 0.2]]), [0.2], atol=1e-14)


def test_needle_peaks_are_the_maxima_of_eq_3_17():
    obs = ObstacleNeedles(c1=20.0, c2=0.075)
    peaks = obs.peaks()
    # (2πm ± π/2)/20 ∈ [−1, 1]: m = −3..2 for "+", m = −2..3 for "−" → 6 × 6 per sign.
    assert peaks.shape == (72, 3)
    assert len(np.unique(np.round(peaks, 9), axis=0)) == 72
    assert np.all(np.abs(peaks[:, :2]) <= 1.0)
    np.testing.assert_allclose(peaks[:, 2], 1.0 / (20 * 0.075))
    np.testing.assert_allclose(np.sin(20 * peaks[:, 0]) * np.sin(20 * peaks[:, 1]), 1.0, atol=1e-12)
    np.testing.assert_allclose(obs.signed_distance(peaks), 0.0, atol=1e-12)
    np.testing.assert_allclose(obs.gradient(peaks), np.tile([0, 0, 1.0], (72, 1)), atol=1e-12)
    # A dense grid never exceeds the peak height.
    g = np.linspace(-1, 1, 401)
    X, Y = np.meshgrid(g, g)
    assert obs.height(np.column_stack([X.ravel(), Y.ravel()])).max() <= peaks[0, 2] + 1e-12
    # Peaks follow the obstacle's pose.
    moving = ObstacleNeedles(motion=MotionTranslation((0.0, 0.0, -0.1)), xlim=(0, 0.2), ylim=(0, 0.2))
    p0, p1 = moving.peaks(t=0.0), moving.peaks(t=2.0)
    assert len(p0) == 1  # (π/40, π/40)
    np.testing.assert_allclose(p1 - p0, [[0, 0, -0.2]], atol=1e-14)
    np.testing.assert_allclose(moving.peak_velocities(t=1.0), [[0, 0, -0.1]])


def test_sdf_callable_matches_sphere_with_and_without_gradient():
    c, r = np.array([0.1, 0.2, 0.3]), 0.4
    sphere = ObstacleSphere(c, r)
    phi = lambda q: np.linalg.norm(q - c, axis=1) - r  # noqa: E731
    fd = ObstacleSDF(phi)
    exact = ObstacleSDF(phi, gradient=lambda q: 2.0 * (q - c))  # not normalised on purpose
    p = np.random.default_rng(1).uniform(-1, 1, (50, 3))
    np.testing.assert_allclose(fd.signed_distance(p), sphere.signed_distance(p), atol=1e-15)
    np.testing.assert_allclose(fd.gradient(p), sphere.gradient(p), atol=1e-7)
    np.testing.assert_allclose(exact.gradient(p), sphere.gradient(p), atol=1e-14)
    with pytest.raises(ValueError, match="function"):
        ObstacleSDF(lambda q: np.zeros(2)).signed_distance(p)


def test_mesh_box_matches_analytic_box_exactly():
    c, h = np.array([0.1, 0.2, 0.7]), np.array([0.5, 0.3, 0.05])
    box, mesh = ObstacleBox(c, h), box_mesh_obstacle(c, h)
    rng = np.random.default_rng(2)
    p = np.concatenate([rng.uniform(-1, 1.2, (400, 3)), c + rng.uniform(-1, 1, (200, 3)) * h])  # incl. inside
    sd_box, sd_mesh = box.signed_distance(p), mesh.signed_distance(p)
    np.testing.assert_allclose(sd_mesh, sd_box, atol=1e-12)
    assert np.sum(sd_box < 0) > 150
    # Normals agree wherever the box distance is smooth (outside, or inside off the medial axis).
    d = np.sort(np.abs(p - c) - h, axis=1)
    smooth = (sd_box > 1e-9) | (d[:, 2] - d[:, 1] > 1e-6)
    np.testing.assert_allclose(mesh.gradient(p[smooth]), box.gradient(p[smooth]), atol=1e-9)
    np.testing.assert_allclose(mesh.closest_points(p[sd_box > 0]), box.closest_points(p[sd_box > 0]), atol=1e-12)
    # On the surface (face interior, edge and corner) the distance is 0 and the normal is outward.
    surf = c + np.array([[0.2, 0.0, h[2]], [h[0], h[1], 0.0], h, [-h[0], 0.1, -h[2]]])
    np.testing.assert_allclose(mesh.signed_distance(surf), 0.0, atol=1e-12)
    assert np.all(np.einsum("ij,ij->i", mesh.gradient(surf), surf - c) > 0)


@needs_sphere_obj
def test_mesh_sphere_file_matches_analytic_sphere_within_resolution():
    obs = ObstacleMesh.from_file(SPHERE_OBJ, y_up=True, mu=0.5)
    assert obs.name == "sphere1K_0.3" and obs.mu == 0.5
    r_vertices = np.linalg.norm(obs.vertices, axis=1)
    assert 0.148 < r_vertices.min() and r_vertices.max() < 0.156  # radius ≈ 0.152, centred at the origin
    rng = np.random.default_rng(3)
    u = rng.normal(size=(300, 3))
    u /= np.linalg.norm(u, axis=1)[:, None]
    rad = rng.uniform(0.02, 0.6, 300)
    p = u * rad[:, None]
    sd, g = obs.evaluate(p)
    np.testing.assert_allclose(sd, rad - 0.152, atol=3e-3)  # mesh resolution (edge ≈ 1.5 cm)
    far = np.abs(rad - 0.152) > 0.05
    assert np.all(np.einsum("ij,ij->i", g[far], u[far]) > 0.98)
    np.testing.assert_allclose(np.linalg.norm(g, axis=1), 1.0, atol=1e-12)


def test_mesh_from_file_y_up_conversion(tmp_path):
    # A tall box along y in the file becomes a tall box along z.
    tm = trimesh.creation.box(extents=(0.2, 1.0, 0.4))
    f = tmp_path / "tall.obj"
    tm.export(f)
    obs = ObstacleMesh.from_file(f, y_up=True)
    np.testing.assert_allclose(np.ptp(obs.vertices, axis=0), [0.2, 0.4, 1.0], atol=1e-9)
    np.testing.assert_allclose(obs.signed_distance([[0, 0, 0.6], [0, 0.3, 0]]), [0.1, 0.1], atol=1e-9)


# --- gradients --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(all_obstacles()))
def test_gradient_matches_finite_differences_and_is_unit(name):
    obs = all_obstacles()[name]
    rng = np.random.default_rng(4)
    p = shell_points(obs, rng) if name not in ("plane", "needles") else rng.uniform(-1, 1, (200, 3))
    assert len(p) > 50
    g = obs.gradient(p)
    np.testing.assert_allclose(np.linalg.norm(g, axis=1), 1.0, atol=1e-12)
    fd = fd_gradient(obs.signed_distance, p)
    if name == "needles":  # height field: the gradient is the normalised ∇H
        fd /= np.linalg.norm(fd, axis=1)[:, None]
    np.testing.assert_allclose(g, fd, atol=2e-6 if name != "needles" else 1e-5)
    sd2, g2 = obs.evaluate(p)
    np.testing.assert_allclose(sd2, obs.signed_distance(p))
    np.testing.assert_allclose(g2, g)


@pytest.mark.parametrize(
    "obstacle, inside",
    [
        (ObstacleBox((0, 0, 0), (0.5, 0.3, 0.1)), [(0.1, 0.05, 0.02), (0.45, 0.0, 0.0), (0.0, -0.25, 0.0)]),
        (ObstacleCylinder(radius=0.2, half_height=0.5), [(0.1, 0.05, 0.1), (0.0, 0.0, 0.45), (0.0, 0.02, -0.47)]),
        (ObstacleCapsule((0, 0, 0), (1, 0, 0), 0.2), [(0.5, 0.05, 0.02), (1.1, 0.0, 0.01)]),
        (ObstacleSphere((0, 0, 0), 0.3), [(0.1, 0.05, -0.1)]),
        (ObstacleCone(apex=(0, 0, 1), radius=0.5, height=1.0), [(0.05, 0.1, 0.1), (0.0, 0.1, 0.7), (0.3, 0.0, 0.05)]),
    ],
    ids=["box", "cylinder", "capsule", "sphere", "cone"],
)
def test_gradient_inside_matches_finite_differences(obstacle, inside):
    p = np.array(inside, float)
    np.testing.assert_allclose(obstacle.gradient(p), fd_gradient(obstacle.signed_distance, p), atol=2e-6)


def test_consistent_normals_at_singular_points():
    assert np.allclose(ObstacleSphere((0, 0, 0), 1.0).gradient([[0, 0, 0]]), [[0, 0, 1]])
    assert np.allclose(ObstacleBox((0, 0, 0), (1, 1, 1)).gradient([[0, 0, 0]]), [[1, 0, 0]])
    g = ObstacleCylinder(radius=0.2, half_height=0.5).gradient([[0, 0, 0], [0, 0, 0.4]])
    np.testing.assert_allclose(np.linalg.norm(g, axis=1), 1.0)
    assert abs(g[0, 2]) < 1e-15 and np.allclose(g[1], [0, 0, 1])  # radial on the axis, cap near the cap
    g = ObstacleCapsule((0, 0, 0), (1, 0, 0), 0.1).gradient([[0.5, 0, 0]])
    assert abs(np.linalg.norm(g) - 1) < 1e-15 and abs(g[0, 0]) < 1e-15


# --- thickness and motion ---------------------------------------------------------------------

@pytest.mark.parametrize("name", list(all_obstacles()))
def test_thickness_shifts_the_signed_distance(name):
    thin = all_obstacles()[name]
    thick = all_obstacles()[name]
    thick.thickness = 0.01
    p = np.random.default_rng(5).uniform(-1, 1, (100, 3))
    np.testing.assert_allclose(thick.signed_distance(p), thin.signed_distance(p) - 0.01, atol=1e-15)
    np.testing.assert_allclose(thick.gradient(p), thin.gradient(p), atol=1e-15)


def spin_and_carry():
    return MotionComposite(
        MotionRotation(axis=(0.0, 0.6, 0.8), center=(0.1, 0.0, 0.2), angular_velocity=1.3, start=0.2, max_angle=2.0),
        MotionTranslation((0.3, -0.2, 0.1), start=0.1, duration=1.0),
    )


@pytest.mark.parametrize("name", list(all_obstacles()))
@pytest.mark.parametrize("t", [0.0, 0.7, 3.0])
def test_moving_obstacle_equals_static_one_at_inverse_transformed_points(name, t):
    static = all_obstacles()[name]
    moving = all_obstacles()[name]
    moving.motion = spin_and_carry()
    pose = moving.motion.pose(t)
    p = np.random.default_rng(6).uniform(-1, 1, (100, 3))
    q = pose.apply_inverse(p)
    np.testing.assert_allclose(moving.signed_distance(p, t), static.signed_distance(q), atol=1e-12)
    np.testing.assert_allclose(moving.gradient(p, t), static.gradient(q) @ pose.rotation.T, atol=1e-12)
    np.testing.assert_allclose(moving.closest_points(p, t), pose.apply(static.closest_points(q)), atol=1e-12)


def test_motion_schedules_and_velocity_is_the_pose_derivative():
    m = MotionTranslation((1.0, 2.0, 0.0), start=1.0, duration=0.5)
    np.testing.assert_allclose(m.pose(0.5).translation, 0.0)
    np.testing.assert_allclose(m.pose(1.25).translation, [0.25, 0.5, 0])
    np.testing.assert_allclose(m.pose(9.0).translation, [0.5, 1.0, 0])
    assert np.all(m.velocity_at([[0, 0, 0]], 2.0) == 0) and np.allclose(m.velocity_at([[0, 0, 0]], 1.2), [1, 2, 0])
    r = MotionRotation(axis=(0, 0, 1), angular_velocity=-np.pi, start=1.0, max_angle=np.pi)
    assert r.angle(0.0) == 0.0 and np.isclose(r.angle(1.5), -np.pi / 2) and np.isclose(r.angle(5.0), -np.pi)
    np.testing.assert_allclose(r.pose(5.0).rotation, rotation_matrix((0, 0, 1), np.pi), atol=1e-15)
    w = MotionWaypoints([0.0, 1.0, 3.0], [[0, 0, 0], [1, 0, 0], [1, 0, 2]])
    np.testing.assert_allclose(w.pose(2.0).translation, [1, 0, 1])
    np.testing.assert_allclose(w.velocity_at([[5, 5, 5]], 2.0), [[0, 0, 1]])
    np.testing.assert_allclose(w.velocity_at([[5, 5, 5]], 4.0), [[0, 0, 0]])
    # Velocity of a composite = d/dt of the world position of a material point.
    motion, h = spin_and_carry(), 1e-6
    x0 = np.random.default_rng(7).uniform(-1, 1, (20, 3))
    for t in (0.5, 0.9):
        x = motion.pose(t).apply(x0)
        v_fd = (motion.pose(t + h).apply(x0) - motion.pose(t - h).apply(x0)) / (2 * h)
        np.testing.assert_allclose(motion.velocity_at(x, t), v_fd, atol=1e-7)
    assert MotionComposite(MotionStatic(), MotionStatic()).is_static


def test_spinning_sphere_surface_velocity_is_omega_r_on_the_equator():
    r, c, omega = 0.35, np.array([0.0, 0.0, 0.35]), np.pi
    sphere = ObstacleSphere(c, r, mu=0.5, motion=MotionRotation(center=c, angular_velocity=omega, start=1.0,
                                                               max_angle=np.pi))
    on_equator = c + np.array([[r, 0, 0], [0, r, 0]])
    above_surface = c + np.array([[r + 0.05, 0, 0]])  # velocity is taken at the closest surface point
    v = sphere.surface_velocity(np.concatenate([on_equator, above_surface]), t=1.5)
    np.testing.assert_allclose(v, [[0, omega * r, 0], [-omega * r, 0, 0], [0, omega * r, 0]], atol=1e-12)
    np.testing.assert_allclose(sphere.surface_velocity(on_equator, t=0.5), 0.0)  # not started yet
    np.testing.assert_allclose(sphere.surface_velocity(on_equator, t=2.5), 0.0)  # half turn done
    # Translation adds v_c everywhere; a static obstacle has zero surface velocity.
    moving = ObstacleSphere(c, r, motion=MotionTranslation((0.1, 0, 0)))
    np.testing.assert_allclose(moving.surface_velocity(on_equator, t=3.0), [[0.1, 0, 0]] * 2)
    assert np.all(ObstaclePlane().surface_velocity(on_equator) == 0)


def test_pose_roundtrip_and_composition():
    R = rotation_matrix((0.0, 0.6, 0.8), 0.7)
    P = Pose(R, (0.1, 0.2, 0.3))
    x = np.random.default_rng(8).normal(size=(10, 3))
    np.testing.assert_allclose(P.apply_inverse(P.apply(x)), x, atol=1e-14)
    np.testing.assert_allclose(P.inverse().apply(P.apply(x)), x, atol=1e-14)
    Q = Pose(rotation_matrix((1, 0, 0), -0.3), (0.0, -1.0, 0.5))
    np.testing.assert_allclose(P.compose(Q).apply(x), P.apply(Q.apply(x)), atol=1e-14)
    with pytest.raises(ValueError, match="rotation"):
        Pose(np.diag([1.0, 1.0, -1.0]))


# --- argument validation ------------------------------------------------------------------------

@pytest.mark.parametrize(
    "make, param",
    [
        (lambda: ObstaclePlane(mu=-0.1), "mu"),
        (lambda: ObstacleSphere(radius=1.0, mu=float("nan")), "mu"),
        (lambda: ObstacleSphere(radius=1.0, thickness=-1e-3), "thickness"),
        (lambda: ObstacleSphere(radius=0.0), "radius"),
        (lambda: ObstacleCapsule(radius=-1.0), "radius"),
        (lambda: ObstacleCylinder(radius=0.0), "radius"),
        (lambda: ObstacleCylinder(half_height=0.0), "half_height"),
        (lambda: ObstacleCylinder(axis=(0, 0, 2)), "axis"),
        (lambda: ObstaclePlane(normal=(0, 0, 0)), "normal"),
        (lambda: ObstaclePlane(normal=(0, 1, 1)), "normal"),
        (lambda: ObstaclePlane(point=(0, 0)), "point"),
        (lambda: ObstacleBox(half_extents=(1, 0, 1)), "half_extents"),
        (lambda: ObstacleNeedles(c1=0.0), "c1"),
        (lambda: ObstacleNeedles(c2=-1.0), "c2"),
        (lambda: ObstacleNeedles(xlim=(1, -1)), "xlim"),
        (lambda: ObstacleSDF("not callable"), "function"),
        (lambda: ObstacleSDF(lambda q: q[:, 0], fd_step=0.0), "fd_step"),
        (lambda: ObstacleSphere(radius=1.0, motion="spin"), "motion"),
        (lambda: MotionRotation(axis=(0, 0, 0)), "axis"),
        (lambda: MotionRotation(angular_velocity=1.0, max_angle=0.0), "max_angle"),
        (lambda: MotionTranslation((1, 0, 0), duration=-1.0), "duration"),
        (lambda: MotionWaypoints([0.0, 0.0], [[0, 0, 0], [1, 0, 0]]), "times"),
        (lambda: ObstacleSphere(radius=1.0).signed_distance(np.zeros((4, 2))), "points"),
    ],
)
def test_bad_arguments_raise_value_error_naming_the_parameter(make, param):
    with pytest.raises(ValueError, match=param):
        make()


def test_open_mesh_is_rejected():
    tm = trimesh.creation.box()
    with pytest.raises(ValueError, match="faces"):
        ObstacleMesh(tm.vertices, tm.faces[:-1])


def test_mu_setter_validates():
    obs = ObstaclePlane(mu=0.4, name="floor")
    assert obs.mu == 0.4 and obs.name == "floor"
    with pytest.raises(ValueError, match="mu"):
        obs.mu = -1.0


def winding_number(vertices, faces, p):
    """Generalised winding number (Van Oosterom–Strackee solid angles), the brute-force inside test."""
    a, b, c = (vertices[faces[:, i]][None, :, :] - p[:, None, :] for i in range(3))
    la, lb, lc = (np.linalg.norm(x, axis=2) for x in (a, b, c))
    num = np.einsum("pfi,pfi->pf", a, np.cross(b, c))
    den = la * lb * lc + np.einsum("pfi,pfi->pf", a, b) * lc + np.einsum("pfi,pfi->pf", a, c) * lb \
        + np.einsum("pfi,pfi->pf", b, c) * la
    return (2.0 * np.arctan2(num, den)).sum(axis=1) / (4.0 * np.pi)


def star_prism(n=5, r_out=0.4, r_in=0.15, half_height=0.1, top_center_z=None):
    """Closed, outward-wound prism over a star polygon, caps fan-triangulated about the axis.

    r_in < r_out gives sharp concave vertical edges; lowering the top fan centre to
    ``top_center_z`` turns the top cap into a conical pit with a concave apex vertex.
    """
    m = 2 * n
    ang = np.arange(m) * np.pi / n
    rad = np.where(np.arange(m) % 2 == 0, r_out, r_in)
    ring = np.c_[rad * np.cos(ang), rad * np.sin(ang)]
    apex = half_height if top_center_z is None else top_center_z
    V = np.concatenate([np.c_[ring, np.full(m, -half_height)], np.c_[ring, np.full(m, half_height)],
                        [[0, 0, -half_height], [0, 0, apex]]])
    i, j = np.arange(m), (np.arange(m) + 1) % m
    bottom = np.c_[np.full(m, 2 * m), j, i]
    top = np.c_[np.full(m, 2 * m + 1), m + i, m + j]
    sides = np.concatenate([np.c_[i, j, m + j], np.c_[i, m + j, m + i]])
    return V, np.concatenate([bottom, top, sides])


def bumpy_sphere():
    tm = trimesh.creation.icosphere(subdivisions=2, radius=0.3)
    v = np.asarray(tm.vertices)
    u = v / np.linalg.norm(v, axis=1)[:, None]
    return v * (1.0 + 0.35 * np.sin(5 * u[:, 0]) * np.cos(4 * u[:, 1]))[:, None], np.asarray(tm.faces)


@pytest.mark.parametrize(
    "vertices_faces",
    [bumpy_sphere(), star_prism(), star_prism(r_in=0.4, half_height=0.2, top_center_z=0.0)],
    ids=["bumpy-sphere", "star-prism (concave edges)", "pit (concave vertex)"],
)
def test_nonconvex_mesh_matches_brute_force_distance_and_winding_sign(vertices_faces):
    obs = ObstacleMesh(*vertices_faces)
    rng = np.random.default_rng(9)
    near_vertices = obs.vertices[rng.integers(0, len(obs.vertices), 400)] + rng.normal(scale=1e-2, size=(400, 3))
    p = np.concatenate([rng.uniform(-0.6, 0.6, (200, 3)), near_vertices])
    sd, g = obs.evaluate(p)
    tris = obs.vertices[obs.faces]
    nf = len(tris)
    cp = trimesh.triangles.closest_point(np.tile(tris, (len(p), 1, 1)), np.repeat(p, nf, axis=0))
    brute = np.linalg.norm(cp - np.repeat(p, nf, axis=0), axis=1).reshape(len(p), nf).min(axis=1)
    np.testing.assert_allclose(np.abs(sd), brute, atol=1e-12)
    inside = winding_number(obs.vertices, obs.faces, p) > 0.5
    assert 0 < inside.sum() < len(p)
    np.testing.assert_array_equal(sd < 0, inside)
    np.testing.assert_allclose(np.linalg.norm(g, axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("name", list(all_obstacles()))
def test_empty_and_single_point_queries(name):
    obs = all_obstacles()[name]
    obs.motion = spin_and_carry()
    sd, g = obs.evaluate(np.zeros((0, 3)), t=0.5)
    assert sd.shape == (0,) and g.shape == (0, 3)
    assert obs.surface_velocity(np.zeros((0, 3)), t=0.5).shape == (0, 3)
    assert obs.signed_distance([0.1, 0.2, 0.3], t=0.5).shape == (1,)
    assert obs.gradient([0.1, 0.2, 0.3], t=0.5).shape == (1, 3)


# --- contact rows (evaluate_contact) -------------------------------------------------------------

def test_contact_rows_of_distance_functions_equal_evaluate():
    rng = np.random.default_rng(7)
    p = rng.uniform(-1, 1, (100, 3))
    for name, obs in all_obstacles().items():
        if name in ("needles", "sdf"):
            continue
        v, n = obs.evaluate_contact(p, 0.0)
        sd, g = obs.evaluate(p, 0.0)
        np.testing.assert_allclose(v, sd, atol=1e-14)
        np.testing.assert_allclose(n, g, atol=1e-14)


def test_needle_contact_rows_use_the_first_order_distance():
    """H/‖∇H‖ with the unit normal: a step of δ along the normal changes the row's value by δ (to
    first order), so the linearised row asks for the right motion on the steep flanks (slope ≤ 13)."""
    obs = ObstacleNeedles()
    rng = np.random.default_rng(3)
    xy = rng.uniform(-0.5, 0.5, (200, 2))
    p = np.column_stack([xy, obs.height(xy) + rng.uniform(-1e-5, 1e-5, 200)])
    v, n = obs.evaluate_contact(p)
    np.testing.assert_allclose(n, obs.gradient(p), atol=1e-14)
    delta = 1e-6
    v2, _ = obs.evaluate_contact(p + delta * n)
    np.testing.assert_allclose((v2 - v) / delta, 1.0, atol=2e-3)
    H = obs.signed_distance(p)  # vertical gap (thesis eq. 3.16 scaled)
    assert np.all(np.abs(v) <= np.abs(H) + 1e-15) and np.all(np.sign(v) == np.sign(H))


def test_sdf_contact_rows_are_normalised_by_the_gradient():
    obs = ObstacleSDF(lambda q: 3.0 * (q[:, 2] - 0.1))  # not a distance: slope 3
    p = np.array([[0.0, 0.0, 0.2], [0.5, -0.3, 0.05]])
    v, n = obs.evaluate_contact(p)
    np.testing.assert_allclose(v, [0.1, -0.05], atol=1e-9)
    np.testing.assert_allclose(n, [[0, 0, 1.0]] * 2, atol=1e-9)


def test_mesh_contact_rows_skip_points_outside_the_bounding_sphere():
    obs = box_mesh_obstacle((0.0, 0.0, 0.0), (0.2, 0.2, 0.2))
    p = np.array([[0.0, 0.0, 0.205], [0.0, 0.0, 3.0]])
    v, n = obs.evaluate_contact(p, max_distance=0.01)
    assert v[0] == pytest.approx(0.005) and np.isinf(v[1])
    v_all, _ = obs.evaluate_contact(p)
    np.testing.assert_allclose(v_all, [0.005, 2.8], atol=1e-12)
