"""Grasps that start, end and change during a run (Control.grasp_nodes, timed scene grasps,
GraspController) and the forces of the grasps (isocloth.step.grasp_forces)."""

import numpy as np
import pytest

from isocloth.control import Control, GraspController, nodes_near, surface_point
from isocloth.mesh.generators import rectangle
from isocloth.model import Material, ModelBuilder
from isocloth.scenes.loader import build_scene, config_from_dict
from isocloth.state import State
from isocloth.step import Stepper


def _sheet(alpha=0.0, plane="xz"):
    """A 0.5 m square sheet of 8 x 8 nodes, hanging in the x-z plane or flat in the x-y plane; its
    two corners of largest z (x-z) or y (x-y)."""
    mesh = rectangle(0.5, 0.5, 8, 8, plane=plane, center=(0.0, 0.0, 1.0))
    h = mesh.vertices[:, 2 if plane == "xz" else 1]
    top = np.flatnonzero(np.isclose(h, h.max()))
    return mesh, top[[0, -1]], Material(alpha=alpha)


def _com(model, x):
    m = model.masses
    return (m[:, None] * x).sum(axis=0) / m.sum()


def test_a_released_sheet_falls_freely_with_its_centre_of_mass_on_the_parabola():
    mesh, corners, mat = _sheet(plane="xy")
    model = ModelBuilder().set_cloth(mesh, mat).add_grasp(corners, end=0.05).finalize()
    st = Stepper(model, dt=0.001)
    s = model.initial_state()
    for _ in range(49):  # held in the steps ending before 0.05 s: the sheet swings down from flat
        s, info = st.step(s)
        assert np.abs(s.x[corners] - mesh.vertices[corners]).max() <= 1e-12
    g = -st.predictor.gravity[:, 2].sum() / model.masses.sum()
    z0, vz0, t0 = _com(model, s.x)[2], _com(model, s.v)[2], s.t
    assert abs(vz0) > 0.1  # released while moving
    for _ in range(200):
        s, info = st.step(s)
        assert info.converged and info.grasp_forces.shape == (0, 3)
    t = s.t - t0
    fall = _com(model, s.x)[2] - z0 - vz0 * t
    assert fall == pytest.approx(-0.5 * g * t * t, rel=0.01)
    assert s.x[corners, 2].max() < mesh.vertices[corners, 2].min() - 0.1  # the corners fell too


def test_a_point_inside_a_face_is_held_at_its_target_by_its_barycentric_weights():
    """A gripper takes the sheet at a point inside a face (not a node): the face's nodes follow it
    rigidly, the point itself goes where the gripper takes it, and the sheet hangs from it."""
    mesh, corners, mat = _sheet(alpha=1.0)
    model = ModelBuilder().set_cloth(mesh, mat).finalize()
    st = Stepper(model, dt=0.01)
    s = model.initial_state()
    # a point 0.3 of a spacing off the grid in x and z, 1 cm in front of the sheet: inside a face
    spacing = 0.5 / 7
    p = s.x.mean(axis=0) + np.array([0.3 * spacing, 0.01, 0.6 * spacing])
    nodes, w = surface_point(model.mesh, s.x, p)
    assert nodes.shape == (3,) and (w > 0.05).all() and w.sum() == pytest.approx(1.0)
    on_face = w @ s.x[nodes]
    assert np.linalg.norm(on_face - (p - [0.0, 0.01, 0.0])) <= 1e-12  # the foot of p on the sheet
    hand = GraspController(model.node_count)
    h = hand.grasp(s.x, point=p, surface=model.mesh)
    assert np.array_equal(hand.nodes, np.sort(nodes)) and np.allclose(hand.grasp_point(h), on_face, atol=1e-15)
    rel = s.x[nodes] - on_face
    target = on_face + np.array([0.02, 0.0, 0.10])
    for k in range(1, 31):
        hand.move_to(h, on_face + (target - on_face) * min(1.0, k / 10))
        s, info = st.step(s, hand.control(s.t + st.dt))
        assert info.converged
    point = w @ s.x[nodes]
    assert np.abs(point - target).max() <= 1e-9
    assert np.abs(s.x[nodes] - point - rel).max() <= 1e-9  # the face moved rigidly with the gripper
    free = np.setdiff1d(np.arange(model.node_count), nodes)
    assert s.x[free, 2].min() < target[2] - 0.2  # the rest hangs below the grasp
    # the grasp carries the sheet's weight (the force of the held face; ρ = δ by default)
    g = -st.predictor.gravity[:, 2].sum()
    assert hand.grasp_force(info, h)[2] == pytest.approx(g, rel=0.05)


def test_grasp_weights_are_checked():
    hand = GraspController(4)
    x = np.zeros((4, 3))
    with pytest.raises(ValueError, match="weights must be one per distinct node"):
        hand.grasp(x, nodes=[0, 1], weights=[0.5, 0.6])
    with pytest.raises(ValueError, match="weights must be one per distinct node"):
        hand.grasp(x, nodes=[0, 0], weights=[0.5, 0.5])
    with pytest.raises(ValueError, match="weights go with nodes"):
        hand.grasp(x, point=(0, 0, 0), weights=[1.0])
    h = hand.grasp(x + [[0, 0, 0], [1, 0, 0], [0, 0, 0], [0, 0, 0]], nodes=[1, 0], weights=[0.25, 0.75])
    assert np.allclose(hand.grasp_point(h), [0.25, 0.0, 0.0])  # weights follow their nodes
    hand.move_to(h, (1.0, 1.0, 1.0))
    assert np.allclose(hand.grasp_point(h), [1.0, 1.0, 1.0])


def test_a_regrasp_holds_the_cloth_at_its_new_target():
    mesh, corners, mat = _sheet(alpha=1.0)
    model = ModelBuilder().set_cloth(mesh, mat).finalize()
    st = Stepper(model, dt=0.01)
    s = model.initial_state()
    hand = GraspController(model.node_count)
    h = hand.grasp(s.x, nodes=corners)
    for _ in range(10):
        s, info = st.step(s, hand.control(s.t + st.dt))
    hand.release(h)
    for _ in range(5):
        s, info = st.step(s, hand.control(s.t + st.dt))
    centre = s.x.mean(axis=0)
    h2 = hand.grasp(s.x, point=centre)
    node = hand.nodes[0]
    assert node == nodes_near(s.x, centre)[0]
    target = s.x[node] + np.array([0.0, 0.0, 0.05])
    for k in range(1, 6):
        hand.move_to(h2, s.x[node] + (target - s.x[node]) / (6 - k))
        s, info = st.step(s, hand.control(s.t + st.dt))
        assert info.converged
    assert np.abs(s.x[node] - target).max() <= 1e-9
    free = np.setdiff1d(np.arange(model.node_count), [node])
    assert s.x[free, 2].min() < target[2] - 0.05  # hanging from the new grasp


def test_grasp_forces_of_a_sheet_hanging_at_rest_carry_its_weight():
    mesh, corners, mat = _sheet(alpha=3.0)  # heavy damping: at rest within 6 s
    model = ModelBuilder().set_cloth(mesh, mat).add_grasp(corners[:1], name="left") \
        .add_grasp(corners[1:], name="right").finalize()
    st = Stepper(model, dt=0.01)
    s = model.initial_state()
    for _ in range(600):
        s, info = st.step(s)
    assert np.abs(s.v).max() < 1e-6
    weight = -st.predictor.gravity.sum(axis=0)
    F = info.grasp_forces
    assert F.shape == (2, 3)
    assert np.abs(F.sum(axis=0) - weight).max() <= 0.01 * weight[2]
    assert F[0, 2] == pytest.approx(F[1, 2], rel=0.01)  # symmetric sheet
    # the tension between the grippers is indeterminate for an inextensible sheet: not reported
    assert np.abs(F[:, 0]).max() <= 1e-6 * weight[2]


def test_a_grasp_that_starts_later_holds_its_node_where_it_was():
    cfg = {"name": "late", "description": "x",
           "cloth": {"mesh": {"generator": "rectangle", "width": 0.4, "height": 0.4, "nx": 6, "ny": 6,
                              "element": "quad", "plane": "xy"},
                     "placement": {"translate": [0.0, 0.0, 1.0]}, "fabric": "light-cotton"},
           "grasps": [{"name": "late", "nodes": {"nearest": [[0.2, 0.2, 1.0]]}, "start": 0.1, "end": 0.2,
                       "trajectory": {"type": "waypoints", "times": [0.1, 0.2], "points": [[0, 0, 0], [0, 0, 0.02]]}}],
           "simulation": {"dt": 0.01, "duration": 0.3}, "output": {"video": "none"}}
    sc = build_scene(config_from_dict(cfg))
    st, s = sc.stepper, sc.initial_state
    node = int(sc.model.grasp_nodes[0])
    path = []
    while s.t < 0.3 - 1e-9:
        before = s.x[node].copy()
        s, info = st.step(s)
        path.append((s.t, before, s.x[node].copy(), info.grasp_forces.shape[0]))
    falling = [p for p in path if p[0] < 0.1 - 1e-9]
    assert all(p[3] == 0 for p in falling) and falling[-1][2][2] < 1.0 - 0.01  # free: it fell
    anchor = falling[-1][2]
    held = [p for p in path if 0.1 - 1e-9 <= p[0] < 0.2 - 1e-9]
    for t, _, x, count in held:
        assert count == 1
        assert np.abs(x - (anchor + np.array([0, 0, 0.2 * (t - 0.1)]))).max() <= 1e-12
    assert path[-1][3] == 0 and path[-1][2][2] < held[-1][2][2]  # released at 0.2 s: falls again


def test_runs_with_changing_grasps_resume_bit_identically(tmp_path):
    mesh, corners, mat = _sheet(alpha=0.5)
    model = ModelBuilder().set_cloth(mesh, mat).add_grasp(corners[:1], end=0.08) \
        .add_grasp(corners[1:], start=0.04).finalize()
    st = Stepper(model, dt=0.01)
    s = model.initial_state()
    states = []
    for _ in range(12):
        s, _ = st.step(s)
        states.append(s)
    saved = states[5].save(tmp_path / "s.npz")
    r = State.load(saved)
    assert np.array_equal(r.grasp_anchors, states[5].grasp_anchors, equal_nan=True)
    fresh = Stepper(model, dt=0.01)
    for k in range(6, 12):
        r, _ = fresh.step(r)
        assert np.array_equal(r.x, states[k].x)


def test_grasp_variants_share_the_model_and_are_kept():
    mesh, corners, mat = _sheet()
    model = ModelBuilder().set_cloth(mesh, mat).add_grasp(corners).finalize()
    assert model.with_grasped_nodes(corners) is model
    a = model.with_grasped_nodes(corners[:1])
    assert a is model.with_grasped_nodes(np.array(corners[:1]))
    assert a.with_grasped_nodes(corners) is model
    assert a.constraints is model.constraints and a.stretch_limits is model.stretch_limits
    assert a.inverse_masses[corners[1]] > 0 and model.inverse_masses[corners[1]] == 0


@pytest.mark.parametrize("control, message", [
    (Control(0.01, np.array([[0.0, np.nan, 1.0]]), np.array([3])), "finite"),
    (Control(0.01, np.zeros((2, 3)), np.array([3])), "shape"),
    (Control(0.01, np.zeros((1, 3)), np.array([99])), "outside"),
    (Control(0.01, np.zeros((2, 3)), np.array([3, 3])), "twice"),
    (Control(0.01, np.zeros((1, 3)), np.array([1.5])), "node indices"),
])
def test_bad_controls_get_named_errors(control, message):
    mesh, corners, mat = _sheet()
    model = ModelBuilder().set_cloth(mesh, mat).finalize()
    with pytest.raises(ValueError, match=message):
        Stepper(model, dt=0.01).step(model.initial_state(), control)


def test_grasp_controller_refuses_unknown_handles_and_taken_nodes():
    mesh, corners, mat = _sheet()
    x = mesh.vertices
    hand = GraspController(x.shape[0])
    h = hand.grasp(x, nodes=corners)
    with pytest.raises(ValueError, match="already held"):
        hand.grasp(x, point=x[corners[0]])
    with pytest.raises(ValueError, match="no open grasp"):
        hand.release(h + 1)
    with pytest.raises(ValueError, match="finite"):
        hand.move_to(h, (0.0, np.inf, 0.0))
    assert len(nodes_near(x, x[corners[0]], radius=0.08)) == 3  # the corner and its two neighbours
    hand.release(h)
    assert hand.control(0.1).grasp_nodes.size == 0
