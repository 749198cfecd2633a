"""dGLI cloth coordinates: the cost of one configuration's 28 coordinates and of a sequence's
Spearman distance matrix (thesis §7.3–7.4.1).

- ``cloth_coordinates`` of a 20 × 20-node sheet with one corner folded over (µs per configuration);
- the (F, F) Spearman distance matrix of F = 1000 frames of coordinates: ``spearman_distance_matrix``
  (ranks once, one matrix product) against the pairwise ``spearman_distance`` loop, the latter on
  200 frames and scaled by the number of pairs (same run).

- the folding database (thesis §7.4.2): the generation time and real-time factor recorded in the stored
  12 × 12-node database (simulated with two worker processes), the time of Table 7.1 on it, and one
  sample of each fold kind simulated here at 12 × 12 and at the thesis' 20 × 20 nodes (``--samples``).

Targets: ≤ 50 µs per configuration; ≤ 1 s for the 1000-frame matrix.

Usage: python benchmarks/bench_perception.py [--frames F] [--samples 02,06]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import configure_threads  # noqa: E402

THREADS = configure_threads()

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from _common import print_machine  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=1000)
    ap.add_argument("--samples", default="02,06", help="classes simulated at 12 and 20 nodes ('' for none)")
    args = ap.parse_args()
    from isocloth.mesh.generators import rectangle
    from isocloth.perception import cloth_coordinates, sheet_segments, spearman_distance, spearman_distance_matrix

    print_machine(THREADS)
    sheet = rectangle(1.0, 1.0, 20, 20)
    segments, corners, _ = sheet_segments(sheet)
    x = sheet.vertices.copy()
    c = x[corners[0]]
    near = np.linalg.norm(x[:, :2] - c[:2], axis=1) < 0.3  # the corner folded over its diagonal, 5 mm up
    d = c[:2] / np.linalg.norm(c[:2])
    s = (x[near, :2] - (c[:2] - 0.3 * d)) @ d
    x[near, :2] -= 2.0 * s[:, None] * d
    x[near, 2] += 0.005
    cloth_coordinates(x, segments)
    reps = 2000
    t0 = time.perf_counter()
    for _ in range(reps):
        cloth_coordinates(x, segments)
    per = (time.perf_counter() - t0) / reps
    print(f"cloth_coordinates, 8 segments (28 pairs): {1e6 * per:.1f} µs per configuration (target 50 µs)")

    rng = np.random.default_rng(0)
    C = rng.normal(size=(args.frames, 28))
    t0 = time.perf_counter()
    spearman_distance_matrix(C)
    fast = time.perf_counter() - t0
    sub = C[:200]
    t0 = time.perf_counter()
    for i in range(sub.shape[0]):
        for j in range(i + 1, sub.shape[0]):
            spearman_distance(sub[i], sub[j])
    loop = (time.perf_counter() - t0) * (args.frames * (args.frames - 1)) / (200 * 199)
    print(f"Spearman distance matrix of {args.frames} frames: {fast:.3f} s in one product (target 1 s); "
          f"the pairwise loop would take {loop:.1f} s (ratio {loop / fast:.0f})")
    database(args.samples)


def database(classes: str) -> None:
    from isocloth.perception.comparison import stored_database
    from isocloth.perception.database import _simulate, representation_table

    db = stored_database()
    print(f"stored database: {db.labels.size} samples, {db.x.shape[1]} nodes; generation {db.wall.sum() / 60:.1f} min "
          f"of worker time for {db.simulated.sum():.0f} s simulated (real-time factor {db.simulated.sum() / db.wall.sum():.3f}); "
          f"per sample {np.median(db.wall):.1f} s median, {db.wall.max():.1f} s max")
    t0 = time.perf_counter()
    representation_table({"Database": (db.x, db.labels)}, db.segments, db.corners, db.boundary)
    print(f"Table 7.1 on it (five representations): {time.perf_counter() - t0:.1f} s")
    for label in [c for c in classes.split(",") if c]:
        for nodes in (12, 20):
            out = _simulate(label, 0, 0, nodes, max_wall=600.0)
            if out is None:
                print(f"class {label}, {nodes} x {nodes} nodes: every draw failed (diverged or over 600 s)")
                continue
            print(f"class {label}, {nodes} x {nodes} nodes: {out['wall']:.1f} s for {out['simulated']:.2f} s simulated "
                  f"(real-time factor {out['simulated'] / out['wall']:.3f}), {out['unconverged']} unconverged steps")


if __name__ == "__main__":
    main()
