"""A sheet of about 100,000 nodes: load time and memory, and how long Ctrl-C takes during its first step.

1. In a fresh Python process: ``load_scene`` of a 1 m sheet of N × N quad nodes (default N = 317: 100,489 nodes)
   held at two corners — wall time and the process's peak resident memory (ru_maxrss).
2. ``isocloth run`` of the same scene in a subprocess; SIGINT (Ctrl-C) is sent ``--after`` seconds after the run
   printed that it started stepping (inside the first step at this size); prints the delay until the process
   exited, its exit status, and whether the run folder holds what an interrupted run must (metadata, a summary
   that says it was interrupted, a readable trajectory and checkpoint); "stopped": "killed" when the stepping
   process did not answer within the grace time (``isocloth.supervisor``) and was killed.

Targets of the robustness issue: load ≤ 10 s and ≤ 1 GB, Ctrl-C effective within 2 s.

Usage: python benchmarks/bench_large.py [--nodes N] [--after S]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import configure_threads  # noqa: E402

THREADS = configure_threads()

import argparse  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from _common import print_machine  # noqa: E402

SCENE = """name = "sheet-{count}"
description = "A 1 m x 1 m sheet of {n} x {n} quad nodes held at two corners"

[cloth]
mesh = {{ generator = "rectangle", width = 1.0, height = 1.0, nx = {n}, ny = {n} }}
noise = {{ sigma = 0.0001, seed = 0 }}
placement = {{ translate = [0.0, 0.0, 1.0] }}
fabric = "light-cotton"

[[grasps]]
name = "corners"
nodes = {{ nearest = [[-0.5, -0.5, 1.0], [0.5, -0.5, 1.0]] }}

[simulation]
dt = 0.01
duration = 0.05

[output]
video = "none"
"""

LOAD = """
import json, resource, sys, time
t = time.perf_counter()
from isocloth.scenes.loader import load_scene
sc = load_scene(sys.argv[1])
wall = time.perf_counter() - t
print(json.dumps({"nodes": sc.model.node_count, "load_s": wall,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def load_cost(scene: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", LOAD, str(scene)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def interrupt_delay(scene: Path, folder: Path, after: float) -> dict:
    proc = subprocess.Popen([sys.executable, "-m", "isocloth.cli", "run", str(scene), "--out", str(folder),
                             "--no-video", "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stderr.readline()  # "running …" once the scene is loaded and the run starts
    time.sleep(after)
    sent = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate()
    delay = time.perf_counter() - sent
    summary = folder / "summary.json"
    ok = {"metadata": (folder / "metadata.json").is_file(), "summary": summary.is_file()}
    if summary.is_file():
        s = json.loads(summary.read_text())
        ok["summary_says_interrupted"] = bool(s.get("interrupted"))
        ok["stopped"] = "killed" if "was killed" in str(s.get("stopped")) else s.get("stopped")
        ok["steps"] = s.get("steps")
    try:
        import numpy as np

        with np.load(folder / "trajectory.npz") as d:
            ok["frames"] = int(d["times"].size)
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        ok["frames"] = f"unreadable: {exc}"
    ok["checkpoint"] = (folder / "checkpoint.npz").is_file()
    return {"started": first.strip(), "delay_s": delay, "returncode": proc.returncode, "folder": ok,
            "stdout": out.strip()[-200:], "stderr": err.strip()[-300:]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=317, help="nodes per side (default 317: 100,489 nodes)")
    ap.add_argument("--after", type=float, default=5.0, help="seconds of stepping before Ctrl-C (default 5)")
    args = ap.parse_args()
    print_machine(THREADS)
    with tempfile.TemporaryDirectory() as tmp:
        scene = Path(tmp) / "sheet.toml"
        scene.write_text(SCENE.format(n=args.nodes, count=args.nodes * args.nodes))
        cost = load_cost(scene)
        print(f"load: {cost['nodes']} nodes in {cost['load_s']:.2f} s, peak resident memory {cost['peak_rss_mb']:.0f} MB "
              f"(targets 10 s, 1024 MB)", flush=True)
        r = interrupt_delay(scene, Path(tmp) / "run", args.after)
        print(f"Ctrl-C {args.after:g} s into the first step: exited after {r['delay_s']:.2f} s (target 2 s), "
              f"status {r['returncode']}; run folder: {r['folder']}")
        print(f"  stdout: {r['stdout']!r}")
        print(f"  stderr tail: {r['stderr']!r}")


if __name__ == "__main__":
    main()
