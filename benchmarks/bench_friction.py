"""The friction problem of the contact projection (``isocloth.solvers.friction``): the default solve
(Gauss–Seidel sweeps, then the semismooth Newton method on the natural map) against Gauss–Seidel
alone with the same cap, on the same problems, interleaved.

Problems: every friction problem met while a sheet of the folding database (thesis §7.4.2, class
02, sample 0) is simulated for a number of steps after its fold, lying on the table with μ = 0.5:
the tangential Delassus operator D of the contacts, the slips, the disc radii μΓ and the normal
coupling ∂Γ/∂F, recorded from the default solver's calls. Each problem is then solved by both
methods; a reference comes from Gauss–Seidel run to 1e-16 m (up to 200,000 sweeps). Reported per
sheet model and size: problems, median contacts, the wall time of each method, median and cap
counts of the sweeps, the Newton steps, the largest slip error against the reference [m], the
problems left unconverged, and the ratio Gauss–Seidel / default.

Usage: python benchmarks/bench_friction.py [--nodes 12] [--steps 15]
       [--modes quasi-inextensible inextensible]
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


def record_problems(mode: str, nodes: int, steps: int) -> list:
    """(args, kwargs) of every solve_disc_friction call over ``steps`` steps of the sample."""
    import isocloth.solvers.friction as friction
    from isocloth.perception.database import draw_sample
    from isocloth.perception.folding import sample_config
    from isocloth.scenes.loader import build_scene, config_from_dict

    calls = []
    solve = friction.solve_disc_friction

    def recording(*args, **kwargs):
        calls.append((args, kwargs))
        return solve(*args, **kwargs)

    friction.solve_disc_friction = recording
    try:
        sample, seed = draw_sample("02", 0, 0)
        cfg, _ = sample_config(sample, seed=seed, nodes=nodes, constraint_mode=mode)
        scene = build_scene(config_from_dict(cfg, "bench-friction"))
        state = scene.initial_state
        for _ in range(steps):
            state, _ = scene.stepper.step(state)
    finally:
        friction.solve_disc_friction = solve
    return calls


def gauss_seidel_only(args, kwargs):
    """The problem solved by Gauss–Seidel sweeps alone (the Newton method never starts)."""
    import isocloth.solvers.friction as friction

    warm = friction.WARM_SWEEPS
    friction.WARM_SWEEPS = 10 ** 9
    try:
        return friction.solve_disc_friction(*args, **kwargs)
    finally:
        friction.WARM_SWEEPS = warm


def main() -> None:
    from isocloth.solvers.friction import solve_disc_friction

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[12])
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--modes", nargs="+", default=["quasi-inextensible", "inextensible"])
    a = ap.parse_args()
    print_machine(THREADS)
    print("| sheet | nodes | problems | median contacts | Gauss–Seidel [s] | default [s] | GS sweeps median (at cap) "
          "| default sweeps + Newton steps (median) | max slip error GS / default [m] | unconverged GS / default "
          "| **GS / default** |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for nodes in a.nodes:
        for mode in a.modes:
            calls = [c for c in record_problems(mode, nodes, a.steps) if len(c[0][3])]
            t_gs = t_new = 0.0
            gs_sweeps, new_steps, err_gs, err_new, unc_gs, unc_new, cap = [], [], 0.0, 0.0, 0, 0, 0
            for args, kwargs in calls:
                t0 = time.perf_counter()
                gs = gauss_seidel_only(args, kwargs)
                t1 = time.perf_counter()
                new = solve_disc_friction(*args, **kwargs)
                t2 = time.perf_counter()
                t_gs += t1 - t0
                t_new += t2 - t1
                ref = gauss_seidel_only(args, dict(kwargs, tolerance=1e-16, max_sweeps=200_000))
                D = np.asarray(args[0])
                err_gs = max(err_gs, float(np.abs(D @ (gs.F - ref.F).ravel()).max()))
                err_new = max(err_new, float(np.abs(D @ (new.F - ref.F).ravel()).max()))
                gs_sweeps.append(gs.sweeps)
                cap += gs.sweeps >= kwargs.get("max_sweeps", 500)
                new_steps.append((new.sweeps, new.newton_iterations))
                unc_gs += not gs.converged
                unc_new += not new.converged
            contacts = np.median([len(c[0][3]) for c in calls])
            sw = np.median([s for s, _ in new_steps])
            it = np.median([k for _, k in new_steps])
            print(f"| {mode} | {nodes * nodes} | {len(calls)} | {contacts:.0f} | {t_gs:.2f} | {t_new:.2f} | "
                  f"{np.median(gs_sweeps):.0f} ({cap}) | {sw:.0f} + {it:.0f} | {err_gs:.1e} / {err_new:.1e} | "
                  f"{unc_gs} / {unc_new} | **{t_gs / max(t_new, 1e-12):.2f}** |", flush=True)


if __name__ == "__main__":
    main()
