"""`isocloth synth`, `isocloth fit` and `isocloth compare` end to end (small)."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from isocloth.cli import app
from isocloth.validation.recordings import read_recording

runner = CliRunner()


@pytest.fixture(scope="module")
def synth_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth") / "shake.csv"
    sets = ["--set", "cloth.kappa=1e-3", "--set", "cloth.noise.sigma=0", "--set", "cloth.delta=0.0902",
            "--set", "cloth.alpha=0.3608"]
    r = runner.invoke(app, ["synth", "hang-a2", "-o", str(out), "--duration", "1.0", "--seed", "3", "--shuffle"]
                      + sets)
    assert r.exit_code == 0, r.output
    assert "20 markers (4x5)" in r.stdout and "delta = 0.0902" in r.stdout
    return out


def test_synth_writes_a_noisy_motive_recording(synth_file, tmp_path):
    rec = read_recording(synth_file)
    assert rec.frame_count == 101 and rec.rate == 100.0 and rec.marker_count == 20
    assert rec.metadata["Length Units"] == "Millimeters"
    assert rec.metadata["truth"]["delta"] == pytest.approx(0.0902)  # true parameters in the Take Notes
    assert rec.present[0].all() and rec.missing_fraction() == pytest.approx(0.05, abs=0.003)
    # the noise has the requested σ: compare with a noise-free run of the same motion
    clean = tmp_path / "clean.npz"
    r = runner.invoke(app, ["synth", "hang-a2", "-o", str(clean), "--duration", "1.0", "--noise", "0",
                            "--dropout", "0", "--set", "cloth.kappa=1e-3", "--set", "cloth.noise.sigma=0",
                            "--set", "cloth.delta=0.0902", "--set", "cloth.alpha=0.3608"])
    assert r.exit_code == 0, r.output
    c = read_recording(clean)
    diff = rec.select(c.names).markers - c.markers
    assert np.nanstd(diff) == pytest.approx(0.5e-3, rel=0.05)


def test_fit_command_writes_parameters_table_and_plots(synth_file, tmp_path):
    out = tmp_path / "fit"
    r = runner.invoke(app, ["fit", str(synth_file), "--scene", "hang-a2", "--set", "cloth.kappa=1e-3", "--set",
                            "cloth.noise.sigma=0", "--grid", "2", "--maxfev", "6", "--sensitivity", "2", "-j", "1",
                            "--window", "0:0.4", "--video", "-o", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "fitted delta = " in r.stdout and "true (synthetic): delta = 0.0902" in r.stdout
    data = json.loads((out / "fit.json").read_text())
    assert set(data["parameters"]) == {"delta", "alpha"}
    assert data["metrics"]["mean_error_cm"] == pytest.approx(100 * data["metrics"]["mean_error"])
    assert data["recording"]["grasped"] == ["M17", "M20"] and data["truth"]["alpha"] == pytest.approx(0.3608)
    rows = (out / "evaluations.csv").read_text().splitlines()
    assert rows[0].startswith("stage,p:delta,p:alpha,mean_error") and rows[0].endswith(",problem")
    assert len(rows) == 1 + data["evaluations"]
    for name in ("error_series.csv", "error.png", "sensitivity_delta_alpha.png", "sensitivity.json"):
        assert (out / name).stat().st_size > 100
    assert (out / "replay.mp4").exists() or (out / "replay.gif").exists()
    series = (out / "error_series.csv").read_text().splitlines()
    assert series[0].startswith("time,e,s,d,recorded") and len(series) == 1 + 41


def test_fit_and_synth_report_input_errors(tmp_path, synth_file):
    r = runner.invoke(app, ["fit", str(tmp_path / "missing.csv"), "--scene", "hang-a2"])
    assert r.exit_code == 2 and "does not exist" in r.output
    r = runner.invoke(app, ["fit", str(synth_file), "--scene", "hang-a2", "--units", "m"])
    assert r.exit_code == 2 and "Millimeters" in r.output
    r = runner.invoke(app, ["fit", str(synth_file), "--scene", "hang-a2", "--marker-grid", "3x4"])
    assert r.exit_code == 2 and "grid" in r.output
    r = runner.invoke(app, ["synth", "no-such-scene", "-o", str(tmp_path / "x.csv")])
    assert r.exit_code == 2 and "unknown scene" in r.output


def test_compare_command(synth_file, tmp_path):
    out = tmp_path / "cmp"
    r = runner.invoke(app, ["compare", str(synth_file), "--scene", "hang-a2", "--set", "cloth.kappa=1e-3", "--set",
                            "cloth.noise.sigma=0", "--models", "inextensible,mass-spring", "--fix", "delta=0.0902",
                            "--fix", "alpha=0.3608", "--grid", "2", "--maxfev", "0", "-j", "1", "--window", "0:0.5",
                            "-o", str(out)])
    assert r.exit_code == 0, r.output
    lines = (out / "comparison.md").read_text().splitlines()
    assert lines[2].startswith("| inextensible |") and lines[3].startswith("| mass-spring |")
    assert (out / "comparison.png").exists() and (out / "comparison.csv").exists()


def test_fit_command_replays_a_recorded_stick(tmp_path):
    """`isocloth fit --stick A,B`: the stick end markers drive a moving stick, and they are not
    counted as cloth markers; a wrong --stick value is a clear error."""
    from pathlib import Path

    scene = str(Path(__file__).parent / "data" / "stick-touch.toml")
    rec = tmp_path / "touch.csv"
    r = runner.invoke(app, ["synth", scene, "-o", str(rec), "--seed", "2"])
    assert r.exit_code == 0, r.output
    names = read_recording(rec).names
    assert "stickA" in names and "stickB" in names
    out = tmp_path / "fit"
    r = runner.invoke(app, ["fit", str(rec), "--scene", scene, "--stick", "stickA,stickB", "--fit", "delta",
                            "--grid", "2", "--maxfev", "0", "--sensitivity", "0", "-j", "1", "--a-priori", "none",
                            "-o", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    data = json.loads((out / "fit.json").read_text())
    # grid-only δ (2 values): 6 mm; without the stick the replay is 21–22 mm off (docs/design/validation.md)
    assert data["metrics"]["mean_error"] < 1e-2
    r = runner.invoke(app, ["fit", str(rec), "--scene", scene, "--stick", "stickA", "-o", str(out), "--no-progress"])
    assert r.exit_code != 0 and "--stick needs the two stick end markers" in r.output
