"""An elastic sheet (Baraff–Witkin membrane, linearised implicit Euler) in contact with exact Coulomb
friction at its nodes: Li et al. 2018 §4 and the inclined plane of their Fig. 5."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from isocloth.baselines import make_stepper
from isocloth.contact.obstacles import ObstaclePlane
from isocloth.mesh.generators import rectangle
from isocloth.model import Material, ModelBuilder

THETA = np.radians(25.0)
NORMAL = np.array([-np.sin(THETA), 0.0, np.cos(THETA)])


def run(mu, until=1.0, dt=0.002):
    R = Rotation.from_euler("y", -25, degrees=True).as_matrix()
    mesh = rectangle(0.2, 0.2, 5, 5).transformed(R, (0.0, 0.0, 0.5216))  # parallel to the plane, 0.5216 m above
    model = (ModelBuilder().set_cloth(mesh, Material(rho=0.2, gravity=9.8), initial_velocity=(0, 0, -0.2))
             .add_obstacle(ObstaclePlane(point=(0, 0, 0), normal=NORMAL, mu=mu)).finalize())
    stepper = make_stepper("baraff-witkin", model, dt=dt)
    s = model.initial_state()
    out = []
    while s.t < until - 1e-9:
        s, info = stepper.step(s)
        out.append((s, info))
    return model, out


def test_an_elastic_sheet_slides_down_the_inclined_plane_as_the_analytic_solution():
    """μ = 0.2: impact at 0.3065 s, then a = g(sin 25° − μ cos 25°): mean speed 2.413 m/s at t = 1 s (±1 %)."""
    model, hist = run(0.2)
    w = model.area_mass / model.area_mass.sum()
    t_imp = next(s.t for s, i in hist if i.active_contacts > 0)
    assert t_imp == pytest.approx(0.3065, abs=0.002)
    assert np.linalg.norm(w @ hist[-1][0].v) == pytest.approx(2.413, rel=0.01)
    for s, info in hist:
        assert info.converged and info.residual <= 1e-8
        assert (s.x @ NORMAL).min() >= -1e-9  # every node on or above the plane
        if s.t > t_imp + 0.01:
            assert abs(w @ s.v @ NORMAL) < 1e-6 and info.sliding == 25  # sliding, no bounce


def test_an_elastic_sheet_sticks_where_static_friction_holds_it():
    """μ = 0.5 > tan 25°: the sheet stops at impact and moves less than 1 mm in the next second."""
    model, hist = run(0.5, until=1.4, dt=0.01)
    k = next(k for k, (s, i) in enumerate(hist) if i.active_contacts > 0)
    x_imp = hist[k][0].x
    assert np.abs(hist[-1][0].x - x_imp).max() < 1e-3
    assert hist[-1][1].sticking == 25


def test_a_sheet_in_a_v_groove_stays_out_of_both_faces():
    """Nodes at the bottom of a 90° groove touch both planes: each is duplicated and pinned (Li §6), and no node
    ends inside either face."""
    n1, n2 = np.array([1.0, 0.0, 1.0]) / np.sqrt(2), np.array([-1.0, 0.0, 1.0]) / np.sqrt(2)
    mesh = rectangle(0.3, 0.1, 7, 3).transformed(np.eye(3), (0.0, 0.0, 0.2))  # above the groove z ≥ |x|
    model = (ModelBuilder().set_cloth(mesh, Material(rho=0.2, gravity=9.8))
             .add_obstacle(ObstaclePlane(point=(0, 0, 0), normal=n1, mu=0.3))
             .add_obstacle(ObstaclePlane(point=(0, 0, 0), normal=n2, mu=0.3)).finalize())
    stepper = make_stepper("baraff-witkin", model, dt=0.005)
    s = model.initial_state()
    doubled = 0
    while s.t < 0.6 - 1e-9:
        s, info = stepper.step(s)
        assert info.converged
        assert (s.x @ n1).min() >= -1e-9 and (s.x @ n2).min() >= -1e-9
        if stepper.last_contacts is not None:
            contacts, _ = stepper.last_contacts
            doubled = max(doubled, contacts.node.size - np.unique(contacts.node).size)
    assert doubled >= 3  # the nodes on the groove's line touch both faces
    assert np.abs(s.v).max() < 0.05  # settled


def test_a_rising_floor_lifts_the_sheet_without_passing_it():
    """Contacts are predicted against the obstacle where it is at the end of the step: a floor rising at 1 m/s
    (1 cm per step) under a sheet resting 3 mm above it never has a node below it."""
    from isocloth.contact.obstacles.motion import MotionTranslation

    mesh = rectangle(0.2, 0.2, 5, 5).transformed(np.eye(3), (0.0, 0.0, 0.003))
    floor = ObstaclePlane(point=(0, 0, 0), normal=(0, 0, 1), mu=0.3, motion=MotionTranslation(velocity=(0, 0, 1.0)))
    model = ModelBuilder().set_cloth(mesh, Material(rho=0.2, gravity=9.8)).add_obstacle(floor).finalize()
    stepper = make_stepper("baraff-witkin", model, dt=0.01)
    s = model.initial_state()
    while s.t < 0.3 - 1e-9:
        s, info = stepper.step(s)
        assert info.converged
        assert s.x[:, 2].min() >= s.t * 1.0 - 1e-9  # on or above the floor at its new height
    assert s.v[:, 2].mean() == pytest.approx(1.0, abs=1e-6)  # carried up with it
