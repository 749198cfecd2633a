"""The command line: scenes, info, run, render/export."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from isocloth.cli import app
from isocloth.io.export import read_frame
from isocloth.io.trajectory import load_trajectory

runner = CliRunner()
BGL = Path(__file__).resolve().parents[2] / "shared" / "data" / "meshes" / "bgl"


def test_scenes_lists_builtins():
    r = runner.invoke(app, ["scenes"])
    assert r.exit_code == 0
    for name in ("hang-a2", "locking-test", "cusick-drape", "tshirt-shake", "shorts-hang"):
        assert name in r.stdout


@pytest.mark.skipif(not BGL.exists(), reason="shared data not present")
def test_info_on_a_garment():
    r = runner.invoke(app, ["info", str(BGL / "shorts" / "shorts.obj")])
    assert r.exit_code == 0, r.output
    assert "235" in r.stdout and "436" in r.stdout


def test_info_names_a_defect(tmp_path):
    p = tmp_path / "bad.obj"
    p.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nv 0 0 1\nv 5 5 5\nf 1 2 3\nf 2 4 3\nf 1 2 5\n")
    r = runner.invoke(app, ["info", str(p)])
    assert r.exit_code == 1
    assert "non-manifold" in r.stdout.lower() or "unused" in r.stdout.lower()


def test_info_flags_a_garment_file_not_in_metres(tmp_path):
    """The Garment Library shorts written in centimetres (rest area ×10⁴): `isocloth info` names the
    likely units and the placement scale that undoes them."""
    from isocloth.mesh.io import read_mesh

    shorts = Path(__file__).resolve().parents[1] / "src" / "isocloth" / "data" / "meshes" / "bgl" / "shorts" / "shorts.obj"
    m = read_mesh(shorts, rest="geometry")
    p = tmp_path / "shorts_cm.obj"
    p.write_text("".join(f"v {a} {b} {c}\n" for a, b, c in 100.0 * m.vertices)
                 + "".join("f " + " ".join(str(i + 1) for i in f) + "\n" for f in m.triangles))
    r = runner.invoke(app, ["info", str(p), "--rest", "geometry"])
    assert r.exit_code == 0, r.output
    assert "not in metres" in r.stdout and "in centimetres it would be" in r.stdout
    assert "cloth.placement.scale = 0.01" in r.stdout
    plain = runner.invoke(app, ["info", str(shorts)])
    assert "not in metres" not in plain.stdout


def test_a_run_past_its_step_budget_ends_with_a_message_and_the_resume_command(tmp_path):
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", "tablecloth", "--out", str(out), "--set", "simulation.step_budget=1e-9",
                            "--no-video", "--no-progress"])
    assert r.exit_code == 3 and "Traceback" not in r.output
    assert "simulation.step_budget" in r.output and f"isocloth run --resume {out}" in r.output.replace("\n", "")


def test_run_render_and_export_round_trip(tmp_path):
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", "hang-a2", "--out", str(out), "--set", "simulation.duration=0.2",
                            "--no-video", "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "real-time factor" in r.stdout and "max constraint residual" in r.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 20 and summary["max_residual"] <= 1e-3
    traj = load_trajectory(out)
    for fmt in ("obj", "ply"):
        r = runner.invoke(app, ["render", str(out), "--export", fmt, "--out", str(tmp_path / fmt)])
        assert r.exit_code == 0, r.output
        files = sorted((tmp_path / fmt).glob(f"*.{fmt}"))
        assert len(files) == traj.frame_count
        x, tri, quad = read_frame(files[-1])
        assert np.array_equal(x, traj.positions[-1])
        assert np.array_equal(quad, traj.quads)
    r = runner.invoke(app, ["render", str(out), "--out", str(tmp_path / "v.gif")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "v.gif").stat().st_size > 1000
    # one USD stage (default RUN/cloth.usd): the saved positions at every frame's time code
    from pxr import Usd, UsdGeom

    r = runner.invoke(app, ["render", str(out), "--export", "usd"])
    assert r.exit_code == 0, r.output
    stage = Usd.Stage.Open(str(out / "cloth.usd"))
    points = UsdGeom.Mesh(stage.GetPrimAtPath("/World/Cloth")).GetPointsAttr()
    for i in (0, traj.frame_count - 1):
        code = traj.times[i] * stage.GetTimeCodesPerSecond()
        assert np.abs(np.array(points.Get(code)) - traj.positions[i]).max() <= 1e-6
    r = runner.invoke(app, ["render", str(out), "--export", "usd", "--out", str(tmp_path / "stage.obj")])
    assert r.exit_code == 2 and ".usd, .usda or .usdc" in r.output and "Traceback" not in r.output


def test_run_reports_bad_override(tmp_path):
    r = runner.invoke(app, ["run", "hang-a2", "--set", "simulation.bogus=1", "--no-video"])
    assert r.exit_code == 2
    assert "unknown key" in r.output


def test_run_into_a_folder_that_cannot_be_written_is_a_named_error(tmp_path):
    """A path through a file (or a read-only or full disk) used to end in a traceback."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = runner.invoke(app, ["run", "hang-a2", "--out", str(blocker / "run"), "--no-video", "--no-progress",
                            "--set", "simulation.duration=0.05"])
    assert r.exit_code == 2, r.output
    assert "cannot write the run folder" in r.output and "choose another folder with --out" in r.output


SHORT_RUN = ["--no-video", "--no-progress", "--set", "simulation.duration=0.05"]


@pytest.mark.parametrize("where", ["read-only folder", "/sys"])
def test_run_into_a_read_only_folder_is_a_named_error(tmp_path, where):
    """It used to end in a traceback. chmod does not stop root: /sys refuses new folders to everyone."""
    if where == "/sys":
        if not Path("/sys/kernel").is_dir():
            pytest.skip("no /sys (not Linux)")
        out = Path("/sys/isocloth-test/run")
    else:
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            pytest.skip("root writes into read-only folders (the /sys case covers root)")
        out = tmp_path / "locked"
        out.mkdir()
        out.chmod(0o500)
    try:
        r = runner.invoke(app, ["run", "hang-a2", "--out", str(out), *SHORT_RUN])
    finally:
        if where != "/sys":
            out.chmod(0o700)
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.output
    assert f"cannot write the run folder {out}: " in r.output and "Traceback" not in r.output
    assert "the folder is not writable: choose another folder with --out, or make this one writable" in r.output


def test_run_on_a_full_disk_is_a_named_error_and_can_be_resumed(tmp_path, monkeypatch):
    """ENOSPC (here when summary.json is synced, after the first checkpoint) used to end in a traceback."""
    import errno

    import isocloth.io.atomic as atomic

    sync = atomic._fsync_file

    def full(path):
        if "summary" in Path(path).name:
            raise OSError(errno.ENOSPC, "No space left on device")
        sync(path)

    monkeypatch.setattr(atomic, "_fsync_file", full)
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", "hang-a2", "--out", str(out), *SHORT_RUN])
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.output
    assert (f"cannot write the run folder {out}: No space left on device; the disk is full: free disk space, or "
            f"choose another folder (on another disk) with --out, and run again; or free space and continue with: "
            f"isocloth run --resume {out}") in " ".join(r.output.split())
    monkeypatch.setattr(atomic, "_fsync_file", sync)  # space freed: the hint works
    r = runner.invoke(app, ["run", "--resume", str(out), "--no-video", "--no-progress"])
    assert r.exit_code == 0, r.output
    assert json.loads((out / "summary.json").read_text())["steps"] == 5


def test_run_creates_missing_parent_folders(tmp_path):
    out = tmp_path / "a" / "b" / "run"
    r = runner.invoke(app, ["run", "hang-a2", "--out", str(out), *SHORT_RUN])
    assert r.exit_code == 0, r.output
    assert (out / "summary.json").is_file()


def test_run_write_errors_in_the_forked_child_are_named_errors(tmp_path):
    """`isocloth run` steps in a forked child when its output goes to files: the child's OSError (here a full
    disk at the first write) comes back to the parent and gets the same message."""
    import subprocess
    import sys

    code = ("import errno, sys\n"
            "import isocloth.io.atomic as a\n"
            "def full(path):\n"
            "    raise OSError(errno.ENOSPC, 'No space left on device')\n"
            "a._fsync_file = full\n"
            "from isocloth.cli import app\n"
            "sys.argv = ['isocloth', *sys.argv[1:]]\n"
            "app()\n")
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-c", code, "run", "hang-a2", "--out", str(out), *SHORT_RUN],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    assert f"cannot write the run folder {out}: No space left on device" in r.stderr
    assert "free disk space" in r.stderr and "Traceback" not in r.stderr


def test_version_scene_list_and_the_scenes_package():
    from isocloth import __version__
    from isocloth.scenes import load_scene

    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.stdout.strip() == f"isocloth {__version__}"
    assert load_scene("hang-a2").model.node_count == 63  # exported by isocloth.scenes
    lines = runner.invoke(app, ["scenes"]).stdout.splitlines()
    # the longest name (tablecloth-low-friction) used to run into its description
    assert all("  " in line for line in lines) and any(line.startswith("tablecloth-low-friction  ") for line in lines)


def test_user_facing_text_cites_papers_not_project_history():
    """Scene descriptions and CLI help said "Seed 000 §7.4" and "Issue 4 check"."""
    import re

    text = runner.invoke(app, ["scenes"]).stdout + runner.invoke(app, ["fit", "--help"]).stdout
    assert not re.search(r"(?i)\bissue\s*\d|\bseed\s*0\d\d", text)


def test_real_time_factor_keeps_three_significant_digits():
    from isocloth.cli import _rtf

    assert [_rtf(v) for v in (0.012345, 16.93, 1234.5, float("nan"))] == ["0.0123x", "16.9x", "1234x", "n/a"]


def test_the_largest_element_area_error_is_reported_and_flagged(tmp_path, monkeypatch):
    """The summary said "done" while single elements were at 2.8x their rest area."""
    import csv

    import isocloth.cli as cli

    monkeypatch.setattr(cli, "LARGE_ELEMENT_ERROR", 1e-4)  # any run crosses it
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", "hang-a2", "--out", str(out), "--no-video", "--no-progress",
                            "--set", "simulation.duration=0.2"])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    rows = list(csv.DictReader(open(out / "diagnostics.csv")))
    assert summary["max_area_error_element"] == pytest.approx(max(float(x["area_error_max"]) for x in rows))
    assert summary["max_area_error_element"] > summary["max_area_error_mean"]
    assert "largest element" in r.stdout and "warning: an element's area was" in r.stdout


def test_info_reports_faces_passing_through_each_other_also_when_they_share_a_node(tmp_path):
    obj = tmp_path / "fold.obj"
    obj.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0.5 0.2 -0.5\nv 0.2 0.5 0.5\nv 1 1 0\n"
                   "f 1 2 3\nf 1 4 5\nf 2 6 3\n")
    r = CliRunner().invoke(app, ["info", str(obj)])
    assert r.exit_code == 1 and "intersecting faces: 1 pairs, e.g. (0, 1)" in r.stdout
    assert "defects: none" not in r.stdout and "defects:\n  - intersecting faces" in r.stdout


@pytest.mark.parametrize("text, defect", [
    # a quad with two distinct nodes at one point used to pass as "defects: none", exit 0
    ("v 0 0 0\nv 1 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3 4\n", "face 0 (quad 0): nodes [0, 1, 2, 3], zero-length edge 1–2"),
    # triangle 1 turned over in the plane onto triangle 0: "intersecting faces" next to "defects: none"
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0.5 0.2 0\nf 1 2 3\nf 2 1 4\n", "2 inverted faces (folded over onto "
     "neighbouring faces): face 0 (triangle 0); face 1 (triangle 1); 1 folded-over edge"),
], ids=["zero-length-edge", "fold-over-in-the-plane"])
def test_info_names_zero_length_edges_and_faces_inverted_in_the_plane(tmp_path, text, defect):
    obj = tmp_path / "bad.obj"
    obj.write_text(text)
    r = runner.invoke(app, ["info", str(obj)])
    assert r.exit_code == 1 and "defects:\n  - " in r.stdout and defect in r.stdout, r.output
    assert "defects: none" not in r.stdout


def test_python_dash_m_runs_the_command_line():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "isocloth", "--version"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("isocloth ")


def test_a_start_inside_an_obstacle_runs_only_with_force(tmp_path):
    """Refused with the obstacle named and the way out; with --force the run starts, says so on the console and
    records the nodes in summary.json, and the first step pushes them out."""
    low = ["--set", "cloth.placement.translate=[0.0, 0.0, 0.183]", "--set", "simulation.duration=0.01"]
    r = runner.invoke(app, ["run", "drop-fold", "--out", str(tmp_path / "no"), "--no-video", "--no-progress", *low])
    assert r.exit_code != 0 and "inside obstacle 'floor'" in r.output and "--force" in r.output
    out = tmp_path / "forced"
    r = runner.invoke(app, ["run", "drop-fold", "--out", str(out), "--no-video", "--no-progress", "--force", *low])
    assert r.exit_code == 0, r.output
    assert "15 cloth nodes start inside obstacle 'floor'" in r.output and "started anyway" in r.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["start"]["nodes_inside"] == {"floor": 15} and summary["unconverged_steps"] == 0
    assert any("started inside obstacle 'floor'" in w for w in summary["start"]["warnings"])
    assert load_trajectory(out).positions[-1][:, 2].min() >= -1e-4


def test_an_unreadable_ply_gets_one_named_error_without_the_readers_own_output(tmp_path, capfd):
    """meshio printed "Expected ply" and "Error: Couldn't read file ..." before the named error."""
    empty = tmp_path / "empty.ply"
    empty.write_bytes(b"")
    r = runner.invoke(app, ["info", str(empty)])
    assert r.exit_code == 2
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot read mesh {empty}"), r.output
    out, err = capfd.readouterr()  # nothing past the captured streams either
    assert "Expected ply" not in out + err and "Couldn't read" not in out + err
