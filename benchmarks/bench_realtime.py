"""Real-time factor of isocloth on small scenes, against quoted reference numbers.

Real-time factor = simulated seconds / wall seconds spent in ``Stepper.step`` (one process; the
scene is built and one throw-away warm-up step is taken first, so numba compilation, the
Schur-pattern precomputation and CHOLMOD's symbolic analysis are excluded and reported
separately as "setup").

Scenes
------
hang-a2      built-in scene (DIN A2 wool, 7×9 nodes, shaken top corners), dt 0.01, 10 s
a3-9x9       extra: hang-a2 with a 9×9-node A3 sheet (0.297 × 0.42 m), dt 0.01, 10 s
sheet-660    0.5 × 0.8 m light-cotton, 20×33 nodes, two top corners fixed, dt 1/60, 5 s
issue-20x20  1 × 1 m light-cotton, 20×20 nodes, two top corners fixed, dt 0.01, 5 s

Peak edge stretch = max over quad edges and frames of (len / rest_len − 1); max residual = largest
final relative constraint residual of any step (the solver stops at 1e-3).

Strategies (``_common.STRATEGIES``), each scene run with both in the same process, alternating:
new     the default SolverProjection (factor reuse / chord steps, nested-dissection ordering,
        simplicial CHOLMOD below 3000 rows, non-monotone line search);
before  the solver as it was before (a factorization per iteration, CHOLMOD's own mode and
        ordering, monotone line search) -- bit-identical to commit a2f9d68;
sub2, sub4  "new" with 2 / 4 equal sub-steps per step (``Stepper.substeps``): the step is still dt
        (same frames, same control rate), the solver steps dt/2 or dt/4.
The speed-up columns are before / new and new / subK of the same run. Sub-steps are a different
time discretisation (implicit Euler damps less at the shorter step), not the same trajectory faster.

Usage: python benchmarks/bench_realtime.py [--quick] [--only NAME ...] [--strategies new before sub4 ...]
       [--blas-threads N] [--json out.json]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import configure_threads  # noqa: E402

THREADS = configure_threads()

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from _common import STRATEGIES, EdgeStretch, build_sheet, print_machine, use_strategy  # noqa: E402

# Reference real-time factors, QUOTED from the issue / the papers, NOT measured here.
REFERENCES = {
    "hang-a2": [("authors' Python simulator, 7×9 A2", 38.0, None)],
    "a3-9x9": [("thesis (Coltraro), 9×9 A3", 6.7, None)],
    "sheet-660": [("authors' Python simulator, 660 nodes", 1.6, None)],
    "issue-20x20": [("MuJoCo flex", 1.4, "1.3"), ("PyBullet", 7.0, "24–41"), ("Newton VBD (CPU)", 0.3, "7–11")],
}


def a3_scene():
    from isocloth.scenes.loader import load_scene

    w, h = 0.297, 0.42
    return load_scene("hang-a2", [
        f"cloth.mesh.width={w}", f"cloth.mesh.height={h}", "cloth.mesh.nx=9", "cloth.mesh.ny=9",
        f"cloth.placement.translate=[0.0, 0.0, {1.0 - h / 2}]",
        f"grasps.0.nodes.nearest=[[{-w / 2}, 0.0, 1.0], [{w / 2}, 0.0, 1.0]]",
    ])


def scenes(quick: bool):
    from isocloth.scenes.loader import load_scene

    f = 0.2 if quick else 1.0
    return [
        ("hang-a2", lambda: load_scene("hang-a2"), 0.01, 10.0 * f),
        ("a3-9x9", a3_scene, 0.01, 10.0 * f),
        ("sheet-660", lambda: build_sheet("sheet-660", 0.5, 0.8, 20, 33, dt=1 / 60, duration=5.0), 1 / 60, 5.0 * f),
        # the issue's scene: 1 m x 1 m, 20x20 nodes, hanging from two corners for 5 s
        ("issue-20x20", lambda: build_sheet("issue-20x20", 1.0, 1.0, 20, 20, dt=0.01, duration=5.0), 0.01, 5.0 * f),
    ]


def simulate(name, make, dt, duration, strategy="new") -> dict:
    t0 = time.perf_counter()
    scene = make()
    st, s0 = use_strategy(scene.stepper, strategy), scene.initial_state
    st.step(s0, dt=dt)  # warm-up: numba kernels, Schur pattern, symbolic analysis
    setup = time.perf_counter() - t0
    stretch = EdgeStretch(scene.model.mesh)
    stretch.update(s0.x)
    n_steps = int(round(duration / dt))
    walls = np.empty(n_steps)
    cpus = np.empty(n_steps)
    its = np.empty(n_steps, dtype=np.int64)
    facts = np.empty(n_steps, dtype=np.int64)
    res = np.empty(n_steps)
    area_max = np.zeros(n_steps)
    unconverged = 0
    s = s0
    for k in range(n_steps):
        c, t = time.process_time(), time.perf_counter()
        s, info = st.step(s, dt=dt)
        walls[k] = time.perf_counter() - t
        cpus[k] = time.process_time() - c
        its[k] = info.iterations
        facts[k] = info.factorizations
        res[k] = info.residual
        unconverged += not info.converged
        area_max[k] = info.area_error_max
        stretch.update(s.x)
    wall = float(walls.sum())
    m = scene.model
    return {
        "scene": name, "strategy": strategy, "nodes": m.node_count, "constraints": int(m.constraint_count),
        "active_rows": int(m.active_rows.size), "dt": dt, "duration": duration, "steps": n_steps,
        "mean_iterations": float(its.mean()), "max_iterations": int(its.max()),
        "mean_factorizations": float(facts.mean()),
        "max_residual": float(res.max()), "unconverged_steps": int(unconverged),
        "peak_stretch_pct": 100 * stretch.peak, "peak_compression_pct": -100 * stretch.min,
        "peak_boundary_stretch_pct": 100 * stretch.peak_boundary, "mean_abs_strain_pct": 100 * stretch.mean_abs,
        "max_element_area_error_pct": 100 * float(np.nanmax(area_max)),
        "ms_per_step": 1e3 * wall / n_steps, "median_ms_per_step": 1e3 * float(np.median(walls)),
        "p99_ms_per_step": 1e3 * float(np.percentile(walls, 99)),
        "wall_s": wall, "rtf": n_steps * dt / wall, "setup_s": setup,
        "cpu_ms_per_step": 1e3 * float(cpus.sum()) / n_steps, "rtf_cpu": n_steps * dt / float(cpus.sum()),
    }


def fmt_dt(dt):
    return "1/60" if abs(dt - 1 / 60) < 1e-12 else f"{dt:g}"


def print_tables(rows) -> None:
    print("\n### Measured (this machine)\n")
    print("(iterations and factorizations are per step of dt, summed over its sub-steps)\n")
    print("| scene | strategy | nodes | constraints (enforced/total) | dt [s] | sim [s] | mean it/step (max) "
          "| factorizations/step | max residual | peak edge stretch % | ms/step (median, p99) | real-time factor "
          "| CPU ms/step | RTF by CPU time | setup [s] |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['scene']} | {r['strategy']} | {r['nodes']} | {r['active_rows']}/{r['constraints']} "
              f"| {fmt_dt(r['dt'])} | {r['duration']:g} | {r['mean_iterations']:.2f} ({r['max_iterations']}) "
              f"| {r['mean_factorizations']:.2f} | {r['max_residual']:.2e} "
              f"| {r['peak_stretch_pct']:.3f} | {r['ms_per_step']:.2f} ({r['median_ms_per_step']:.2f}, "
              f"{r['p99_ms_per_step']:.2f}) | **{r['rtf']:.3g}×** | {r['cpu_ms_per_step']:.2f} | {r['rtf_cpu']:.3g}× "
              f"| {r['setup_s']:.2f} |")
    print("\n(real-time factor = simulated s / wall s in Stepper.step; 'by CPU time' uses this process's CPU time "
          "instead, which approximates an idle machine when other processes compete for the cores)")
    by = {(r["scene"], r["strategy"]): r for r in rows}
    # (slower, faster) pairs of the same scene: before → new, and new → each sub-step strategy
    pairs = [(by[(sc, "before")], by[(sc, "new")]) for sc, stg in by if stg == "new" and (sc, "before") in by]
    pairs += [(by[(sc, "new")], by[(sc, stg)]) for sc, stg in by if stg.startswith("sub") and (sc, "new") in by]
    if pairs:
        print("\n### Speed-up over the same run's baseline (before → new; new → sub-steps)\n")
        print("| scene | strategies | it/step a → b | factorizations/step a → b | CPU ms/step a → b "
              "| **speed-up (CPU)** | speed-up (wall) | RTF (CPU) a → b | peak stretch % a → b |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for b, n in pairs:
            print(f"| {n['scene']} | {b['strategy']} → {n['strategy']} "
                  f"| {b['mean_iterations']:.2f} → {n['mean_iterations']:.2f} "
                  f"| {b['mean_factorizations']:.2f} → {n['mean_factorizations']:.2f} "
                  f"| {b['cpu_ms_per_step']:.2f} → {n['cpu_ms_per_step']:.2f} "
                  f"| **{b['cpu_ms_per_step'] / n['cpu_ms_per_step']:.2f}×** | {b['ms_per_step'] / n['ms_per_step']:.2f}× "
                  f"| {b['rtf_cpu']:.3g}× → {n['rtf_cpu']:.3g}× | {b['peak_stretch_pct']:.2f} → {n['peak_stretch_pct']:.2f} |")
    print("\nEdge strain detail (all frames): peak stretch is over all quad sides; the constraints hold boundary "
          "edges exactly and interior metrics only as nodal averages.\n")
    print("| scene | strategy | unconverged steps | peak stretch % | peak compression % | peak boundary-edge stretch % "
          "| mean abs edge strain % | max element area error % |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['scene']} | {r['strategy']} | {r['unconverged_steps']} | {r['peak_stretch_pct']:.3f} "
              f"| {r['peak_compression_pct']:.3f} | {r['peak_boundary_stretch_pct']:.3f} | {r['mean_abs_strain_pct']:.3f} "
              f"| {r['max_element_area_error_pct']:.3f} |")
    print("\n### Against reference numbers — QUOTED from the issue/papers, NOT measured here\n")
    print("| scene | strategy | reference (quoted) | reference RTF | reference stretch % "
          "| isocloth RTF (measured, wall / CPU) | isocloth peak stretch % | ratio isocloth/reference (wall / CPU) |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        for label, rtf, st in REFERENCES.get(r["scene"], []):
            print(f"| {r['scene']} | {r['strategy']} | {label} | {rtf:g}× | {st or '–'} "
                  f"| {r['rtf']:.3g}× / {r['rtf_cpu']:.3g}× "
                  f"| {r['peak_stretch_pct']:.2f} | {r['rtf'] / rtf:.2f} / {r['rtf_cpu'] / rtf:.2f} |")
    print("\n(The reference figures were measured by others on other machines and, for MuJoCo/PyBullet/Newton,"
          " with other models; they are quoted for orientation only.)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="simulate 1/5 of each duration (smoke test)")
    ap.add_argument("--blas-threads", type=int, default=1, help="BLAS threads (0 = library default); default 1")
    ap.add_argument("--only", nargs="*", help="subset of scene names")
    ap.add_argument("--strategies", nargs="*", default=["new", "before", "sub4"], choices=sorted(STRATEGIES),
                    help="projection strategies to run (default: new before sub4)")
    ap.add_argument("--json", help="write the results to this JSON file")
    args = ap.parse_args()
    print_machine(THREADS)
    rows = []
    t_all = time.perf_counter()
    for name, make, dt, dur in scenes(args.quick):
        if args.only and name not in args.only:
            continue
        # alternate the order of the strategies from scene to scene (load drifts over time)
        order = args.strategies if len(rows) % 2 == 0 else args.strategies[::-1]
        for strategy in order:
            r = simulate(name, make, dt, dur, strategy)
            print(f"  {name} [{strategy}]: {r['steps']} steps, {r['wall_s']:.2f} s wall, RTF {r['rtf']:.3g}× "
                  f"(CPU {r['rtf_cpu']:.3g}×), {r['mean_iterations']:.2f} it/step, "
                  f"{r['mean_factorizations']:.2f} factorizations/step", flush=True)
            rows.append(r)
    rows.sort(key=lambda r: ([n for n, *_ in scenes(False)].index(r["scene"]), r["strategy"] != "new"))
    print_tables(rows)
    print(f"\ntotal benchmark time {time.perf_counter() - t_all:.1f} s; load average at the end "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": THREADS, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
