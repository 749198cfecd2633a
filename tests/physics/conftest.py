import csv

import numpy as np
import pytest

from isocloth.contact.intersection import check_trajectory
from isocloth.control import TrajectoryFixed
from isocloth.io.trajectory import load_trajectory
from isocloth.model import Material, ModelBuilder
from isocloth.runner import run_scene
from isocloth.scenes.loader import load_scene
from isocloth.solvers.projection import SolverProjection
from isocloth.step import Stepper


def simulate(model, dt, steps, *, tol=1e-3, max_iterations=50, record=None):
    """Run `steps` steps; returns final state, list of StepInfo, and recorded values."""
    st = Stepper(model, dt=dt, solver=SolverProjection(tolerance=tol, max_iterations=max_iterations))
    s = model.initial_state()
    infos, rec = [], []
    for _ in range(steps):
        s, info = st.step(s)
        infos.append(info)
        if record is not None:
            rec.append(record(s))
    return s, infos, rec


@pytest.fixture
def sim():
    return simulate


def run_and_check(name, tmp_path, overrides=(), unconverged=0):
    """Run a built-in scene into a folder; every step meets the constraint rows, at most
    ``unconverged`` steps end unconverged (their friction not settled), and every saved frame is
    free of intersecting face pairs (issue 4). Returns (scene, summary, trajectory, diagnostics rows)."""
    sc = load_scene(name, ["output.video='none'", *overrides])
    folder = tmp_path / name
    summary = run_scene(sc, folder, progress=False, render=False)
    rows = list(csv.DictReader(open(folder / "diagnostics.csv")))
    traj = load_trajectory(folder)
    assert summary.simulated_time == pytest.approx(sc.duration)
    assert summary.unconverged_steps <= unconverged and summary.max_residual <= sc.config.simulation.tolerance
    report = check_trajectory(traj)
    assert len(report.frames) >= 20
    assert report.ok, report.to_dict()["intersections"][:3]
    return sc, summary, traj, rows


@pytest.fixture(scope="session")
def scene_run():
    """:func:`run_and_check` (a plain function, so module-scoped fixtures can use it too)."""
    return run_and_check
