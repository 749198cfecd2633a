"""Corners and edges of solid obstacles against the cloth's faces and edges (``Obstacle.features``): a
box's edge or a cone's apex passes between the nodes unless it is checked like a thin obstacle."""

import numpy as np
import pytest

from isocloth.contact.obstacles import (MotionTranslation, ObstacleBox, ObstacleCone, ObstacleCylinder,
                                        ObstacleSegments, ObstacleSphere)
from isocloth.mesh.generators import rectangle
from isocloth.model import Material, ModelBuilder

TAU = 0.002


def test_a_box_exposes_its_corners_and_edges_moving_with_it():
    box = ObstacleBox((0.0, 0.0, 1.0), (0.1, 0.2, 0.3), thickness=TAU, mu=0.3,
                      motion=MotionTranslation((0.5, 0.0, 0.0)))
    f = box.features()
    v0, v1 = f.vertices_at(0.0), f.vertices_at(2.0)
    assert sorted(map(tuple, v0.round(12))) == sorted((x, y, 1.0 + z) for x in (-0.1, 0.1) for y in (-0.2, 0.2)
                                                      for z in (-0.3, 0.3))
    np.testing.assert_allclose(v1 - v0, np.tile([1.0, 0.0, 0.0], (8, 1)))
    lengths = np.linalg.norm(v0[f.segments[:, 0]] - v0[f.segments[:, 1]], axis=1)
    assert sorted(lengths.round(12)) == [0.2] * 4 + [0.4] * 4 + [0.6] * 4  # the 12 edges
    assert f.points.size == 8 and f.radius == TAU and f.mu == 0.3
    cone = ObstacleCone(apex=(0.0, 0.0, 0.3), radius=0.1, height=0.3).features()
    v = cone.vertices_at(0.0)
    np.testing.assert_allclose(v[cone.points], [[0.0, 0.0, 0.3]])  # the apex
    rim = v[np.unique(cone.segments)]  # the base's rim, a polygon inscribed in it
    np.testing.assert_allclose(np.linalg.norm(rim[:, :2], axis=1), 0.1)
    np.testing.assert_allclose(rim[:, 2], 0.0, atol=1e-15)
    assert len(cone.segments) == len(rim) and cone.radius > 0.0  # thickness 0: a small radius still
    cyl = ObstacleCylinder((0.0, 0.0, 1.0), (1.0, 0.0, 0.0), 0.05, 0.2).features()
    v = cyl.vertices_at(0.0)
    assert sorted(set(v[:, 0].round(12))) == [-0.2, 0.2] and cyl.points.size == 0  # two rims
    np.testing.assert_allclose(np.linalg.norm(v[:, 1:] - [0.0, 1.0], axis=1), 0.05)
    assert ObstacleSphere((0.0, 0.0, 0.0), 0.1).features() is None  # smooth


def test_bars_thinner_than_a_cloth_edge_expose_their_axis():
    """A capsule's or a cylinder's axis, with radius R + thickness and moving with it, when its diameter
    2(R + thickness) is smaller than the cloth's longest edge (else its nodes' sweeps stop it); none for
    thicker bars and other obstacles. In a model: a 0.5 m sheet of 4 × 4 quads (longest edge: the
    sides, 12.5 cm; not the diagonals) gets the axis of a 10 cm bar, not of a 14 cm one (the rims only)."""
    from isocloth.contact.obstacles import ObstacleCapsule

    cap = ObstacleCapsule((0.0, 0.0, 1.0), (0.4, 0.0, 1.0), 0.002, thickness=0.001, mu=0.3,
                          motion=MotionTranslation((0.0, 0.5, 0.0)))
    f = cap.axis_feature(0.0061)
    np.testing.assert_allclose(f.vertices_at(0.0), [[0.0, 0.0, 1.0], [0.4, 0.0, 1.0]])
    np.testing.assert_allclose(f.vertices_at(2.0), [[0.0, 1.0, 1.0], [0.4, 1.0, 1.0]])
    assert f.segments.tolist() == [[0, 1]] and f.points.tolist() == [0, 1]  # edge-edge, ends node-face
    assert f.radius == 0.003 and f.mu == 0.3
    assert cap.axis_feature(0.006) is None  # 2(R + thickness) = 0.006: an edge cannot straddle it
    ball = ObstacleCapsule((0.0, 0.0, 1.0), (0.0, 0.0, 1.0), 0.002).axis_feature(0.1)
    assert ball.segments.size == 0 and ball.points.tolist() == [0]  # zero length: its centre only
    cyl = ObstacleCylinder((0.0, 0.0, 1.0), (1.0, 0.0, 0.0), 0.002, 0.2)
    np.testing.assert_allclose(cyl.axis_feature(0.1).vertices_at(0.0), [[-0.2, 0.0, 1.0], [0.2, 0.0, 1.0]])
    assert cyl.axis_feature(0.1).radius == 0.002
    small = ObstacleSphere((0.0, 0.0, 0.0), 0.001).axis_feature(1.0)  # a ball smaller than a face: its centre
    assert small.segments.size == 0 and small.points.tolist() == [0] and small.radius == 0.001
    assert ObstacleSphere((0.0, 0.0, 0.0), 0.01).axis_feature(0.02) is None
    assert ObstacleBox((0.0, 0.0, 0.0), (0.001, 0.001, 0.1)).axis_feature(1.0) is None
    mesh = rectangle(0.5, 0.5, 5, 5, center=(0.0, 0.0, 1.5))
    for radius, axes in ((0.05, 1), (0.07, 0)):
        bar = ObstacleCylinder((0.0, 0.0, 1.0), (1.0, 0.0, 0.0), radius, 0.2)
        m = ModelBuilder().set_cloth(mesh, Material()).add_obstacle(bar).finalize()
        assert np.isclose(m.longest_edge, 0.125)
        assert [f.name for f in m.obstacle_features] == ["cylinder (corners and edges)"] + ["cylinder (axis)"] * axes
    posts = [ObstacleBox((x, 0.0, 0.5), (0.05, 0.05, 0.5)) for x in (-0.4, 0.4)]  # a rail's ends held in two posts
    rail = ObstacleCapsule((-0.4, 0.0, 0.9), (0.4, 0.0, 0.9), 0.002, name="rail")
    m = ModelBuilder().set_cloth(mesh, Material()).add_obstacle(rail)
    for post in posts:
        m = m.add_obstacle(post)
    (axis,) = [f for f in m.finalize().obstacle_features if f.name == "rail (axis)"]
    assert len(axis.segments) == 1 and axis.points.size == 2  # kept whole: its middle is free


def test_corners_and_edges_resting_on_another_obstacle_are_left_out():
    """A box standing on the floor: its 4 bottom edges and corners are in the floor's thickness, the cloth cannot
    reach them; a box lifted 1 cm keeps all 12 and 8; a cone on the floor keeps its apex, not its base's rim."""
    from isocloth.contact.obstacles import ObstaclePlane

    mesh = rectangle(0.3, 0.3, 4, 4, element="triangle").transformed(np.eye(3), (0.0, 0.0, 0.5))
    for lift, segments, points in ((0.0, 8, 4), (0.01, 12, 8)):
        box = ObstacleBox((0.0, 0.0, 0.15 + lift), (0.1, 0.2, 0.15), thickness=TAU)
        m = ModelBuilder().set_cloth(mesh, Material()).add_obstacle(box).add_obstacle(ObstaclePlane(thickness=TAU))
        (f,) = m.finalize().obstacle_features
        assert (len(f.segments), f.points.size) == (segments, points)
        assert (f.vertices_at(0.0)[f.segments][:, :, 2].max(axis=1) > 0.0).all()  # the bottom edges are gone
    cone = ObstacleCone(apex=(0.0, 0.0, 0.3), radius=0.1, height=0.3, thickness=TAU)
    m = ModelBuilder().set_cloth(mesh, Material()).add_obstacle(cone).add_obstacle(ObstaclePlane(thickness=TAU))
    (f,) = m.finalize().obstacle_features
    assert f.segments.size == 0 and f.points.size == 1


def test_a_mesh_obstacle_exposes_its_sharp_convex_edges_and_corners():
    import trimesh

    from isocloth.contact.obstacles import ObstacleMesh

    box = trimesh.creation.box((0.2, 0.4, 0.6))
    f = ObstacleMesh(box.vertices, box.faces).features()  # its faces' diagonals are flat: not edges
    assert len(f.segments) == 12 and f.points.size == 8
    lengths = np.linalg.norm(np.diff(f.vertices_at(0.0)[f.segments], axis=1)[:, 0], axis=1)
    assert sorted(lengths.round(12)) == [0.2] * 4 + [0.4] * 4 + [0.6] * 4
    cone = trimesh.creation.cone(0.1, 0.3, sections=32)
    f = ObstacleMesh(cone.vertices, cone.faces).features()
    np.testing.assert_allclose(f.vertices_at(0.0)[f.points], [[0.0, 0.0, 0.3]], atol=1e-12)  # the apex
    assert len(f.segments) == 32  # the base's rim
    sphere = trimesh.creation.icosphere(3, 0.1)
    assert ObstacleMesh(sphere.vertices, sphere.faces).features() is None


def _drop(obstacle, model: str, until: float):
    """A 0.3 m sheet (11 × 11 nodes) dropped from 0.36 m onto ``obstacle``: the states after each step."""
    element = "triangle" if model == "elastic" else "quad"
    mesh = rectangle(0.3, 0.3, 11, 11, element=element).transformed(np.eye(3), (0.013, 0.007, 0.36))
    if model == "elastic":
        from isocloth.baselines.implicit import ImplicitEulerStepper
        from isocloth.elastic import MeasuredClothForces, load_measured_material

        knit = load_measured_material("gray-interlock")
        m = ModelBuilder().set_cloth(mesh, Material(rho=knit.density, gravity=9.8)).add_obstacle(obstacle).finalize()
        stepper = ImplicitEulerStepper(m, MeasuredClothForces(m.mesh, knit), dt=0.002)
    else:
        from isocloth.step.stepper import Stepper

        m = ModelBuilder().set_cloth(mesh, Material()).add_obstacle(obstacle).finalize()
        stepper = Stepper(m, dt=0.01)
    s, out, converged = m.initial_state(), [], []
    while s.t < until - 1e-9:
        s, info = stepper.step(s)
        assert info.converged or (model == "elastic" and info.residual <= 1e-5)  # m/s
        converged.append(info.converged)
        out.append(s)
    assert np.mean(converged) >= 0.98
    return m, out


def _surface_samples(x, triangles, k=6):
    """Points of every triangle on a barycentric grid of k + 1 points per side, (t (k+1)(k+2)/2, 3)."""
    a = np.array([(i, j, k - i - j) for i in range(k + 1) for j in range(k + 1 - i)], float) / k
    return np.einsum("sk,tkd->tsd", a, x[triangles]).reshape(-1, 3)


@pytest.mark.parametrize("model, kind", [("elastic", "box"), ("inextensible", "box"), ("elastic", "mesh"),
                                         ("inextensible", "mesh")])
def test_the_edge_of_a_box_does_not_cut_into_a_sheet_draped_over_it(model, kind):
    """Half the sheet lands on the box and the other half hangs over its edge (then slides off at μ = 0.2):
    every point of every face stays a thickness away from the box (node contacts alone let the edge cut 5–6 mm
    into the faces across it), a box primitive or a box mesh."""
    if kind == "box":
        box = ObstacleBox((-0.1, 0.0, 0.15), (0.1, 0.2, 0.15), mu=0.2, thickness=TAU)
    else:
        import trimesh

        from isocloth.contact.obstacles import ObstacleMesh

        tm = trimesh.creation.box((0.2, 0.4, 0.3))
        box = ObstacleMesh(tm.vertices + [-0.1, 0.0, 0.15], tm.faces, mu=0.2, thickness=TAU)
    m, states = _drop(box, model, 0.3 if model == "elastic" else 0.4)
    tri = m.mesh.triangulated_faces()
    straddles = [((s.x[:, 0] < -0.02) & (s.x[:, 2] > 0.3)).any() and (s.x[:, 2] < 0.25).any() for s in states]
    assert np.count_nonzero(straddles) > 5  # on the box and hanging over its edge
    for s in states:
        assert box.signed_distance(_surface_samples(s.x, tri), s.t).min() >= -0.5 * TAU


def _heights_above(x, triangles, p):
    """Heights z (k,) where the vertical line through p meets the triangles."""
    a, b, c = (x[triangles[:, i]] for i in range(3))
    e1, e2, r = b - a, c - a, p - a
    det = e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]
    ok = np.abs(det) > 1e-14
    u = np.where(ok, (r[:, 0] * e2[:, 1] - r[:, 1] * e2[:, 0]) / np.where(ok, det, 1.0), -1.0)
    v = np.where(ok, (e1[:, 0] * r[:, 1] - e1[:, 1] * r[:, 0]) / np.where(ok, det, 1.0), -1.0)
    hit = (u >= 0) & (v >= 0) & (u + v <= 1)
    return (a + u[:, None] * e1 + v[:, None] * e2)[hit, 2]


@pytest.mark.parametrize("model", ["elastic", "inextensible"])
def test_the_apex_of_a_cone_stays_under_the_sheet(model):
    """A sheet dropped on a cone's apex (between its nodes) hangs on it: the sheet above the apex stays a
    thickness above it at every step (with node contacts alone the apex goes through a face)."""
    apex = np.array([0.0, 0.0, 0.3])
    cone = ObstacleCone(apex=apex, radius=0.1, height=0.3, mu=0.2, thickness=TAU)
    m, states = _drop(cone, model, 0.3 if model == "elastic" else 0.4)
    tri = m.mesh.triangulated_faces()
    assert states[-1].x[:, 2].min() < 0.2  # draped down the cone
    for s in states:
        z = _heights_above(s.x, tri, apex)
        assert z.size and z.min() >= apex[2] + 0.9 * TAU


def test_an_elastic_sheet_hangs_on_a_thin_stick():
    """Thin obstacles reach the elastic model through the same rows: a sheet dropped across a horizontal
    stick of radius 3 mm folds over it instead of falling through between its nodes: the sheet above the
    stick stays a radius away from it."""
    from isocloth.baselines.implicit import ImplicitEulerStepper
    from isocloth.elastic import MeasuredClothForces, load_measured_material

    stick = ObstacleSegments([[0.0, -0.3, 0.3], [0.0, 0.3, 0.3]], [[0, 1]], radius=0.003, mu=0.3)
    knit = load_measured_material("gray-interlock")
    mesh = rectangle(0.3, 0.3, 11, 11, element="triangle").transformed(np.eye(3), (0.013, 0.007, 0.36))
    m = ModelBuilder().set_cloth(mesh, Material(rho=knit.density, gravity=9.8)).add_obstacle(stick).finalize()
    stepper = ImplicitEulerStepper(m, MeasuredClothForces(m.mesh, knit), dt=0.002)
    s = m.initial_state()
    while s.t < 0.3 - 1e-9:
        s, info = stepper.step(s)
        assert info.converged
        z = _heights_above(s.x, m.mesh.triangulated_faces(), np.array([0.0, 0.0, 0.3]))
        assert z.max() > 0.3 and (np.abs(z - 0.3) >= 0.9 * 0.003).all()
    assert s.x[:, 2].min() < 0.27  # folded over it
