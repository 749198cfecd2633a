"""Issue acceptance on whole scenes: residual below tolerance after every step, area conserved."""

import numpy as np
import pytest

from isocloth.scenes.loader import load_scene


def _run(name, overrides=()):
    sc = load_scene(name, list(overrides))
    tol = sc.config.simulation.tolerance
    s = sc.initial_state
    infos = []
    for _ in range(int(round(sc.duration / sc.dt))):
        s, info = sc.stepper.step(s)
        infos.append(info)
    return sc, s, infos, tol


def test_hang_a2_full_shake_keeps_constraints_and_area():
    sc, s, infos, tol = _run("hang-a2")
    assert len(infos) == 1000
    assert max(i.residual for i in infos) <= tol
    assert all(i.converged for i in infos)
    assert max(i.area_error_total for i in infos) < 0.005  # total area error < 0.5 %
    assert np.mean([i.iterations for i in infos]) < 2.0  # thesis: 1.60 per step on 9x9
    g = sc.model.grasp_nodes
    assert np.abs(s.x[g] - sc.model.control(s.t).grasp_targets).max() <= 1e-9
    # the cloth really swings: the bottom edge moves in y by several cm
    assert np.abs(s.x[:, 1]).max() > 0.03


@pytest.mark.parametrize("name", ["shorts-hang", "tshirt-shake"])
def test_garment_scene_keeps_constraints_and_area(name):
    # the default stretch limits (benchmarks/RESULTS.md): total area error ≤ 0.07 %; the thesis' rows alone 0.5–0.6 %
    sc, s, infos, tol = _run(name, ["simulation.duration=1.5"])
    assert max(i.residual for i in infos) <= tol
    assert max(i.area_error_total for i in infos) < 0.005
    g = sc.model.grasp_nodes
    assert np.abs(s.x[g] - sc.model.control(s.t).grasp_targets).max() <= 1e-9
    if name == "shorts-hang":
        assert s.x[g, 2].mean() > sc.model.initial_positions[g, 2].mean() + 0.15  # lifted by the trajectory
        assert sc.model.collision_detector is not None  # the default scene runs with self-collisions
        assert all(i.converged for i in infos) and max(i.edge_stretch_max for i in infos) <= 0.02
