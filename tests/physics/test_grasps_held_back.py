"""Grasps that pull the inextensible cloth further than it reaches: the step holds the grasped nodes
back (the cloth stays taut, ``StepInfo.grasp_lag`` says how far from their targets) instead of
stalling the projection, and the grasps follow their targets again once those are within reach."""

import numpy as np
import pytest

from isocloth.control import GraspController
from isocloth.mesh.generators import rectangle
from isocloth.model import Material, ModelBuilder
from isocloth.step import Stepper

WIDTH = 0.5


def _hanging():
    """A 0.5 m square sheet of 8 x 8 nodes hanging in the x-z plane and its two top corners."""
    mesh = rectangle(WIDTH, WIDTH, 8, 8, plane="xz", center=(0.0, 0.0, 1.0))
    z = mesh.vertices[:, 2]
    top = np.flatnonzero(np.isclose(z, z.max()))
    model = ModelBuilder().set_cloth(mesh, Material(alpha=1.0)).finalize()
    return model, top[0], top[-1]


def test_grasps_pulled_apart_beyond_the_cloth_hold_it_taut_and_follow_again_when_they_return():
    model, a, b = _hanging()
    st = Stepper(model, dt=0.01)
    s = model.initial_state()
    hand = GraspController(model.node_count)
    left, right = hand.grasp(s.x, nodes=[a]), hand.grasp(s.x, nodes=[b])
    lags = []
    for k in range(40):  # 0.2 m/s each way: the targets end 16 cm further apart than the cloth is wide
        hand.move_by(left, (-0.002, 0.0, 0.0))
        hand.move_by(right, (0.002, 0.0, 0.0))
        s, info = st.step(s, hand.control(s.t + st.dt))
        assert info.converged, info.warnings
        span = float(np.linalg.norm(s.x[a] - s.x[b]))
        assert span <= WIDTH * 1.02  # the cloth does not stretch to follow
        targets = hand.control(s.t).grasp_targets
        reach = float(np.linalg.norm(targets[0] - targets[1]))
        assert info.grasp_lag == pytest.approx(max(hand.lag(left, s.x), hand.lag(right, s.x)), abs=1e-12)
        if info.grasp_lag > 0:  # held back on the line between their targets, equally far from them
            assert span + 2 * info.grasp_lag == pytest.approx(reach, abs=2e-3)
            assert hand.lag(left, s.x) == pytest.approx(hand.lag(right, s.x), abs=2e-3)
            assert info.warnings[0].startswith("grasps held back")
        lags.append(info.grasp_lag)
    assert lags[-1] > 0.06  # ~8 cm behind at the end (the top edge starts straight: no slack to take up)
    assert np.all(np.diff(lags[-10:]) > 0)  # the lag grows with the targets' excess
    for k in range(45):  # back: the targets come within reach and the grasps follow them again
        hand.move_by(left, (0.002, 0.0, 0.0))
        hand.move_by(right, (-0.002, 0.0, 0.0))
        s, info = st.step(s, hand.control(s.t + st.dt))
        assert info.converged
    assert info.grasp_lag == 0.0 and hand.lag(left, s.x) <= 1e-9 and hand.lag(right, s.x) <= 1e-9


def test_a_step_landing_far_beyond_the_previous_positions_counts_as_unconverged():
    from isocloth.step.diagnostics import StepInfo

    model, a, b = _hanging()
    st = Stepper(model, dt=0.01)
    x_prev = model.initial_positions
    x0 = x_prev + [0.0, 0.0, -0.001]  # predicted: 1 mm lower
    near, far = x0.copy(), x0.copy()
    near[5] += [0.0, 0.0, 0.0015]  # projected 1.5 mm back: within reach of the previous positions
    far[5] += [0.0, 0.3, 0.0]  # one node thrown 30 cm sideways
    for x, ok in ((near, True), (far, False)):
        info = StepInfo(t=0.01, iterations=3, residual=0.0, converged=True)
        st._check_jump(model, x_prev, np.zeros(3), x0, x, info, 0.0)
        assert info.converged is ok and bool(info.warnings) is not ok
    assert "jumped" in info.warnings[0]


def test_a_sheet_at_rest_or_leaving_a_nudged_state_is_not_taken_for_a_jump():
    mesh = rectangle(0.3, 0.3, 6, 6, plane="xy", center=(0.0, 0.0, 1.0))
    corners = np.flatnonzero(np.isclose(mesh.vertices[:, 1], mesh.vertices[:, 1].max()))[[0, -1]]
    model = ModelBuilder().set_cloth(mesh, Material(gravity=0.0)).add_grasp(corners).finalize()
    st = Stepper(model, dt=0.01)
    s = model.initial_state()
    for _ in range(60):  # nothing moves: distances of round-off size, no jump
        s, info = st.step(s)
        assert info.converged and not info.warnings
    s.x[14] += [0.0, 0.0, 0.02]  # a state that breaks its constraints: no reference for the check
    s, info = st.step(s)
    assert not any("jumped" in w for w in info.warnings)
