"""Mesh-convergence studies (isocloth.validation.study, ``isocloth study``)."""

import numpy as np
import pytest
from typer.testing import CliRunner

from isocloth.cli import app
from isocloth.validation.study import (cusick_cases, locking_cases, pairwise_corner_distances, richardson,
                                       run_study)


def test_richardson_recovers_the_limit_and_order_of_a_power_law():
    nodes = np.array([250, 490, 810, 1440, 2560])
    h = nodes ** -0.5
    f_inf, p = richardson(nodes, 70.0 - 900.0 * h ** 1.5)
    assert f_inf == pytest.approx(70.0, abs=1e-8) and p == pytest.approx(1.5, abs=1e-6)
    # the three finest only, in any order
    f2, p2 = richardson(nodes[::-1], (70.0 - 900.0 * h ** 1.5)[::-1])
    assert (f2, p2) == pytest.approx((f_inf, p))


@pytest.mark.parametrize("values", [[50.0, 60.0, 55.0], [50.0, 51.0, 53.0], [50.0, 50.0, 50.0]])
def test_richardson_refuses_sequences_that_do_not_converge(values):
    assert np.isnan(richardson([250, 810, 2560], values)[0])
    assert np.isnan(richardson([250, 810], values[:2])[0])


def test_cases_are_named_and_checked():
    cases = cusick_cases([(5, 50), (7, 70)], [5e-5, 2.5e-4])
    assert [c.name for c in cases] == ["ring5x50-k5e-05", "ring5x50-k0.00025", "ring7x70-k5e-05", "ring7x70-k0.00025"]
    assert "cloth.mesh.n_angular=70" in cases[2].overrides and cases[1].group == 2.5e-4
    with pytest.raises(ValueError, match="at least 2 rings"):
        cusick_cases([(1, 50)])
    with pytest.raises(ValueError, match="kappa must be >= 0"):
        cusick_cases([(5, 50)], [-1.0])
    assert len(locking_cases([4, 5])) == 8


def test_a_study_writes_rows_shapes_and_resumes(tmp_path):
    cases = cusick_cases([(3, 24), (4, 32)], [5e-5])
    said = []
    rows = run_study("cusick", cases, tmp_path, duration=0.01, report=said.append)
    assert [r["case"] for r in rows] == [c.name for c in cases] and len(said) == 2
    assert [int(r["nodes"]) for r in rows] == [72, 128]
    assert all(95.0 < r["value"] <= 100.0 for r in rows)  # barely moved from flat after 10 ms
    for c in cases:
        with np.load(tmp_path / "shapes" / f"{c.name}.npz") as d:
            assert d["positions"].shape[1] == 3 and d["triangles"].shape[1] == 3
    again = run_study("cusick", cases + cusick_cases([(5, 40)], [5e-5]), tmp_path, duration=0.01, report=said.append)
    assert len(said) == 3 and [r["cpu_s"] for r in again[:2]] == pytest.approx([r["cpu_s"] for r in rows])
    with pytest.raises(ValueError, match="another study"):
        run_study("cusick", cusick_cases([(6, 48)]), tmp_path, duration=0.01)
    with pytest.raises(ValueError, match="distinct names"):
        run_study("cusick", cases + cases, tmp_path / "dup")


def test_pairwise_distances_per_seed():
    rows = [{"case": "a", "group": 4.0, "corner_x": 0.0, "corner_y": 0.0, "corner_z": -0.6},
            {"case": "b", "group": 4.0, "corner_x": 0.03, "corner_y": 0.04, "corner_z": -0.6},
            {"case": "c", "group": 5.0, "corner_x": 0.0, "corner_y": 0.0, "corner_z": -0.6}]
    assert pairwise_corner_distances(rows) == {4.0: {("a", "b"): pytest.approx(0.05)}, 5.0: {}}


def test_study_command(tmp_path):
    runner = CliRunner()
    r = runner.invoke(app, ["study", "cusick", "--meshes", "3x24,4x32,5x40", "--duration", "0.01",
                            "-o", str(tmp_path / "s")])
    assert r.exit_code == 0, r.output
    assert "kappa = 5e-05" in r.output and "Richardson" in r.output
    assert (tmp_path / "s" / "convergence.png").stat().st_size > 1000
    bad = runner.invoke(app, ["study", "cusick", "--meshes", "5by50", "-o", str(tmp_path / "t")])
    assert bad.exit_code == 2 and "rings x nodes per ring" in bad.output
    assert runner.invoke(app, ["study", "drape"]).exit_code == 2
