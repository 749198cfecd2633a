"""Membrane relaxation along the constraint and contact set (isocloth.step.membrane_relaxation).

The relaxation stabilises the thesis' nodal rows (``constraint_model = "thesis-nodal"``); the
default stretch-limited model removes the element patterns it targets without any energy."""

import numpy as np
import pytest

from isocloth.contact.contacts import detect_contacts
from isocloth.contact.obstacles import ObstaclePlane, ObstaclePolyline
from isocloth.contact.obstacles.sphere import ObstacleSphere
from isocloth.mesh.generators import rectangle
from isocloth.model import Material, ModelBuilder
from isocloth.scenes.loader import SceneError, load_scene
from isocloth.solvers.projection import SolverProjection
from isocloth.state import State
from isocloth.step import Stepper
from isocloth.step.membrane_relaxation import MembraneRelaxation

K_M = 1000.0  # N/m
R_SPHERE = 0.1  # m


def _model(width=0.3, obstacle=None, k_m=K_M):
    b = ModelBuilder().set_cloth(rectangle(width, width, 7, 7, plane="xy"),
                                 Material(rho=0.1, membrane_stiffness=k_m), constraint_model="thesis-nodal")
    if obstacle is not None:
        b.add_obstacle(obstacle)
    return b.finalize()


def _residual(model, x):
    return model.constraints.relative_residual(model.constraints.value(x), model.active_rows)


def _on_sphere(model):
    """The flat 12 cm sheet lifted vertically onto the sphere |x| = R: stretched (arc > chord), so the
    membrane force pulls it into the sphere."""
    x = model.initial_positions.copy()
    x[:, 2] = np.sqrt(R_SPHERE ** 2 - x[:, 0] ** 2 - x[:, 1] ** 2)
    return x


def _crumpled(m):
    """The 30 cm sheet with 1 cm noise in 3-D, projected onto the rows: strained elements whose strain
    the rows' tangent space can change at first order (on a flat sheet it cannot: there the in-plane
    patterns are blocked by the linearised rows and only the row residual carries W)."""
    rng = np.random.default_rng(0)
    xs = m.initial_positions + 0.01 * rng.standard_normal((m.node_count, 3))
    return SolverProjection(tolerance=1e-8, max_iterations=200).solve(xs, m.inverse_masses, m.constraints,
                                                                      m.active_rows).x


def test_relaxation_lowers_the_membrane_energy_and_keeps_the_rows():
    m = _model()
    xp = _crumpled(m)
    W_p = m.membrane.energy(xp, K_M)
    assert W_p > 0.1  # J: the rows hold, the elements are strained (the patterns the rows cannot see)
    res = MembraneRelaxation().relax(m, xp, xp, 0.01, 0.01)
    assert res.accepted and res.reason == ""
    assert m.membrane.energy(res.x, K_M) < 0.1 * W_p  # measured 0.064 W_p with 4 sweeps
    assert _residual(m, res.x) <= 1e-3


def test_a_relaxation_that_raises_the_membrane_energy_is_rejected(monkeypatch):
    """Sweeps driven by −f_W (an ascent direction) raise W (0.52 → 4.7 J): the result is dropped and
    φ_p kept."""
    m = _model()
    xp = _crumpled(m)
    both = type(m.membrane).force_and_hessian_blocks

    def ascent(self, x, k):
        f, blocks = both(self, x, k)
        return -f, blocks

    monkeypatch.setattr(type(m.membrane), "force_and_hessian_blocks", ascent)
    res = MembraneRelaxation().relax(m, xp, xp, 0.01, 0.01)
    assert not res.accepted and "membrane energy rose" in res.reason
    assert res.x is xp


def test_rigid_motions_are_not_moved():
    m = _model()
    c, s = np.cos(0.3), np.sin(0.3)
    Q = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]) @ np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    x = m.initial_positions @ Q.T + np.array([0.1, 0.2, 0.3])
    xr = MembraneRelaxation().relax(m, x, x, 0.01, 0.01).x
    np.testing.assert_allclose(xr, x, rtol=0, atol=1e-12)


def test_relaxation_keeps_obstacle_contacts():
    ms = _model(0.12, ObstacleSphere(center=(0.0, 0.0, 0.0), radius=R_SPHERE))
    x = _on_sphere(ms)
    res = MembraneRelaxation().relax(ms, x, x, 0.01, 0.01)
    assert res.accepted
    xr = res.x
    assert (np.linalg.norm(xr, axis=1) - R_SPHERE).min() >= -1e-4  # ε1
    assert ms.membrane.energy(xr, K_M) < 0.01 * ms.membrane.energy(x, K_M)
    # without the sphere the same relaxation pulls the sheet 1 cm into where the sphere is
    free = _model(0.12)
    xf = MembraneRelaxation().relax(free, x, x, 0.01, 0.01).x
    assert (np.linalg.norm(xf, axis=1) - R_SPHERE).min() < -5e-3


def test_a_result_that_misses_the_tolerance_is_rejected():
    ms = _model(0.12, ObstacleSphere(center=(0.0, 0.0, 0.0), radius=R_SPHERE))
    x = _on_sphere(ms)
    res = MembraneRelaxation(tolerance=1e-14, max_restore=1).relax(ms, x, x, 0.01, 0.01)
    assert not res.accepted and "tolerance" in res.reason
    assert res.x is x  # the projection's positions are kept
    # through the stepper: the step keeps the projection, says so, and still converges
    st = Stepper(ms, dt=0.01, membrane_relaxation=MembraneRelaxation(tolerance=1e-14, max_restore=1))
    new, info = st.step(State(x, np.zeros_like(x), 0.0, 0))
    assert info.converged and not info.membrane_relaxed
    assert any(w.startswith("membrane relaxation rejected") for w in info.warnings)


def _strained_flat_sheet(model):
    """Rest sheet at z = 0 with an in-plane pattern, projected onto the rows (they hold to 1e-6, the
    elements stay strained)."""
    rng = np.random.default_rng(0)
    xs = model.initial_positions.copy()
    xs[:, :2] += 0.004 * rng.standard_normal((model.node_count, 2)) * (model.inverse_masses > 0)[:, None]
    return SolverProjection(tolerance=1e-6).solve(xs, model.inverse_masses, model.constraints, model.active_rows).x


@pytest.mark.parametrize("mu", [0.0, 2.0])
def test_friction_holds_contact_nodes_in_the_working_set(mu):
    """A strained sheet lying on a plane: with μ > 0 the nodes of the projection's working-set
    contacts stay put (friction holds them; without that a strained tablecloth on a μ = 2 table
    crept 6.9 mm in 0.8 s), with μ = 0 they slide and the strain relaxes."""
    m = _model(obstacle=ObstaclePlane(mu=mu))
    xp = _strained_flat_sheet(m)
    keys = detect_contacts(m.obstacles, xp, 0.01, 0.01).keys()
    assert keys.size == m.node_count  # every node lies on the plane
    res = MembraneRelaxation().relax(m, xp, xp, 0.01, 0.01, active_keys=keys)
    assert res.accepted
    W_p, W_r = m.membrane.energy(xp, K_M), m.membrane.energy(res.x, K_M)
    if mu > 0:
        assert np.abs(res.x - xp).max() == 0.0 and W_r == W_p
    else:
        assert W_r < 1e-2 * W_p and np.abs(res.x[:, 2]).max() <= 1e-4


def test_grasped_nodes_do_not_move():
    b = ModelBuilder().set_cloth(rectangle(0.3, 0.3, 7, 7, plane="xy"), Material(rho=0.1, membrane_stiffness=K_M), constraint_model="thesis-nodal")
    b.add_grasp([0, 6])
    m = b.finalize()
    xp = _strained_flat_sheet(m)
    res = MembraneRelaxation().relax(m, xp, xp, 0.01, 0.01)
    assert res.accepted and np.abs(res.x - xp).max() > 1e-6
    np.testing.assert_array_equal(res.x[[0, 6]], xp[[0, 6]])


def test_a_crossing_motion_is_rejected():
    """The ω = 0 check on φⁿ → φ: a sheet moved up through a stick 1 cm above it is rejected, the same
    sheet moved up half way is not."""
    stick = ObstaclePolyline.stick([0.0, 1.0], [[-0.2, 0.01, 0.01], [-0.2, 0.01, 0.01]],
                                   [[0.2, 0.01, 0.01], [0.2, 0.01, 0.01]], radius=0.002)
    m = ModelBuilder().set_cloth(rectangle(0.3, 0.3, 7, 7, plane="xy"),
                                 Material(rho=0.1, membrane_stiffness=K_M), constraint_model="thesis-nodal").add_obstacle(stick).finalize()
    x0 = m.initial_positions
    up = np.array([0.0, 0.0, 1.0])
    assert "cross" in MembraneRelaxation._crossing(m, x0, x0 + 0.02 * up, 0.01, 0.01)
    assert MembraneRelaxation._crossing(m, x0, x0 + 0.004 * up, 0.01, 0.01) == ""


def test_bad_settings_raise():
    with pytest.raises(ValueError, match="sweeps"):
        MembraneRelaxation(sweeps=0)
    with pytest.raises(ValueError, match="max_restore"):
        MembraneRelaxation(max_restore=0)
    with pytest.raises(ValueError, match="margin"):
        MembraneRelaxation(margin=0.0)
    m0 = _model(k_m=0.0)
    x = m0.initial_positions
    with pytest.raises(ValueError, match="membrane_stiffness"):
        MembraneRelaxation().relax(m0, x, x, 0.01, 0.01)


def test_stepper_relaxes_after_the_projection_and_the_velocity_includes_it():
    ms = _model(0.12, ObstacleSphere(center=(0.0, 0.0, 0.0), radius=R_SPHERE))
    x = _on_sphere(ms)
    state = State(x, np.zeros_like(x), 0.0, 0)
    st = Stepper(ms, dt=0.01, membrane_relaxation=MembraneRelaxation())
    new, info = st.step(state)
    assert info.converged and info.membrane_relaxed
    np.testing.assert_allclose(new.v, (new.x - x) / 0.01, rtol=0, atol=1e-12)
    assert (np.linalg.norm(new.x, axis=1) - R_SPHERE).min() >= -1e-4
    assert _residual(ms, new.x) <= 1e-3
    assert info.residual == _residual(ms, new.x)  # reported for the returned positions
    # the predictor no longer takes the membrane force: it predicts what the k_m = 0 model does
    m0 = _model(0.12, ObstacleSphere(center=(0.0, 0.0, 0.0), radius=R_SPHERE), k_m=0.0)
    ctl = ms.control(0.01)
    np.testing.assert_array_equal(st.predict(state, ctl, 0.01), Stepper(m0, dt=0.01).predict(state, ctl, 0.01))
    assert np.abs(Stepper(ms, dt=0.01).predict(state, ctl, 0.01) - st.predict(state, ctl, 0.01)).max() > 1e-4


def test_stepper_ignores_the_relaxation_without_membrane_stiffness():
    m0 = _model(k_m=0.0)
    st = Stepper(m0, dt=0.01, membrane_relaxation=MembraneRelaxation())
    assert st.membrane_relaxation is None
    _, info = st.step(m0.initial_state())
    assert not info.membrane_relaxed


def test_scene_option_selects_the_coupling():
    tw = load_scene("twist", ["output.video='none'"])
    assert tw.stepper.membrane_relaxation is not None and tw.stepper.membrane_relaxation.sweeps == 1
    assert load_scene("hit-a2", ["output.video='none'"]).stepper.membrane_relaxation is None
    with pytest.raises(SceneError, match="membrane_coupling"):
        load_scene("twist", ["simulation.membrane_coupling='solver'"])
    with pytest.raises(SceneError, match="membrane_stiffness > 0"):
        load_scene("twist", ["cloth.membrane_stiffness=0"])
