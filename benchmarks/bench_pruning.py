"""Contact pruning (Li et al. 2018 §5.2, Fig. 11): two contacts of one vertex whose normals are closer than the
pruning angle are one contact. The box-and-cone configuration of Li Fig. 9 (a sheet dropped over a box's edge
and a cone, μ = 0.2, with cloth–cloth contacts; ``benchmarks/scenes/box-and-cone.toml``) run with the angles
Li et al. compare, 0, 0.17, 0.34 and 0.5 rad: contacts, duplicated vertices, sweeps and wall time per step with
contacts (median and quartiles, Li Fig. 11's box plots), the share of steps solved to the tolerance, and the
largest distance of the run's final positions from those of the default 0.17 rad.

Usage: python benchmarks/bench_pruning.py [--angles 0 0.17 0.34 0.5] [--duration 2.0]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import configure_threads  # noqa: E402

THREADS = configure_threads()

import argparse  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from _common import print_machine  # noqa: E402

SCENE = Path(__file__).resolve().parent / "scenes" / "box-and-cone.toml"


def run(angle: float, duration: float):
    from isocloth.scenes.loader import load_scene

    sc = load_scene(SCENE, [f"simulation.duration={duration}"])
    sc.stepper.prune_angle = angle
    s = sc.initial_state
    rows = []
    while s.t < duration - 1e-9:
        s, i = sc.stepper.step(s)
        if i.contact_count:
            contacts, _ = sc.stepper.last_contacts
            ends = np.concatenate([contacts.node, contacts.other, contacts.face.ravel()])
            ends = ends[ends >= 0]  # every vertex of a contact (Li §6: one copy each)
            dup = ends.size - np.unique(ends).size
            rows.append((i.contact_count, dup, i.friction_sweeps, i.wall_time, i.converged))
    return np.array(rows, dtype=float), s.x


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--angles", type=float, nargs="+", default=[0.0, 0.17, 0.34, 0.5])
    ap.add_argument("--duration", type=float, default=2.0)
    args = ap.parse_args()
    print_machine(THREADS)
    q = lambda a: f"{np.percentile(a, 50):.0f} ({np.percentile(a, 25):.0f}–{np.percentile(a, 75):.0f})"  # noqa: E731
    out = {}
    for angle in args.angles:
        out[angle] = run(angle, args.duration)
    ref = out.get(0.17, next(iter(out.values())))[1]
    print("| angle rad | contacts | duplicated | sweeps | step ms | converged | max |x − x(0.17)| m |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for angle, (w, x) in out.items():
        print(f"| {angle:.2f} | {q(w[:, 0])} | {q(w[:, 1])} | {q(w[:, 2])} | {q(1e3 * w[:, 3])} | "
              f"{100 * w[:, 4].mean():.1f} % | {np.abs(x - ref).max():.3f} |", flush=True)


if __name__ == "__main__":
    main()
