"""Real-time factor of the self-collision scenes (issue 4): hit-a2, twist, drop-fold, shorts-fold.

For each scene: simulated time / wall time of the steps (one core; the first step, which compiles
the numba kernels, is excluded and reported apart), median ms per step, the fraction of step time
spent in collision detection (broad phase, CCD, node–obstacle detection), QP iterations per step,
steps split into substeps, and, as the baseline measured in the same run, the same scene with
``self_collision.enabled = false`` (no cloth–cloth collisions; thin obstacles such as the stick
and the table stay): the ratio is what self-collision handling costs. Seed 000 reports hit-a2 about 2x faster than real
time (q = 0.43–0.51) on a desktop CPU.

Run: python benchmarks/bench_self_collision.py [--scenes hit-a2 twist] [--duration 2.0]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from _common import configure_threads, print_machine  # noqa: E402

THREADS = configure_threads()

import numpy as np  # noqa: E402

from isocloth.scenes.loader import load_scene  # noqa: E402


def run(name: str, duration: float | None, collisions: bool) -> dict:
    over = ["output.video='none'"] + ([] if collisions else ["self_collision.enabled=false"])
    sc = load_scene(name, over)
    T = sc.duration if duration is None else min(duration, sc.duration)
    s = sc.initial_state
    walls, det, qp, split = [], [], [], 0
    while s.t < T - 1e-9:
        tic = time.perf_counter()
        s, info = sc.stepper.step(s)
        walls.append(time.perf_counter() - tic)
        det.append(info.detection_time)
        qp.append(info.qp_iterations)
        split += info.substeps > 1
    w = np.array(walls)
    steady = w[1:].sum()
    return {"scene": name, "nodes": sc.model.node_count, "T": T, "steps": w.size,
            "rtf": (T - sc.dt) / steady, "median_ms": 1e3 * float(np.median(w[1:])), "first_s": float(w[0]),
            "detect": float(np.sum(det[1:]) / steady), "qp": float(np.mean(qp)), "split": split}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", nargs="+", default=["hit-a2", "twist", "drop-fold", "shorts-fold"])
    ap.add_argument("--duration", type=float, default=None, help="simulate at most this long [s]")
    args = ap.parse_args()
    print_machine(THREADS)
    print("| scene | nodes | simulated [s] | RTF | median ms/step | detection share | QP it/step | split steps "
          "| RTF without self-collisions | self-collision cost |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.scenes:
        r = run(name, args.duration, True)
        b = run(name, args.duration, False)
        print(f"| {name} | {r['nodes']} | {r['T']:.2f} | {r['rtf']:.2f}x | {r['median_ms']:.1f} | "
              f"{100 * r['detect']:.0f} % | {r['qp']:.1f} | {r['split']} | {b['rtf']:.2f}x | "
              f"{b['rtf'] / r['rtf']:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
