"""Obstacles are solid at any speed: continuous detection of nodes that pass through an obstacle
within one step (Obstacle.swept_passage) keeps a falling sheet on a 2 mm slab, box or mesh, from
rest and at 1, 3 and 10 m/s, and a 10 m/s sheet on a 10 cm box."""

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


def lowest(obstacle, speed: float, n: int, dt: float, duration: float, start: float = 0.15) -> float:
    """The lowest node height [m] over every step of a flat sheet (0.5 m, light cotton) dropped
    from ``start`` with downward ``speed`` [m/s] onto ``obstacle``."""
    mesh = rectangle(0.5, 0.5, n, n, center=(0.0, 0.0, start))
    model = (ModelBuilder().set_cloth(mesh, Material(rho=0.16, delta=0.08, alpha=0.3),
                                      initial_velocity=(0.0, 0.0, -speed))
             .add_obstacle(obstacle).finalize())
    st = Stepper(model, dt=dt)
    s = model.initial_state()
    low = np.inf
    for _ in range(int(round(duration / dt))):
        s, info = st.step(s)
        low = min(low, float(s.x[:, 2].min()))
    return low


@pytest.mark.parametrize("kind", ["box", "mesh"])
@pytest.mark.parametrize("speed", [0.0, 1.0, 3.0, 10.0])
def test_a_sheet_stays_on_a_thin_slab(kind, speed):
    # from rest the sheet arrives at 1 m/s: 1 cm per step against a 2 mm slab
    assert lowest(slab(kind), speed, 9, 0.01, 0.15 if speed else 0.35) >= TOP - 1e-4


@pytest.mark.parametrize("n, dt", [(17, 0.01), (9, 0.002)])
def test_finer_sheets_and_steps_stay_on_a_thin_slab(n, dt):
    assert lowest(slab("box"), 3.0, n, dt, 0.1) >= TOP - 1e-4


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
