"""Baseline cloth models (mass-spring, Baraff–Witkin) and the model comparison (thesis Table 4.3)."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from isocloth.baselines import BaraffWitkinForces, MassSpringForces, make_stepper
from isocloth.control import TrajectorySinusoid
from isocloth.mesh.generators import rectangle
from isocloth.model import Material, ModelBuilder

MESH = rectangle(0.42, 0.594, 4, 5, plane="xy")


@pytest.mark.parametrize("forces", [MassSpringForces(MESH, 100.0, 0.3), BaraffWitkinForces(MESH, 100.0, 0.3)],
                         ids=["mass-spring", "baraff-witkin"])
def test_forces_are_minus_the_energy_gradient(forces):
    rng = np.random.default_rng(0)
    x0 = MESH.vertices
    f, K = forces.force_and_stiffness(x0)
    assert np.abs(f).max() < 1e-12 and forces.energy(x0) < 1e-20  # rest shape: no force
    R = Rotation.from_euler("xyz", [30, 40, 50], degrees=True).as_matrix()
    assert np.abs(forces.force_and_stiffness(x0 @ R.T + 1.0)[0]).max() < 1e-10  # rigid motion
    x = x0 + rng.normal(0, 0.02, x0.shape)
    f, K = forces.force_and_stiffness(x)
    h = 1e-6
    g = np.zeros_like(x)
    for i in range(x.shape[0]):
        for d in range(3):
            e = np.zeros_like(x)
            e[i, d] = h
            g[i, d] = (forces.energy(x + e) - forces.energy(x - e)) / (2 * h)
    assert np.abs(f + g).max() < 1e-6 * np.abs(g).max()
    Kd = K.toarray()
    assert np.allclose(Kd, Kd.T) and np.linalg.eigvalsh(Kd).min() > -1e-9 * np.abs(Kd).max()
    # under uniform stretch the stiffness is the exact Hessian
    xs = 1.1 * x0
    fs, Ks = forces.force_and_stiffness(xs)
    fd = np.zeros((x.size, x.size))
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = h
        fd[:, k] = -(forces.force_and_stiffness(xs + e.reshape(-1, 3))[0] - fs).ravel() / h
    assert np.abs(Ks.toarray() - fd).max() < 1e-5 * np.abs(fd).max()


@pytest.mark.parametrize("kind", ["mass-spring", "baraff-witkin"])
def test_implicit_stepper_free_fall_and_terminal_velocity(kind):
    rho, delta, alpha, dt = 0.2, 0.1, 0.05, 0.01
    model = ModelBuilder().set_cloth(MESH, Material(rho=rho, delta=delta, alpha=alpha)).finalize()
    st = make_stepper(kind, model, dt=dt, stiffness=500.0)
    s = model.initial_state()
    n = 300
    for _ in range(n):
        s, info = st.step(s)
    # backward Euler with gravity −δ g and drag −α v: (ρ + dt α) v_{k+1} = ρ v_k − dt δ g, so
    # v_n = v∞ (1 − rⁿ) with v∞ = −δ g / α and r = ρ / (ρ + dt α); the cloth stays undeformed
    r = rho / (rho + dt * alpha)
    assert np.allclose(s.v[:, 2], -delta * 9.8 / alpha * (1 - r ** n), rtol=1e-9)
    assert np.allclose(s.v[:, :2], 0, atol=1e-12)
    assert np.allclose(s.x - s.x.mean(axis=0), MESH.vertices - MESH.vertices.mean(axis=0), atol=1e-9)
    assert info.iterations == 0 and info.converged


def test_implicit_stepper_follows_grasps():
    mesh = rectangle(0.42, 0.594, 4, 5, plane="xz")
    top = [16, 19]
    model = (ModelBuilder().set_cloth(mesh, Material(rho=0.18, delta=0.09, alpha=0.36))
             .add_grasp(top, TrajectorySinusoid((0, 0.075, 0), 0.6)).finalize())
    st = make_stepper("mass-spring", model, dt=0.01, stiffness=2000.0)
    s = model.initial_state()
    for _ in range(100):
        s, _ = st.step(s)
    assert np.allclose(s.x[top], model.control(s.t).grasp_targets)
    # hanging under its own weight the vertical springs stretch a little but hold the cloth
    col = np.arange(4)[:, None] + 4 * np.arange(5)[None, :]
    rest = np.linalg.norm(np.diff(mesh.vertices[col], axis=1), axis=2)
    strain = np.linalg.norm(np.diff(s.x[col], axis=1), axis=2) / rest - 1
    assert 0.0 < strain.mean() < 0.05
    with pytest.raises(ValueError, match="unknown baseline"):
        make_stepper("finite-volume", model)


def test_inextensible_model_wins_on_its_own_data_fast(hang_recording, hang):
    """Table 4.3 on synthetic inextensible data, small: δ and α held at the truth, each baseline's
    stiffness fitted on a coarse grid; the inextensible model must have the lowest ē."""
    from isocloth.validation.comparison import compare_models

    rec = hang_recording.window(0.0, 1.0)
    comp = compare_models(rec, "hang-a2", tuple(hang.scene_set), fixed=hang.true, grid=3, maxfev=0)
    rows = {r["model"]: r for r in comp.rows}
    assert comp.rows[0]["model"] == "inextensible"
    assert set(rows) == {"inextensible", "quasi-inextensible", "mass-spring", "baraff-witkin"}
    for k in ("quasi-inextensible", "mass-spring", "baraff-witkin"):
        assert rows[k]["mean_error"] > 1.5 * rows["inextensible"]["mean_error"]
    assert np.isnan(rows["mass-spring"]["iterations"]) and rows["inextensible"]["iterations"] >= 1
    table = comp.table()
    assert "| inextensible |" in table and "–" in table


@pytest.mark.slow
def test_model_comparison_table_with_full_fits(tmp_path, hang_recording, hang):
    """Issue 5 acceptance: every model's (δ, α, stiffness) fitted; the inextensible model is best."""
    from isocloth.validation.comparison import compare_models
    from isocloth.validation.fitting import FitProblem
    from isocloth.validation.report import write_comparison_report

    comp = compare_models(hang_recording, "hang-a2", tuple(hang.scene_set), grid=3, maxfev=20, workers=2)
    assert comp.rows[0]["model"] == "inextensible"
    assert all(r["mean_error"] > 1.5 * comp.rows[0]["mean_error"] for r in comp.rows[1:])
    paths = write_comparison_report(tmp_path, comp, FitProblem(hang_recording, "hang-a2",
                                                               tuple(hang.scene_set)).build())
    assert (tmp_path / "comparison.md").read_text().count("\n") == 6 and paths["comparison.png"].exists()
