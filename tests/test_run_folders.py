"""Every reader of a run folder (render, export, check, dgli, resume, summary) on damaged copies of one
short real run: a named error and exit code 2, never a traceback, an output file or exit 0; and what a
run writes holds no NaN or inf."""

import json
import math
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from isocloth.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def base_run(tmp_path_factory):
    """A complete 0.1 s run of hang-a2 (8 x 10 nodes, a few frames), written once per module."""
    from isocloth.runner import run_scene
    from isocloth.scenes.loader import load_scene

    folder = tmp_path_factory.mktemp("base") / "hang"
    run_scene(load_scene("hang-a2", ["simulation.duration=0.1", "output.video='none'"]), folder, render=False)
    return folder


def _rewrite_npz(path, **arrays):
    with np.load(path) as d:
        data = {k: d[k] for k in d.files}
    data.update(arrays)
    with open(path, "wb") as fh:
        np.savez(fh, **data)


def _nan_position(folder):
    with np.load(folder / "trajectory.npz") as d:
        x = d["positions"].copy()
    x[1, 3, 0] = np.nan
    _rewrite_npz(folder / "trajectory.npz", positions=x)


def _inf_velocity(folder):
    with np.load(folder / "trajectory.npz") as d:
        v = d["velocities"].copy()
    v[-1, 0, 2] = np.inf
    _rewrite_npz(folder / "trajectory.npz", velocities=v)


def _no_frames(folder):
    with np.load(folder / "trajectory.npz") as d:
        empty = {k: d[k][:0] for k in ("times", "positions", "velocities")}
    _rewrite_npz(folder / "trajectory.npz", **empty)


def _damaged(base_run, tmp_path, damage):
    folder = tmp_path / "run"
    shutil.copytree(base_run, folder)
    damage(folder)
    return folder


def _assert_named_error(r, *phrases):
    assert r.exit_code == 2, r.output
    assert isinstance(r.exception, SystemExit), r.exception  # no traceback
    text = " ".join(r.output.split())
    assert "error:" in text and "Traceback" not in text
    for p in phrases:
        assert p in text, text


READERS = {
    "render": lambda f, out: ["render", str(f), "-o", str(out / "v.gif")],
    "export-obj": lambda f, out: ["render", str(f), "--export", "obj", "-o", str(out / "frames")],
    "export-ply": lambda f, out: ["render", str(f), "--export", "ply"],
    "check": lambda f, out: ["check", str(f), "--json", str(out / "check.json")],
    "dgli": lambda f, out: ["dgli", str(f), "-o", str(out / "dgli")],
    "resume": lambda f, out: ["run", "--resume", str(f), "--no-video", "--no-progress"],
}


@pytest.mark.parametrize("damage, problem", [(_nan_position, "positions of frame 1"),
                                             (_inf_velocity, "velocities of frame"),
                                             (_no_frames, "holds no frame")], ids=["nan-position", "inf-velocity",
                                                                                    "no-frames"])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_refuses_an_empty_or_non_finite_trajectory(base_run, tmp_path, damage, problem, reader):
    """render (video and --export) used to write a video or 0 files with exit 0, dgli its outputs, check
    'no intersections' for 0 frames; --export of NaN positions blamed 'the mesh file'."""
    folder = _damaged(base_run, tmp_path, damage)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    out = tmp_path / "out"
    r = runner.invoke(app, READERS[reader](folder, out))
    _assert_named_error(r, problem, "trajectory.npz", "run the scene again")
    assert "mesh file" not in r.output
    assert not out.exists()  # no video, frames, report or coordinates
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # nothing written into the run folder


def test_export_onto_an_existing_file_is_a_named_error(base_run, tmp_path):
    target = tmp_path / "afile"
    target.write_text("keep me")
    r = runner.invoke(app, ["render", str(base_run), "--export", "obj", "-o", str(target)])
    _assert_named_error(r, "is a file", "--out")
    assert target.read_text() == "keep me"


@pytest.mark.parametrize("field, value, problem", [("t", np.nan, "not a time of a run"),
                                                   ("step_index", -3, "not a time of a run"),
                                                   ("x", np.nan, "positions are not finite"),
                                                   ("v", np.inf, "velocities are not finite")])
def test_resume_names_a_damaged_checkpoint(base_run, tmp_path, field, value, problem):
    """A checkpoint with t = nan ended in 'ValueError: time must be finite' (a traceback)."""
    folder = _damaged(base_run, tmp_path, lambda f: None)
    ck = folder / "checkpoint.npz"
    with np.load(ck) as d:
        arr = d[field].copy()
    if arr.ndim:
        arr[0, 0] = value
    else:
        arr = np.asarray(value, dtype=arr.dtype)
    _rewrite_npz(ck, **{field: arr})
    r = runner.invoke(app, ["run", "--resume", str(folder), "--no-video", "--no-progress"])
    _assert_named_error(r, str(ck), problem, "checkpoint is damaged")


@pytest.mark.parametrize("args, problem", [
    (["hang-a2"], "--resume continues the folder's own scene; drop the scene argument"),
    (["--out", "elsewhere"], "drop --out"),
], ids=["scene", "out"])
def test_resume_refuses_a_scene_or_folder_it_would_ignore(base_run, tmp_path, monkeypatch, args, problem):
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["run", *args, "--resume", str(base_run), "--no-video", "--no-progress"])
    _assert_named_error(r, problem)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["run", "hang-a2", "--no-video", "--no-progress"], ["render", "RUN"],
                                     ["render", "RUN", "--export", "obj"], ["dgli", "RUN"]],
                         ids=["run", "render", "export", "dgli"])
@pytest.mark.parametrize("empty", ["", "  "], ids=["empty", "blank"])
def test_an_empty_out_is_refused_not_the_current_folder(base_run, tmp_path, monkeypatch, command, empty):
    monkeypatch.chdir(tmp_path)
    args = [str(base_run) if a == "RUN" else a for a in command]
    r = runner.invoke(app, [*args, "-o", empty])
    _assert_named_error(r, "--out is empty")
    assert list(tmp_path.iterdir()) == []


def test_a_run_writes_no_nan_or_inf_and_reads_its_diagnostics_back_exactly(base_run):
    """omega (no collision detection) and min_gap (no contact) were written as nan / inf in every row."""
    from isocloth.runner import _diag_csv, _read_diag

    text = (base_run / "diagnostics.csv").read_bytes().decode()  # csv line ends as written
    for name in ("diagnostics.csv", "summary.json", "metadata.json"):
        tokens = (base_run / name).read_text().replace(",", " ").replace(":", " ").lower().split()
        assert not {"nan", "inf", "-inf", "infinity", "-infinity"} & set(tokens), name
    rows = _read_diag(base_run / "diagnostics.csv")
    assert rows and all(math.isnan(r["omega"]) and r["min_gap"] == math.inf for r in rows)
    assert _diag_csv(rows) == text  # the cells written are read back exactly (a resume rewrites them)
    # files of older versions wrote the tokens: they still read
    old = base_run.parent / "old.csv"
    old.write_bytes(text.replace(",,", ",inf,", 1).encode())
    assert _read_diag(old)[0]["min_gap"] == math.inf


def test_summary_prints_valid_json_and_names_a_damaged_file(base_run, tmp_path):
    r = runner.invoke(app, ["summary", str(base_run)])
    assert r.exit_code == 0, r.output
    shown = json.loads(r.stdout)
    assert shown["video"] is None and shown["steps"] == 10
    folder = _damaged(base_run, tmp_path, lambda f: None)
    p = folder / "summary.json"
    old = json.loads(p.read_text())
    p.write_text(json.dumps({**old, "real_time_factor": float("nan"), "max_residual": float("inf")}))  # NaN tokens
    r = runner.invoke(app, ["summary", str(folder)])
    assert r.exit_code == 0, r.output
    shown = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"{c} printed"))
    assert shown["real_time_factor"] is None and shown["max_residual"] is None
    for text, problem in (("NaN", "must hold a JSON object"), ("{oops", "cannot be read")):
        p.write_text(text)
        r = runner.invoke(app, ["summary", str(folder)])
        _assert_named_error(r, str(p), problem, "isocloth run --resume")
