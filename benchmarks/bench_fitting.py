"""Parameter fitting on synthetic recordings: accuracy, evaluations, wall time, parallel speed-up.

A synthetic recording of ``hang-a2`` (DIN A2 wool, 4×5 markers, κ = 1e-3, flat rest shape) at
(δ, α) = (0.5ρ, 2ρ) with Gaussian marker noise and 5 % dropouts is fitted with the default
procedure (grid sweep + Nelder–Mead), once in this process and once over ``--workers`` local
processes (the grid stage is parallel, Nelder–Mead sequential). Printed: recovered parameters and
their relative errors, ē against the noise level √3 σ, evaluations, wall time, and the speed-up of
the parallel run relative to the serial one measured in the same run. ``--compare`` adds the model
comparison table (thesis Table 4.3 layout).

``--friction`` fits μ instead (δ, α fixed at the truth) on the synthetic tablecloth drag of
tests/validation/data/tablecloth-drag.toml, low (μ = 0) and high (μ = 1) friction: 4 cell-centred
grid values in [0, 2], then bounded Brent (as tests/validation/test_friction_fit.py), and prints
the μ scan ē(μ) of each recording (``--scan``: the μ values).

Usage: python benchmarks/bench_fitting.py [--duration 3] [--noise 0.5e-3] [--grid 6] [--maxfev 40]
                                          [--workers 2] [--seeds 1 2 3] [--compare] [--blas-threads N]
       python benchmarks/bench_fitting.py --friction [--seeds 1 2 3] [--scan 0 0.05 0.1 ...]
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
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--noise", type=float, default=0.5e-3)
    ap.add_argument("--grid", type=int, default=6)
    ap.add_argument("--maxfev", type=int, default=40)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--compare", action="store_true", help="also tabulate the four cloth models")
    ap.add_argument("--friction", action="store_true", help="fit mu on the synthetic tablecloth drag instead")
    ap.add_argument("--scan", type=float, nargs="*",
                    default=[0.0, 0.02, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0])
    ap.add_argument("--blas-threads", default=None)
    args = ap.parse_args()

    from isocloth.model import fabric
    from isocloth.validation.fitting import FitProblem, fit, make_evaluator
    from isocloth.validation.synth import synthesize

    print_machine(THREADS)
    if args.friction:
        friction(args)
        return
    rho = fabric("wool").rho
    true = {"delta": 0.5 * rho, "alpha": 2.0 * rho}
    scene_set = ("cloth.kappa=1e-3", "cloth.noise.sigma=0.0")
    truth_set = list(scene_set) + [f"cloth.delta={true['delta']!r}", f"cloth.alpha={true['alpha']!r}"]
    level = np.sqrt(3) * args.noise
    print(f"\nhang-a2 round trip: {args.duration} s, σ = {1e3 * args.noise:.2f} mm (noise level √3σ = "
          f"{1e3 * level:.2f} mm), 5 % dropouts, grid {args.grid}², Nelder–Mead ≤ {args.maxfev}\n")
    print("| seed | workers | δ/ρ | α/ρ | δ error | α error | ē [mm] | ē / √3σ | evaluations | wall [s] | speed-up |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for seed in args.seeds:
        rec = synthesize("hang-a2", truth_set, duration=args.duration, noise=args.noise, dropout=0.05, seed=seed,
                         shuffle=True)
        problem = FitProblem(rec, "hang-a2", scene_set)
        serial_time = None
        for workers in (1, args.workers):
            ev = make_evaluator(problem, workers=workers)
            t0 = time.perf_counter()
            try:
                res = fit(problem, grid=args.grid, maxfev=args.maxfev, sensitivity=0, a_priori=None, evaluator=ev)
            finally:
                ev.close()
            wall = time.perf_counter() - t0
            serial_time = serial_time or wall
            d, a = res.parameters["delta"], res.parameters["alpha"]
            e = res.metrics["mean_error"]
            print(f"| {seed} | {workers} | {d / rho:.4f} | {a / rho:.4f} | {100 * (d / true['delta'] - 1):+.2f} % | "
                  f"{100 * (a / true['alpha'] - 1):+.2f} % | {1e3 * e:.3f} | {e / level:.2f} | "
                  f"{len(res.evaluations)} | {wall:.1f} | {serial_time / wall:.2f}× |")
    if args.compare:
        from isocloth.validation.comparison import compare_models

        rec = synthesize("hang-a2", truth_set, duration=args.duration, noise=args.noise, dropout=0.05,
                         seed=args.seeds[0])
        t0 = time.perf_counter()
        comp = compare_models(rec, "hang-a2", scene_set, grid=3, maxfev=20, workers=args.workers)
        print(f"\nmodel comparison on the same data ({time.perf_counter() - t0:.0f} s):\n")
        print(comp.table())


_SCENE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "validation", "data",
                      "tablecloth-drag.toml")


def _friction_problem(mu_true: float, seed: int, noise: float):
    from isocloth.validation.fitting import FitProblem
    from isocloth.validation.replay import ReplayOptions
    from isocloth.validation.synth import synthesize

    rec = synthesize(_SCENE, [f"obstacles.0.mu={mu_true!r}"], noise=noise, dropout=0.05, seed=seed)
    tr = rec.metadata["truth"]
    return FitProblem(rec, _SCENE, options=ReplayOptions(grasp=tuple(tr["grasped"])),
                      fixed={"delta": tr["delta"], "alpha": tr["alpha"]})


def _friction_fit(job):
    """One μ fit in this process (synthesis included): (true μ, seed, FitResult, wall [s])."""
    from isocloth.validation.fitting import ParameterSpec, fit

    mu_true, seed, noise = job
    t0 = time.perf_counter()
    problem = _friction_problem(mu_true, seed, noise)
    res = fit(problem, parameters=[ParameterSpec("mu", 0.0, 2.0)], grid=4, maxfev=8, xatol=0.02, sensitivity=0,
              a_priori=None)
    return mu_true, seed, res, time.perf_counter() - t0


def friction(args) -> None:
    """μ round trips on the synthetic tablecloth drag (low and high friction) and their μ scans."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from isocloth.validation.fitting import make_evaluator

    level = np.sqrt(3) * args.noise
    print(f"\nμ round trip, tablecloth drag (1.5 s): σ = {1e3 * args.noise:.2f} mm (noise level "
          f"{1e3 * level:.2f} mm), 5 % dropouts, grid 4 in [0, 2] + bounded Brent (xatol 0.04), the two fits "
          f"side by side (2 processes)\n")
    print("| seed | true μ | fitted μ | ē [mm] | ē / √3σ | evaluations | wall [s] |")
    print("|---|---|---|---|---|---|---|")
    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    for seed in args.seeds:
        t0 = time.perf_counter()
        with ProcessPoolExecutor(2, mp_context=ctx) as pool:
            out = list(pool.map(_friction_fit, [(0.0, seed, args.noise), (1.0, seed, args.noise)]))
        for mu_true, sd, res, wall in out:
            e = res.metrics["mean_error"]
            print(f"| {sd} | {mu_true:g} | {res.parameters['mu']:.4f} | {1e3 * e:.3f} | {e / level:.2f} | "
                  f"{len(res.evaluations)} | {wall:.0f} |")
        print(f"| {seed} | both | | | | | {time.perf_counter() - t0:.0f} (side by side) |", flush=True)
    if args.scan:
        print(f"\nμ scans (seed {args.seeds[0]}), ē [mm]:\n")
        print("| true μ | " + " | ".join(f"{m:g}" for m in args.scan) + " |")
        print("|---|" + "---|" * len(args.scan))
        for mu_true in (0.0, 1.0):
            problem = _friction_problem(mu_true, args.seeds[0], args.noise)
            ev = make_evaluator(problem, workers=args.workers)
            try:
                rows = ev.map([{"mu": m} for m in args.scan])
            finally:
                ev.close()
            print(f"| {mu_true:g} | " + " | ".join(f"{1e3 * r['mean_error']:.2f}" for r in rows) + " |", flush=True)


if __name__ == "__main__":
    main()
