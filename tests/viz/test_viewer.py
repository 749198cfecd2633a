"""The browser viewer: a run folder served by viser and loaded in a real headless browser (Debian's
chromium driven by Playwright) shows the cloth with the run's vertex count and the positions of the frame
chosen with the time slider; in follow mode it picks up frames a run appends."""

import shutil
import time

import numpy as np
import pytest

from isocloth.io.trajectory import TrajectoryWriter, save_trajectory
from isocloth.viz.viewer import RunViewer, cloth_triangles

from tests.io.test_export import mixed_sheet_trajectory

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# the positions of the cloth's three.js mesh in viser's client (its scene node "/cloth")
CLOTH_POSITIONS = """() => {
  const m = window.__viserMutable;
  if (!m || !m.nodeRefFromName || !m.nodeRefFromName['/cloth']) return null;
  let mesh = null;
  m.nodeRefFromName['/cloth'].traverse(o => { if (o.isMesh && !mesh) mesh = o; });
  return mesh ? Array.from(mesh.geometry.attributes.position.array) : null;
}"""


def _run_folder(tmp_path, frames=6):
    traj = mixed_sheet_trajectory(frames=frames)
    traj.positions[0, 0] = traj.positions[1, 0]
    traj.metadata = {"model": {"grasps": [{"nodes": [0, 5]}]}}
    save_trajectory(tmp_path / "run", traj)
    return tmp_path / "run", traj


def _wait(predicate, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    return predicate()


def test_cloth_triangles_split_quads():
    tris = cloth_triangles(np.array([[0, 1, 2]]), np.array([[3, 4, 5, 6]]))
    assert tris.dtype == np.uint32 and tris.tolist() == [[0, 1, 2], [3, 4, 5], [3, 5, 6]]


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (setup.sh installs it)")
def test_browser_shows_the_run_and_the_slider_moves_it(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    folder, traj = _run_folder(tmp_path)
    n = traj.node_count
    with RunViewer(folder, port=0) as viewer, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        try:
            page = browser.new_page()
            page.goto(viewer.url)

            def shown():
                pos = page.evaluate(CLOTH_POSITIONS)
                return None if pos is None else np.array(pos).reshape(-1, 3)

            assert _wait(lambda: shown() is not None), "the page shows no cloth"
            first = shown()
            assert first.shape == (n, 3)  # the run's vertex count
            assert np.abs(first - traj.positions[0]).max() <= 1e-6
            # type the last frame into the slider's number box, as a user would
            box = page.locator("input.mantine-NumberInput-input:visible").first  # the frame slider's number box
            assert box.input_value() == "0"
            box.fill(str(traj.frame_count - 1))
            box.press("Enter")
            last = traj.positions[-1]
            moved = _wait(lambda: np.abs(shown() - last).max() <= 1e-6)
            assert moved, "the cloth did not move to the chosen frame"
            assert viewer.frame == traj.frame_count - 1
        finally:
            browser.close()


def test_play_advances_and_follow_picks_up_new_frames(tmp_path):
    traj = mixed_sheet_trajectory(frames=8)
    writer = TrajectoryWriter(tmp_path / "run", traj.triangles, traj.quads, {}, flush_every=0)
    for i in range(3):
        writer.append(traj.times[i], traj.positions[i])
    writer.flush()
    with RunViewer(tmp_path / "run", port=0, follow=True, poll=0.1) as viewer:
        assert viewer.trajectory.frame_count == 3
        viewer.show(2)  # at the last frame: follow the run
        for i in range(3, 8):
            writer.append(traj.times[i], traj.positions[i])
        writer.flush()
        assert _wait(lambda: viewer.frame == 7, timeout=10.0), "follow mode did not move to the new last frame"
        assert viewer.trajectory.frame_count == 8
        viewer.show(0)
        viewer.speed.value = 4.0
        viewer.playing.value = True
        assert _wait(lambda: viewer.frame > 0, timeout=10.0), "play did not advance"
        viewer.playing.value = False
    writer.close()


def test_a_folder_without_a_run_is_a_named_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="trajectory file missing"):
        RunViewer(tmp_path, port=0)


def test_a_port_in_use_is_an_oserror(tmp_path):
    import socket

    folder, _ = _run_folder(tmp_path)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(OSError):
            RunViewer(folder, port=busy.getsockname()[1])



def _viewed_run(args, expect):
    """Start ``isocloth run ... --view`` (args), read its output until the run is done and the viewer serves, check
    the page answers, then Ctrl-C: the command exits 0 and its viewer process with it."""
    import re
    import signal
    import subprocess
    import sys
    import urllib.request

    proc = subprocess.Popen([sys.executable, "-m", "isocloth", "run", *args, "--view", "--view-port", "0", "--no-video",
                             "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        text = ""
        for line in proc.stdout:
            text += line
            if "Ctrl-C to stop" in text and "the viewer goes on" in text and re.search(r"viewer at (http://\S+):", text):
                break
        assert expect in text, text
        url = re.search(r"viewer at (http://\S+):", text).group(1)
        with urllib.request.urlopen(url, timeout=10) as r:
            assert r.status == 200 and b"<html" in r.read().lower()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        with pytest.raises(OSError):  # the viewer stopped with it
            urllib.request.urlopen(url, timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_run_with_view_serves_the_run_until_ctrl_c(tmp_path):
    """``isocloth run --view``: a viewer follows the run, and stays after it until Ctrl-C; a resumed run too (the
    viewer's frame rate is not a change of the scene)."""
    out = str(tmp_path / "run")
    _viewed_run(["hang-a2", "--set", "simulation.duration=0.3", "--out", out], "done: 0.300 s simulated")
    _viewed_run(["--resume", out, "--set", "simulation.duration=0.4"], "done: 0.400 s simulated")


