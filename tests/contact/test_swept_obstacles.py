"""Obstacles are solid at any speed: continuous detection of nodes that pass through an obstacle
within one step (Obstacle.swept_passage) keeps a falling sheet on a 2 mm slab, box, mesh or exact SDF,
from rest and at 1, 3 and 10 m/s, a 10 m/s sheet on a 10 cm box, a 2 mm bar (cylinder, capsule) under a
row of nodes or between two rows (its axis, Obstacle.axis_feature; inextensible and elastic), an 8 cm ball and
a half-space, and a resting sheet on a thin slab or bar rising into it at 10 m/s."""

import numpy as np
import pytest
import trimesh

from isocloth import ModelBuilder, Stepper
from isocloth.contact import obstacles as ob
from isocloth.mesh.generators import rectangle
from isocloth.model import Material

TOP = 0.1


def slab(kind: str, thickness: float = 0.002):
    centre = (0.0, 0.0, TOP - 0.5 * thickness)
    if kind == "box":
        return ob.ObstacleBox(center=centre, half_extents=(0.5, 0.5, 0.5 * thickness))
    mesh = trimesh.creation.box(extents=(1.0, 1.0, thickness))
    return ob.ObstacleMesh(np.asarray(mesh.vertices) + centre, np.asarray(mesh.faces))


def box_sdf(centre, half_extents):
    """Exact signed distance [m] of an axis-aligned box, as a callable for ObstacleSDF."""
    c, h = np.asarray(centre, dtype=float), np.asarray(half_extents, dtype=float)

    def phi(q):
        w = np.abs(q - c) - h
        return np.linalg.norm(np.maximum(w, 0.0), axis=1) + np.minimum(w.max(axis=1), 0.0)

    return phi


def sdf_slab(thickness: float = 0.002, **kwargs):
    return ob.ObstacleSDF(box_sdf((0.0, 0.0, TOP - 0.5 * thickness), (0.5, 0.5, 0.5 * thickness)), **kwargs)


def trajectory(obstacle, speed: float, n: int, dt: float, duration: float, start: float = 0.15,
               elastic: bool = False):
    """[(t [s], node positions (n², 3) [m])] after every step of a flat n × n sheet (0.5 m, light
    cotton) dropped from height ``start`` with downward ``speed`` [m/s] onto ``obstacle``; with
    ``elastic`` a triangulated sheet of the measured gray interlock and the implicit Euler stepper."""
    if elastic:
        from isocloth.baselines.implicit import ImplicitEulerStepper
        from isocloth.elastic import MeasuredClothForces, load_measured_material

        knit = load_measured_material("gray-interlock")
        mesh = rectangle(0.5, 0.5, n, n, center=(0.0, 0.0, start), element="triangle")
        model = (ModelBuilder().set_cloth(mesh, Material(rho=knit.density, gravity=9.8),
                                          initial_velocity=(0.0, 0.0, -speed))
                 .add_obstacle(obstacle).finalize())
        st = ImplicitEulerStepper(model, MeasuredClothForces(model.mesh, knit), dt=dt)
    else:
        mesh = rectangle(0.5, 0.5, n, n, center=(0.0, 0.0, start))
        model = (ModelBuilder().set_cloth(mesh, Material(rho=0.16, delta=0.08, alpha=0.3),
                                          initial_velocity=(0.0, 0.0, -speed))
                 .add_obstacle(obstacle).finalize())
        st = Stepper(model, dt=dt)
    s = model.initial_state()
    out = []
    for _ in range(int(round(duration / dt))):
        s, info = st.step(s)
        out.append((s.t, s.x.copy()))
    return out


def lowest(obstacle, speed: float, n: int, dt: float, duration: float, start: float = 0.15) -> float:
    """The lowest node height [m] over every step of :func:`trajectory`."""
    return min(float(x[:, 2].min()) for _, x in trajectory(obstacle, speed, n, dt, duration, start))


def clearance_over_bar(x, y: float, z: float, radius: float) -> float:
    """Smallest height [m] of the nodes x (k, 3) above the top of a bar of ``radius`` along x at
    (y, z), among the nodes over it (|y_i − y| < radius); +inf when none is over it. Within the
    first steps after contact, a node below the bar but over it got there through it (a node that
    slides off is no longer over it; later the halves of a draped sheet may swing under the bar)."""
    dy = x[:, 1] - y
    over = np.abs(dy) < radius
    return float(np.min(x[over, 2] - z - np.sqrt(radius**2 - dy[over] ** 2), initial=np.inf))


@pytest.mark.parametrize("kind", ["box", "mesh"])
@pytest.mark.parametrize("speed", [0.0, 1.0, 3.0, 10.0])
def test_a_sheet_stays_on_a_thin_slab(kind, speed):
    # from rest the sheet arrives at 1 m/s: 1 cm per step against a 2 mm slab
    assert lowest(slab(kind), speed, 9, 0.01, 0.15 if speed else 0.35) >= TOP - 1e-4


@pytest.mark.parametrize("kind", ["box", "mesh"])
@pytest.mark.parametrize("n, dt", [(17, 0.01), (9, 0.002)])
def test_finer_sheets_and_steps_stay_on_a_thin_slab(kind, n, dt):
    assert lowest(slab(kind), 3.0, n, dt, 0.1) >= TOP - 1e-4


@pytest.mark.parametrize("speed", [0.0, 10.0])
def test_a_sheet_stays_on_a_thin_sdf_slab(speed):
    """The exact distance of the 2 mm slab given as a user SDF is swept like the box."""
    assert lowest(sdf_slab(), speed, 9, 0.01, 0.1 if speed else 0.35) >= TOP - 1e-4


@pytest.mark.parametrize("kind", ["cylinder", "capsule"])
def test_a_fast_sheet_does_not_pass_a_thin_bar(kind):
    """A 2 mm bar under the middle row of a 5 × 5 sheet arriving at 10 m/s (10 cm per step): the
    row lands on the bar (it may then slide off the frictionless bar, not through it)."""
    z, r = TOP - 0.002, 0.002
    if kind == "cylinder":
        bar = ob.ObstacleCylinder(center=(0.0, 0.0, z), axis=(1.0, 0.0, 0.0), radius=r, half_height=0.4)
    else:
        bar = ob.ObstacleCapsule(a=(-0.4, 0.0, z), b=(0.4, 0.0, z), radius=r)
    path = trajectory(bar, 10.0, 5, 0.01, 0.03)
    assert np.abs(path[0][1][:, 1]).min() < r  # the middle row is over the bar on arrival
    assert min(clearance_over_bar(x, 0.0, z, r) for _, x in path) >= -1e-4


@pytest.mark.parametrize("kind, elastic", [("cylinder", False), ("capsule", False), ("capsule", True)])
def test_a_fast_sheet_does_not_pass_a_thin_bar_between_its_nodes(kind, elastic):
    """A 2 mm bar midway between two rows of a 5 × 5 sheet (12.5 cm edges) arriving at 10 m/s: no node
    meets it, its axis (Obstacle.axis_feature) stops the edges across it, for the inextensible
    and the elastic model (2 cm per step of 2 ms)."""
    z, r, y = TOP - 0.002, 0.002, 0.0625  # midway between two rows of the 5 × 5 sheet
    if kind == "cylinder":
        bar = ob.ObstacleCylinder(center=(0.0, y, z), axis=(1.0, 0.0, 0.0), radius=r, half_height=0.4)
    else:
        bar = ob.ObstacleCapsule(a=(-0.4, y, z), b=(0.4, y, z), radius=r)
    path = trajectory(bar, 10.0, 5, 0.002, 0.02, elastic=True) if elastic else trajectory(bar, 10.0, 5, 0.01, 0.02)
    assert path[-1][1][:, 2].min() < z - r  # the sheet falls past the bar's level (its rows drape over it)
    for _, x in path:
        g = x.reshape(5, 5, 3)  # rows j at y = −0.25 + 0.125 j; the bar lies between rows 2 and 3
        across = (np.minimum(g[2, :, 1], g[3, :, 1]) < y) & (np.maximum(g[2, :, 1], g[3, :, 1]) > y)
        below = np.maximum(g[2, :, 2], g[3, :, 2]) < z - r
        assert not (across & below).any()  # an edge across the bar and wholly below it went through it


def test_a_fast_sheet_does_not_pass_a_small_ball():
    """An 8 cm ball under a 5 × 5 sheet at 10 m/s: the middle node, 10 cm per step, lands on top."""
    c, r = np.array([0.0, 0.0, TOP - 0.04]), 0.04
    for _, x in trajectory(ob.ObstacleSphere(center=c, radius=r), 10.0, 5, 0.01, 0.04):
        rho2 = (x[:, :2] ** 2).sum(axis=1)
        over = rho2 < r**2
        assert (x[over, 2] >= c[2] + np.sqrt(r**2 - rho2[over]) - 1e-4).all()


def test_a_fast_sheet_does_not_pass_a_ball_smaller_than_its_faces():
    """A 2 cm ball under the middle of a face of a 5 × 5 sheet (12.5 cm edges) at 10 m/s: no node meets
    it, its centre against the faces (Obstacle.axis_feature) stops the face."""
    c, r = np.array([0.0625, 0.0625, TOP - 0.01]), 0.01
    path = trajectory(ob.ObstacleSphere(center=c, radius=r), 10.0, 5, 0.01, 0.03)
    assert path[-1][1][:, 2].min() < c[2] - r  # the sheet falls past the ball (draped over it)
    for _, x in path:
        face = x.reshape(5, 5, 3)[2:4, 2:4].reshape(4, 3)  # the face over the ball at the start
        around = (face[:, 0].min() < c[0] < face[:, 0].max()) and (face[:, 1].min() < c[1] < face[:, 1].max())
        assert not (around and face[:, 2].max() < c[2] - r)  # the face went through the ball


def test_a_fast_sheet_stops_on_a_half_space():
    """A half-space cannot be crossed: at 10 m/s a node ends deep inside, and the closest-point row,
    not a passage (swept_passage reports none), holds it at the surface."""
    plane = ob.ObstaclePlane(point=(0.0, 0.0, TOP))
    assert lowest(plane, 10.0, 5, 0.01, 0.1) >= TOP - 1e-4
    through = plane.swept_passage(np.array([[0.0, 0.0, 0.12]]), 0.0, np.array([[0.0, 0.0, 0.02]]), 0.01, 1e-4)[0]
    assert not through.any()


@pytest.mark.parametrize("kind", ["box", "sdf", "capsule"])
def test_a_rising_thin_obstacle_does_not_pass_a_resting_sheet(kind):
    """A 2 mm slab (box or exact SDF) or bar rising at 10 m/s (10 cm per step) into a sheet at rest
    5 cm above it lifts the sheet instead of passing it (the bar: for the 3 steps after contact)."""
    v, z = 10.0, TOP - 0.002
    motion = ob.MotionTranslation(velocity=(0.0, 0.0, v))
    if kind == "box":
        obstacle = ob.ObstacleBox(center=(0.0, 0.0, TOP - 0.001), half_extents=(0.5, 0.5, 0.001), motion=motion)
    elif kind == "sdf":
        obstacle = sdf_slab(motion=motion)
    else:
        obstacle = ob.ObstacleCapsule(a=(-0.4, 0.0, z), b=(0.4, 0.0, z), radius=0.002, motion=motion)
    for t, x in trajectory(obstacle, 0.0, 5, 0.01, 0.03 if kind == "capsule" else 0.05):
        if kind == "capsule":
            assert clearance_over_bar(x, 0.0, z + v * t, 0.002) >= -1e-4
        else:
            assert x[:, 2].min() >= TOP + v * t - 1e-4


def test_a_fast_sheet_stops_on_a_box():
    box = ob.ObstacleBox(center=(0.0, 0.0, TOP - 0.05), half_extents=(0.5, 0.5, 0.05))
    assert lowest(box, 10.0, 9, 0.01, 0.1, start=0.3) >= TOP - 1e-4


def test_swept_passage_reports_crossings_not_sliding():
    thin = slab("box")
    p0 = np.array([[0.0, 0.0, 0.12], [0.1, 0.0, 0.12], [0.2, 0.0, 0.1001], [0.3, 0.0, 0.11]])
    p1 = np.array([[0.0, 0.0, 0.05], [0.1, 0.0, 0.1], [0.2, 0.0, 0.0985], [0.3, 0.0, 0.0975]])
    through, entry, normal = thin.swept_passage(p0, 0.0, p1, 0.01, 1e-4)
    assert through.tolist() == [True, False, True, True]  # past it, stopped on it, inside past the middle, past
    assert np.allclose(entry[through, 2], TOP) and np.allclose(normal[through], [0.0, 0.0, 1.0])
    # sliding over a sphere: a chord of a step dips inside but does not pass through
    ball = ob.ObstacleSphere(radius=0.25)
    a = 0.25 * np.array([[1.0, 0.0, 0.0]])
    b = 0.25 * np.array([[np.cos(0.1), 0.0, np.sin(0.1)]])
    assert not ball.swept_passage(a, 0.0, b, 0.01, 1e-4)[0].any()
    # a moving obstacle: a slab rising at 5 m/s passes a resting point above it within the step;
    # the point belongs on its top face, where the slab is at the end of the step
    rising = ob.ObstacleBox(center=(0.0, 0.0, 0.0), half_extents=(0.5, 0.5, 0.001),
                            motion=ob.MotionTranslation(velocity=(0.0, 0.0, 5.0)))
    p = np.array([[0.0, 0.0, 0.02]])
    through, entry, normal = rising.swept_passage(p, 0.0, p, 0.01, 1e-4)
    assert through.all() and normal[0, 2] == pytest.approx(1.0) and entry[0, 2] == pytest.approx(0.051)


@pytest.mark.parametrize("degrees", [45.0, 11.0, 6.0, 3.0])
def test_shallow_crossings_of_a_thin_slab_are_passages(degrees):
    """10 cm paths crossing the 2 mm slab at shallow angles (sphere tracing alone stalls below ~13°)."""
    th = np.deg2rad(degrees)
    p0 = np.array([[0.0, 0.0, TOP + 0.05 * np.sin(th)]])
    p1 = p0 + 0.1 * np.array([[np.cos(th), 0.0, -np.sin(th)]])
    through, entry, normal = slab("box").swept_passage(p0, 0.0, p1, 0.01, 1e-4)
    assert through.all() and entry[0, 2] == pytest.approx(TOP, abs=1e-6) and normal[0, 2] == pytest.approx(1.0)


def test_an_sdf_is_swept_where_it_is_a_distance():
    """The exact distance of the 2 mm slab as a user SDF: a 7 cm step across it (7 m/s) is a
    passage, a node resting on it or sliding over it is not; a function that is not a distance
    (here half of one, ‖∇φ‖ = 0.5) is not swept, as documented."""
    exact = sdf_slab()
    p0 = np.array([[0.0, 0.0, 0.12], [0.1, 0.0, TOP], [0.2, 0.0, TOP + 1e-5], [0.3, 0.0, 0.13]])
    p1 = np.array([[0.0, 0.0, 0.05], [0.1, 0.0, TOP - 5e-5], [0.25, 0.0, TOP - 2e-5], [0.3, 0.0, 0.101]])
    through, entry, normal = exact.swept_passage(p0, 0.0, p1, 0.01, 1e-4)
    assert through.tolist() == [True, False, False, False]
    assert entry[0, 2] == pytest.approx(TOP, abs=1e-6) and normal[0] == pytest.approx([0.0, 0.0, 1.0])
    phi = box_sdf((0.0, 0.0, TOP - 0.001), (0.5, 0.5, 0.001))
    scaled = ob.ObstacleSDF(lambda q: 0.5 * phi(q))
    assert not scaled.swept_passage(p0, 0.0, p1, 0.01, 1e-4)[0].any()
