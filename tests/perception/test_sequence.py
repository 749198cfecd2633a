"""dGLI coordinates of a run, frame by frame, and their Spearman distance matrix (`isocloth dgli`)."""

import numpy as np
import pytest
from typer.testing import CliRunner

from isocloth.cli import app
from isocloth.io.trajectory import load_trajectory
from isocloth.perception import cloth_coordinates, distance_matrix, spearman_distance, spearman_distance_matrix
from isocloth.runner import run_scene
from isocloth.scenes.loader import load_scene


def test_the_distance_matrix_in_one_product_equals_pairwise_spearman_distances():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 28))
    X[3] = X[5]  # identical rows
    X[7, :10] = X[7, 0]  # ties
    X[9] = 2.0  # constant: no ranking
    X[11] = -X[12]  # opposite rankings: distance 2
    D = spearman_distance_matrix(X)
    want = np.array([[0.0 if i == j else spearman_distance(X[i], X[j]) for j in range(40)] for i in range(40)])
    assert np.abs(D - want).max() <= 1e-12
    assert D[3, 5] == pytest.approx(0.0, abs=1e-12) and D[11, 12] == pytest.approx(2.0)
    assert np.all(D[9, np.arange(40) != 9] == 1.0) and np.array_equal(D, D.T)
    assert np.array_equal(distance_matrix(X), D)  # Spearman's distance takes the fast path
    with pytest.raises(ValueError, match="samples must be"):
        spearman_distance_matrix(np.ones(5))


def test_isocloth_dgli_writes_the_coordinates_and_distances_of_every_frame(tmp_path):
    run = tmp_path / "run"
    run_scene(load_scene("hang-a2", ["simulation.duration=0.4", "output.fps=25", "output.video='none'"]), run)
    r = CliRunner().invoke(app, ["dgli", str(run)])
    assert r.exit_code == 0, r.output
    traj = load_trajectory(run)
    rows = (run / "dgli.csv").read_text().strip().splitlines()
    assert rows[0].split(",")[:3] == ["t", "g_0_1", "g_0_2"] and len(rows[0].split(",")) == 29
    assert len(rows) == traj.times.size + 1
    with np.load(run / "dgli.npz") as d:
        coords, D, seg = d["coordinates"], d["distances"], d["segments"]
    for f in (0, traj.times.size - 1):
        assert np.allclose(coords[f], cloth_coordinates(traj.positions[f], seg), rtol=1e-12, atol=0)
    assert np.array_equal(D, D.T) and np.all(np.diag(D) == 0) and D.max() > 0.05  # the hanging sheet changes
    assert (run / "dgli_distances.png").stat().st_size > 1000
    assert f"{traj.times.size} frames" in r.output


def test_isocloth_dgli_names_what_is_wrong(tmp_path):
    r = CliRunner().invoke(app, ["dgli", str(tmp_path)])
    assert r.exit_code == 2 and "has no trajectory.npz" in r.output
    scene = tmp_path / "disk.toml"
    scene.write_text('name = "disk"\ndescription = "a disk"\n[cloth]\n'
                     'mesh = { generator = "disk", radius = 0.2, n_radial = 3, n_angular = 16 }\n'
                     'placement = { translate = [0.0, 0.0, 0.5] }\n[simulation]\ndt = 0.01\nduration = 0.02\n'
                     '[output]\nvideo = "none"\n')
    run_scene(load_scene(str(scene)), tmp_path / "run")
    r = CliRunner().invoke(app, ["dgli", str(tmp_path / "run")])
    assert r.exit_code == 2 and "4 corners" in r.output
