"""Grasp trajectories: waypoints, sinusoid, sampled arrays, rotations, callables."""

import numpy as np
import pytest

from isocloth.control import (ControlSchedule, Grasp, TrajectoryCallable, TrajectoryRotation, TrajectorySampled,
                              TrajectorySinusoid, TrajectoryWaypoints)

X0 = np.array([[0.0, 0.0, 1.0], [0.5, 0.0, 1.0]])


def test_sinusoid_starts_at_rest_and_has_the_wam_amplitude():
    tr = TrajectorySinusoid((0.075, 0.0, 0.0), 0.6)
    assert np.allclose(tr.displacement(0.0, X0), 0.0)
    eps = 1e-6
    v0 = (tr.displacement(eps, X0) - tr.displacement(0.0, X0)) / eps
    assert np.abs(v0).max() < 1e-4  # starts from rest
    half = tr.displacement(1 / 1.2, X0)  # half a period: x = A cos(π) − A = −2A
    assert half[0, 0] == pytest.approx(-0.15)


def test_waypoints_interpolate_and_hold():
    tr = TrajectoryWaypoints((0.0, 1.0, 2.0), ((0, 0, 0), (0, 0, 0.2), (0.1, 0, 0.2)))
    assert tr.displacement(0.5, X0)[0] == pytest.approx([0, 0, 0.1])
    assert tr.displacement(5.0, X0)[1] == pytest.approx([0.1, 0, 0.2])
    smooth = TrajectoryWaypoints((0.0, 1.0), ((0, 0, 0), (0, 0, 1.0)), "smoothstep")
    assert smooth.displacement(0.25, X0)[0, 2] == pytest.approx(3 * 0.25 ** 2 - 2 * 0.25 ** 3)
    cubic = TrajectoryWaypoints((0.0, 1.0, 2.0), ((0, 0, 0), (0, 0, 1.0), (0, 0, 0)), "cubic")
    assert cubic.displacement(1.0, X0)[0, 2] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="strictly increasing"):
        TrajectoryWaypoints((0.0, 0.0), ((0, 0, 0), (0, 0, 1)))


def test_sampled_array_interpolates_at_its_rate_and_rejects_nan():
    samples = np.zeros((11, 3))
    samples[:, 0] = np.arange(11) * 0.01
    tr = TrajectorySampled(100.0, samples)
    assert tr.displacement(0.055, X0)[0, 0] == pytest.approx(0.055)
    samples[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        TrajectorySampled(100.0, samples)


@pytest.mark.parametrize("times, points, message", [
    ((0.0, 1.0), ((0, 0, 0), (0, 0, np.nan)),
     r"points must be finite .*waypoint 1 \(at t = 1 s\) is \[0.0, 0.0, nan\]"),
    ((0.0, 1.0), ((np.inf, 0, 0), (0, 0, 1)), r"points must be finite .*waypoint 0 .* is \[inf, 0.0, 0.0\]"),
    ((0.0, np.nan), ((0, 0, 0), (0, 0, 1)), r"times must be finite .*waypoint 1 has time nan"),
    ((0.0, np.inf), ((0, 0, 0), (0, 0, 1)), r"times must be finite .*waypoint 1 has time inf"),
    ((0.0, 1.0), ((0, 0, 0), (0, 1)), r"times \(w,\) and points \(w, 3\) of numbers"),
])
def test_waypoints_refuse_nan_and_inf_at_construction(times, points, message):
    """NaN points and NaN/inf times used to be accepted; the step then failed with 'grasp_targets must be finite'."""
    with pytest.raises(ValueError, match=message):
        TrajectoryWaypoints(times, points)


@pytest.mark.parametrize("make, message", [
    (lambda: TrajectorySinusoid((0, 0, np.nan), 1.0), r"sinusoid amplitude .* finite .*entry 2 is nan"),
    (lambda: TrajectorySinusoid((0, 0, 0.1), np.inf), r"sinusoid frequency \[Hz\] must be a finite number"),
    (lambda: TrajectorySinusoid((0, 0, 0.1), 1.0, duration=-1.0), r"sinusoid duration \[s\] must be >= 0"),
    (lambda: TrajectoryRotation((0, 0, 0), (0, 0, 1.0), 1.0), r"rotation axis must be a direction of nonzero length"),
    (lambda: TrajectoryRotation((0, 0, 1), (0, np.nan, 1.0), 1.0), r"rotation center .* finite"),
    (lambda: TrajectoryRotation((0, 0, 1), (0, 0, 1.0), np.nan), r"angular_velocity .* finite"),
    (lambda: TrajectorySampled(np.inf, np.zeros((3, 3))), r"rate \[Hz\] must be a finite number"),
    (lambda: TrajectorySampled(np.nan, np.zeros((3, 3))), r"rate \[Hz\] must be a finite number"),
    (lambda: TrajectorySampled(10.0, np.zeros((3, 3)), start=np.nan), r"start \[s\] must be a finite number"),
])
def test_the_other_trajectories_refuse_non_finite_parameters(make, message):
    """A zero rotation axis, an infinite rate and NaN parameters used to give NaN targets at the first step."""
    with pytest.raises(ValueError, match=message):
        make()


def test_a_callable_trajectory_needs_a_function():
    with pytest.raises(TypeError, match="needs a function of time"):
        TrajectoryCallable(3.0)


def test_rotation_is_rigid_and_callable_is_checked():
    tr = TrajectoryRotation((0, 0, 1), (0, 0, 1.0), np.pi / 2)
    x = X0 + tr.displacement(1.0, X0)
    assert x[1] == pytest.approx([0.0, 0.5, 1.0])
    assert np.linalg.norm(x[1] - x[0]) == pytest.approx(0.5)
    assert TrajectoryCallable(lambda t: (t, 0, 0)).displacement(2.0, X0)[1, 0] == 2.0
    with pytest.raises(ValueError, match="non-finite"):
        TrajectoryCallable(lambda t: (np.nan, 0, 0)).displacement(0.1, X0)


def test_schedule_concatenates_grasps_in_order():
    sch = ControlSchedule((Grasp((3,), TrajectoryWaypoints((0.0, 1.0), ((0, 0, 0), (1, 0, 0)))),
                           Grasp((7,), TrajectorySinusoid((0, 0, 0.1), 1.0))), np.array([3, 7]), X0.copy())
    c = sch.at(1.0)
    assert c.grasp_targets[0] == pytest.approx([1.0, 0.0, 1.0])
    assert c.grasp_targets[1] == pytest.approx(X0[1])
