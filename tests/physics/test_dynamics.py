"""Analytic checks of the dynamics: free fall with virtual mass and damping, pendulum period scaling."""

import numpy as np
import pytest

from isocloth.control import TrajectoryFixed
from isocloth.mesh.generators import perturbed, rectangle
from isocloth.model import Material, ModelBuilder
from isocloth.step.stepper import Stepper


def test_free_fall_centroid_follows_the_damped_virtual_mass_recurrence(sim):
    """Constraints are translation invariant, so Σ m_i Δp_i = 0 in every projection: the centroid
    follows v_{n+1} = (ρ v_n − dt δ g)/(ρ + dt α) exactly (thesis eq. 2.19 with f_δ = −δMg)."""
    mat = Material(rho=0.2, delta=0.08, alpha=0.3)
    mesh = perturbed(rectangle(0.4, 0.3, 6, 5, element="triangle"), 0.01, seed=2)
    model = ModelBuilder().set_cloth(mesh, mat).finalize()
    dt, steps = 0.01, 400
    w = model.area_mass / model.area_mass.sum()
    s, infos, vz = sim(model, dt, steps, record=lambda s: w @ s.v[:, 2])
    v, expected = 0.0, []
    for _ in range(steps):
        v = (mat.rho * v - dt * mat.delta * mat.gravity) / (mat.rho + dt * mat.alpha)
        expected.append(v)
    np.testing.assert_allclose(vz, expected, rtol=1e-9, atol=1e-12)
    assert expected[-1] == pytest.approx(-mat.delta * mat.gravity / mat.alpha, rel=0.05)  # terminal δg/α
    assert all(i.residual <= 1e-3 for i in infos)


def _swing_period(delta, sim):
    mat = Material(rho=0.16, delta=delta, alpha=0.0)
    mesh = rectangle(0.3, 0.3, 5, 5, plane="xz")
    top = np.flatnonzero(np.isclose(mesh.vertices[:, 2], mesh.vertices[:, 2].max()))
    model = (ModelBuilder().set_cloth(mesh, mat, initial_velocity=(0.0, 0.05, 0.0))
             .add_grasp(top, TrajectoryFixed()).finalize())
    dt = 0.002
    T_guess = 2 * np.pi * np.sqrt(2 * 0.3 / (3 * 9.8 * delta / 0.16))
    steps = int(2.6 * T_guess / dt)
    w = model.area_mass / model.area_mass.sum()
    _, infos, y = sim(model, dt, steps, record=lambda s: w @ s.x[:, 1])
    y = np.array(y)
    t = dt * (1 + np.arange(y.size))
    # downward zero crossings of the mean sideways displacement, linearly interpolated
    idx = np.flatnonzero((y[:-1] > 0) & (y[1:] <= 0))
    tc = t[idx] + dt * y[idx] / (y[idx] - y[idx + 1])
    assert tc.size >= 2
    assert max(i.residual for i in infos) <= 1e-3
    return float(np.mean(np.diff(tc)))


def test_small_swing_period_scales_with_sqrt_rho_over_delta(sim):
    """With α = 0 the period scales as √(ρ/δ) (thesis §2.5.1): δ = ρ/4 doubles it."""
    T1 = _swing_period(0.16, sim)
    T4 = _swing_period(0.04, sim)
    assert T4 / T1 == pytest.approx(2.0, rel=0.03)
    # and it is a physical pendulum: rigid plate of height L swinging about its top edge
    assert T1 == pytest.approx(2 * np.pi * np.sqrt(2 * 0.3 / (3 * 9.8)), rel=0.05)


@pytest.mark.parametrize("dt", [0.0, -0.01, float("nan"), float("inf"), "ten ms"])
def test_a_step_that_is_not_a_finite_positive_time_is_refused(dt):
    """dt = 0 used to return NaN velocities flagged converged, dt < 0 ran time backwards."""
    model = ModelBuilder().set_cloth(rectangle(0.2, 0.2, 3, 3, plane="xy")).finalize()
    st = Stepper(model, dt=0.01)
    with pytest.raises(ValueError, match="dt must be"):
        st.step(model.initial_state(), dt=dt)
    with pytest.raises(ValueError, match="dt must be"):
        Stepper(model, dt=dt)


def test_a_nan_grasp_target_is_a_named_error():
    """It used to print LAPACK DLASCL messages and raise LinAlgError."""
    from isocloth.control import Control

    mesh = rectangle(0.2, 0.2, 3, 3, plane="xz")
    model = ModelBuilder().set_cloth(mesh).add_grasp([0, 2]).finalize()
    st = Stepper(model, dt=0.01)
    s = model.initial_state()
    targets = s.x[[0, 2]].copy()
    targets[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"grasp_targets must be finite .*row 1 \(grasped node 2\)"):
        st.step(s, Control(0.01, targets))


@pytest.mark.parametrize("field, bad", [("v", np.nan), ("x", np.inf)])
def test_a_non_finite_state_is_a_named_error_not_a_divergence(field, bad):
    mesh = rectangle(0.2, 0.2, 3, 3, plane="xz")
    model = ModelBuilder().set_cloth(mesh).add_grasp([0, 2]).finalize()
    st = Stepper(model, dt=0.01)
    s = model.initial_state()
    getattr(s, field)[4, 1] = bad
    with pytest.raises(ValueError, match=rf"state\.{field} is not finite at 1 node\(s\), e.g\. node 4"):
        st.step(s)
    s = model.initial_state()
    s.x = s.x[:5]
    with pytest.raises(ValueError, match=r"state\.x must have shape \(9, 3\)"):
        st.step(s)
