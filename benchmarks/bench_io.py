"""What a long run spends besides stepping: run folder I/O and bookkeeping of ``run_scene``.

Runs a built-in scene (default ``hang-a2``, 200 s) through :func:`isocloth.runner.run_scene` (trajectory
frames at the scene's fps, a checkpoint every simulated second and every wall-clock minute, diagnostics
rows every step) and prints the wall time of ``run_scene``, the wall time spent inside the steps
(``RunSummary.wall_time``) and their ratio; 1.0 would be free I/O.

Usage: python benchmarks/bench_io.py [--scene NAME] [--duration S]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import configure_threads  # noqa: E402

THREADS = configure_threads()

import argparse  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from _common import print_machine  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scene", default="hang-a2")
    ap.add_argument("--duration", type=float, default=200.0, help="simulated seconds (default 200)")
    ap.add_argument("--blas-threads", default=None, help="see benchmarks/_common.py")
    args = ap.parse_args()
    from isocloth.runner import run_scene
    from isocloth.scenes.loader import load_scene

    print_machine(THREADS)
    print()
    print("| scene | simulated [s] | frames | checkpoints | run_scene [s] | stepping [s] | ratio |")
    print("|---|---|---|---|---|---|---|")
    sc = load_scene(args.scene, [f"simulation.duration={args.duration}", "output.video='none'"])
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        s = run_scene(sc, tmp)
        total = time.perf_counter() - t0
    out = sc.config.output
    frames = int(args.duration * out.fps) + 1
    checkpoints = int(args.duration / out.checkpoint_every)
    print(f"| {args.scene} | {args.duration:g} | {frames} | ≥ {checkpoints} | {total:.2f} | {s.wall_time:.2f} | "
          f"{total / s.wall_time:.2f} |")


if __name__ == "__main__":
    main()
