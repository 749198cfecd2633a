"""cProfile of stepping: where the time of a step goes.

    python benchmarks/profile_step.py hang-a2 --steps 500
    python benchmarks/profile_step.py sheet:100 --steps 1      # 100x100-node 1 m sheet, two corners fixed

A warm-up step (capped at one projection iteration) is taken first, outside the profile. Prints
the top functions by own time and by cumulative time, and a breakdown into stages.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import configure_threads  # noqa: E402

THREADS = configure_threads()

import argparse  # noqa: E402
import cProfile  # noqa: E402
import pstats  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

from _common import build_sheet, print_machine  # noqa: E402

# (label, (file suffix, function name)) -- cumulative time of these calls, as a share of the run
STAGES = [
    ("Stepper.step (total)", ("step/stepper.py", "step")),
    ("  predictor (implicit Euler)", ("step/stepper.py", "predict")),
    ("  projection (SolverProjection.solve)", ("solvers/projection.py", "solve")),
    ("    factorization (SchurSystem.factorize, with assembly)", ("solvers/schur.py", "factorize")),
    ("      Schur assembly, lower triangle (numba schur_values)", ("solvers/_schur_kernels.py", "schur_values")),
    ("    KKT factorization (KKTSystem.factorize, implicit metric)", ("solvers/kkt.py", "factorize")),
    ("    triangular solves (SchurSystem.solve_factored)", ("solvers/schur.py", "solve_factored")),
    ("    displacement (numba apply_transpose)", ("solvers/schur.py", "displacement")),
    ("    constraint values + A x (numba constraint_values)", ("solvers/_schur_kernels.py", "constraint_values")),
    ("  area diagnostics (element_areas)", ("mesh/topology.py", "element_areas")),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scene", help="built-in scene name, or sheet:N for an N x N-node 1 m sheet")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--blas-threads", type=int, default=1, help="BLAS threads (0 = library default); default 1")
    ap.add_argument("--out", help="save the raw profile here (pstats format)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    print_machine(THREADS)
    if args.scene.startswith("sheet:"):
        n = int(args.scene.split(":")[1])
        sc = build_sheet(f"sheet-{n}", 1.0, 1.0, n, n, dt=0.01, duration=1.0)
    else:
        from isocloth.scenes.loader import load_scene

        sc = load_scene(args.scene)
    st, s0 = sc.stepper, sc.initial_state
    cap, st.solver.max_iterations = st.solver.max_iterations, 1
    st.step(s0)
    st.solver.max_iterations = cap
    its = []

    def run():
        s = s0
        for _ in range(args.steps):
            s, info = st.step(s)
            its.append(info.iterations)

    prof = cProfile.Profile()
    t = time.perf_counter()
    prof.enable()
    run()
    prof.disable()
    wall = time.perf_counter() - t
    print(f"\n{args.scene}: {sc.model.node_count} nodes, {sc.model.active_rows.size} enforced rows, {args.steps} steps, "
          f"{sum(its)} projection iterations, {wall:.2f} s under the profiler "
          f"({1e3 * wall / args.steps:.2f} ms/step)")
    stats = pstats.Stats(prof)
    if args.out:
        stats.dump_stats(args.out)
    total = sum(v[3] for k, v in stats.stats.items() if k[2] == "step" and k[0].endswith("step/stepper.py"))
    print("\nstage breakdown (cumulative time, share of Stepper.step):")
    for label, (suffix, fn) in STAGES:
        cum = sum(v[3] for k, v in stats.stats.items() if k[2] == fn and k[0].endswith(suffix))
        calls = sum(v[1] for k, v in stats.stats.items() if k[2] == fn and k[0].endswith(suffix))
        if calls:
            print(f"  {label:60s} {cum:8.3f} s {100 * cum / total:6.1f} %  ({calls} calls, "
                  f"{1e3 * cum / calls:.3f} ms/call)")
    print()
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
