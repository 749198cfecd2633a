"""Failed contact steps are split into substeps, and steps whose constraints cannot be met raise
(Stepper.max_substep_depth, Stepper.divergence_residual)."""

import numpy as np
import pytest

from isocloth.contact.obstacles.plane import ObstaclePlane
from isocloth.control import Control, TrajectoryWaypoints
from isocloth.mesh.generators import rectangle
from isocloth.model import Material, ModelBuilder
from isocloth.solvers.result import SolveStatus
from isocloth.step import Stepper
from isocloth.step.contact_projection import ContactProjection
from isocloth.step.stepper import SimulationDiverged


def _model():
    """A 5×5 sheet held at two corners that move, 1 cm above a floor (μ = 0.3)."""
    mesh = rectangle(0.2, 0.2, 5, 5).transformed(np.eye(3), (0.0, 0.0, 0.01))
    corners = np.flatnonzero(np.isclose(mesh.vertices[:, 1], mesh.vertices[:, 1].max()))[[0, -1]]
    traj = TrajectoryWaypoints([0.0, 0.1], [[0, 0, 0], [0.05, 0.0, 0.05]])
    return (ModelBuilder().set_cloth(mesh, Material(rho=0.2)).add_grasp(corners, traj)
            .add_obstacle(ObstaclePlane(point=(0, 0, 0), normal=(0, 0, 1), mu=0.3)).finalize())


class _FailsAbove(ContactProjection):
    """A contact solver that reports failure for steps longer than ``limit`` (as a cycling QP
    iteration would), with its real iterate."""

    def __init__(self, limit, residual=None):
        super().__init__()
        self.limit, self.fake_residual, self.calls = limit, residual, []

    def solve(self, model, x_prev, x0, t, dt, warm_keys=None, held=None):
        res, stats = super().solve(model, x_prev, x0, t, dt, warm_keys, held)
        self.calls.append(dt)
        if dt > self.limit * (1 + 1e-9):
            res.status = SolveStatus.MAX_ITERATIONS
            res.residual = self.fake_residual if self.fake_residual is not None else 10 * self.tolerance
        return res, stats



def _assert_same_as_short_steps(model, state, dt, k):
    """``state`` equals, bit for bit, k plain steps of dt/k from the initial state."""
    ref = Stepper(model, dt=dt / k)
    r = model.initial_state()
    for _ in range(k):
        r, _ = ref.step(r)
    np.testing.assert_array_equal(state.x, r.x)
    np.testing.assert_array_equal(state.v, r.v)


def test_failed_step_is_redone_as_substeps_that_match_short_steps():
    model = _model()
    dt = 0.01
    split = Stepper(model, dt=dt, contact_solver=_FailsAbove(dt / 4))
    s, info = split.step(model.initial_state())
    # dt fails, dt/2 fails, dt/4 converges: four quarter steps, state at t + dt, one step counted
    assert info.converged and info.substeps == 4 and not split.contact_solver.calls[0] < dt
    assert s.t == pytest.approx(dt) and s.step_index == 1
    assert any("split into 4 substeps" in w for w in info.warnings)
    # the same as four steps of dt/4 with the schedule's targets
    _assert_same_as_short_steps(model, s, dt, 4)
    g = model.grasp_nodes
    np.testing.assert_array_equal(s.x[g], model.control(dt).grasp_targets)  # grasps exact


def test_substeps_with_a_caller_control_interpolate_the_targets():
    model = _model()
    st = Stepper(model, dt=0.01, contact_solver=_FailsAbove(0.005))
    s0 = model.initial_state()
    ctl = model.control(0.01)
    s, info = st.step(s0, ctl)
    assert info.substeps == 2 and info.converged
    np.testing.assert_array_equal(s.x[model.grasp_nodes], ctl.grasp_targets)


def test_disabled_substeps_keep_the_failed_step_with_its_warning():
    model = _model()
    st = Stepper(model, dt=0.01, contact_solver=_FailsAbove(0.001), max_substep_depth=0)
    s, info = st.step(model.initial_state())
    # the corners move rigidly (no pull apart): no retry with the grasped nodes held back
    assert not info.converged and info.substeps == 1 and len(st.contact_solver.calls) == 1
    assert any("max_iterations" in w for w in info.warnings)


def test_unmeetable_constraints_raise_instead_of_returning_a_broken_state():
    model = _model()
    st = Stepper(model, dt=0.01, contact_solver=_FailsAbove(0.0, residual=3.0), max_substep_depth=1)
    with pytest.raises(SimulationDiverged, match=r"constraint residual 3 > 0.5 at t = 0.01 s"):
        st.step(model.initial_state())
    st = Stepper(model, dt=0.01, contact_solver=_FailsAbove(0.0, residual=3.0), max_substep_depth=0, substeps=2)
    with pytest.raises(SimulationDiverged, match=r"residual 3 > 0.5 at sub-step 1 of 2 \(t = 0.005 s\)"):
        st.step(model.initial_state())
    assert len(st.contact_solver.calls) == 1  # stopped at the first sub-step
    with pytest.raises(ValueError, match="max_substep_depth"):
        Stepper(model, max_substep_depth=-1)
    with pytest.raises(ValueError, match="divergence_residual"):
        Stepper(model, divergence_residual=0.0)


def test_sheet_thrown_through_another_at_10_m_s_is_stopped_by_self_collisions():
    """Issue 4: a node–face / edge–edge pair moving through each other within one step at 10 m/s is
    detected and resolved by the full step. A free 5×5 sheet 4 cm above a held one moves down at
    10 m/s (10 cm per 10 ms step, so it would be 6 cm below after one step): it must stop on the
    held sheet, τ0 above it, with no intersecting face pair and no crossing."""
    from isocloth.contact.intersection import face_intersections
    from isocloth.mesh.mesh import Mesh

    a = rectangle(0.2, 0.2, 5, 5)
    b = a.transformed(np.eye(3), (0.013, 0.017, 0.04))
    n = a.node_count
    mesh = Mesh(np.vstack([a.vertices, b.vertices]), quads=np.vstack([a.quads, a.quads + n]))
    v0 = np.zeros((2 * n, 3))
    v0[n:, 2] = -10.0
    tau = 0.004
    model = (ModelBuilder().set_cloth(mesh, Material(rho=0.2, gravity=0.0), initial_velocity=v0)
             .add_grasp(np.arange(n)).set_self_collision(thickness=tau, mu_cloth=0.0).finalize())
    st = Stepper(model, dt=0.01)
    s = model.initial_state()
    for _ in range(3):
        prev = s
        s, info = st.step(s)
        assert info.converged and info.crossings == 0
        assert model.collision_detector.crossings(prev.x, s.x).count == 0
    assert info.collision_rows > 0
    assert face_intersections(s.x, quads=mesh.quads).shape[0] == 0
    gap = s.x[n:, 2] - s.x[:n, 2]  # the free sheet rests on the held one (same x-y layout, offset)
    assert gap.min() >= 0.9 * tau and gap.max() < 3 * tau
    assert np.abs(s.v[n:, 2]).max() < 0.5  # stopped (inelastic), not bounced back at 10 m/s


def test_area_error_jump_splits_a_converged_step():
    """max_area_error_jump: a converged contact step whose mean element area error (eq. 2.24) grows
    by more than the threshold is redone as half steps, down to the depth limit, and equals the
    short steps; a threshold above the growth leaves the step whole."""
    model = _model()
    dt = 0.01
    whole = Stepper(model, dt=dt, max_area_error_jump=0.5)
    _, info = whole.step(model.initial_state())
    assert info.converged and info.substeps == 1 and 0 < info.area_error_mean < 0.5
    # from the rest shape (error 0) every step's error grows, so a tiny threshold splits to dt/8
    split = Stepper(model, dt=dt, max_area_error_jump=1e-12, max_substep_depth=3)
    s, info = split.step(model.initial_state())
    assert info.converged and info.substeps == 8 and s.t == pytest.approx(dt)
    assert any("area error jumped" in w for w in info.warnings)
    _assert_same_as_short_steps(model, s, dt, 8)


@pytest.mark.parametrize("bad", [0.0, -0.01])
def test_area_error_jump_must_be_positive(bad):
    with pytest.raises(ValueError, match="max_area_error_jump"):
        Stepper(_model(), dt=0.01, max_area_error_jump=bad)


# ------------------------------------------------------------------ fixed sub-steps (Stepper.substeps)
def test_fixed_substeps_are_short_steps_under_one_step():
    """``substeps = k``: one step of dt is k steps of dt/k with the schedule's targets (bit for bit
    while k·(dt/k) sums exactly), one step counted, state at t + dt, grasps exact."""
    model = _model()
    dt, k = 0.02, 2
    st = Stepper(model, dt=dt, substeps=k)
    s, info = st.step(model.initial_state())
    assert s.t == dt and s.step_index == 1 and info.t == dt
    assert info.substeps == k and info.converged
    _assert_same_as_short_steps(model, s, dt, k)
    np.testing.assert_array_equal(s.x[model.grasp_nodes], model.control(dt).grasp_targets)
    # counts are sums over the sub-steps
    ref = Stepper(model, dt=dt / k)
    r, iters = model.initial_state(), 0
    for _ in range(k):
        r, ri = ref.step(r)
        iters += ri.iterations
    assert info.iterations == iters


def test_fixed_substeps_with_a_caller_control_follow_the_line_to_the_targets():
    model = _model()
    g = model.grasp_nodes
    s0 = model.initial_state()
    target = s0.x[g] + np.array([0.0, 0.0, 0.003])  # lift the held corners 3 mm
    s, info = Stepper(model, dt=0.009, substeps=3).step(s0, Control(0.009, target))
    np.testing.assert_array_equal(s.x[g], target)
    # the same as three steps with targets 1/3, 2/3 and all of the way
    ref, r = Stepper(model, dt=0.003), s0
    for i in (1, 2, 3):
        r, _ = ref.step(r, Control(0.003 * i, s0.x[g] + (i / 3) * (target - s0.x[g])))
    np.testing.assert_allclose(s.x, r.x, rtol=0, atol=1e-15)
    assert info.substeps == 3


@pytest.mark.parametrize("bad", [0, -2, 1.5, True])
def test_substeps_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="substeps must be an integer >= 1"):
        Stepper(_model(), substeps=bad)


def test_substeps_cut_the_factorizations_of_a_large_falling_sheet(sheet_660):
    """Why sub-steps exist: on a large sheet the kept factorization of the projection (chord steps)
    fits the next, shorter step, so four sub-steps of 1/240 s need far fewer factorizations of
    ∇C M⁻¹ ∇Cᵀ per 1/60 s than one step (measured on the first 10 frames of the 20×33 benchmark
    sheet: 77 vs 10; the speed-up itself is in benchmarks/bench_realtime.py)."""
    from isocloth.scenes.loader import build_scene, config_from_dict

    counts = {}
    for k in (1, 4):
        sc = build_scene(config_from_dict(sheet_660(k)))
        assert sc.stepper.substeps == k and sc.model.node_count == 660
        s, fact = sc.initial_state, 0
        for _ in range(10):
            s, info = sc.stepper.step(s)
            assert info.converged and info.residual <= 1e-3 and info.substeps == k
            fact += info.factorizations
        assert s.t == pytest.approx(10 / 60, abs=1e-12)
        counts[k] = fact
    assert counts[4] * 4 <= counts[1], counts
