"""Cost of a step vs mesh size, and the linear-solve backends (dense / sparse crossover).

Part 1 — stepping: square 1 m × 1 m light-cotton quad sheets (N×N nodes, N = 20, 32, 50, 71, 100)
hanging from their two top corners (fixed), dt 0.01. A warm-up step (numba compilation,
Schur pattern, CHOLMOD symbolic analysis), then a few dozen timed steps. Reports ms/step, mean
fast-projection iterations and factorizations, ms per iteration (projection time / iterations),
the share of the step spent in the projection, and the growth exponent (log-log slope of ms/step
vs nodes) -- for each projection strategy of ``_common.STRATEGIES`` ("new": the default solver
with factor reuse; "before": a factorization per iteration as before, bit-identical to commit
a2f9d68; "sub2"/"sub4"/"sub8": "new" with 2/4/8 equal sub-steps per step of dt, ``Stepper.substeps``),
run one after the other in the same process, with the speed-ups before / new and new / subK
(iterations and factorizations per step of dt, summed over its sub-steps).

Part 2 — backends: at the last state of each run (and, for the crossover, at smaller sheets
after 10 steps), the Schur complement S = ∇C M⁻¹ ∇Cᵀ of the enforced rows is built once with
``SchurSystem(..., dense=False).matrix(AX)`` and, for c = C(x):

- ``spd_factor(S, regularization=1e-9, backend=b).solve(c)`` for b = dense (k ≤ 3000; S passed as
  an ndarray, conversion not timed), cholmod (scikit-sparse when installed, else cholespy; a new
  analysis + factorization on every call), splu (SciPy SuperLU);
- the cholespy wheel alone (through ``linalg._cholespy``; analysis + factorization every call);
- CHOLMOD through scikit-sparse as SchurSystem uses it (symbolic analysis once, then
  ``cholesky_inplace`` + solve per iteration), with the analysis time shown separately;
- the whole per-iteration linear-algebra path ``SchurSystem.solve(AX, c)`` (assembly + factor +
  solve) with dense=True (LAPACK) and dense=False (sparse CHOLMOD) -- the sparse one with the
  previous CHOLMOD choice (mode and ordering left to CHOLMOD) and with the new one (nested
  dissection; simplicial below 3000 rows, supernodal above): this is what ``DENSE_LIMIT`` in
  ``isocloth/solvers/linalg.py`` chooses between.

Each backend timing is the smallest CPU time of this process over repeats (≥ 1, up to ~0.4 s of
wall per measurement; the largest sizes get a single repeat): on a shared machine wall times of
anything longer than a scheduler time slice include the other processes. BLAS is single-threaded
(default), so CPU time ≈ wall time on an idle core.

Usage: python benchmarks/bench_scaling.py [--quick] [--steps 30] [--sizes 20 32 50 71 100]
       [--budget 420] [--strategies new before] [--blas-threads N] [--json out.json]
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
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from _common import STRATEGIES, build_sheet, print_machine, use_strategy  # noqa: E402

DT = 0.01
DENSE_MAX = 3000


def _cholmod_lib() -> str:
    try:
        import sksparse.cholmod  # noqa: F401

        return "scikit-sparse (new analysis every call)"
    except ImportError:
        return "cholespy"


CHOLMOD_LIB = _cholmod_lib()


def timeit(f, budget=0.4, max_rep=15):
    """Smallest CPU time [ms] of this process for f() over repeats (at least one; ~budget s of wall).

    CPU time, and the minimum, because on a shared machine the wall time of anything longer than a
    scheduler time slice measures the other processes too (BLAS runs single-threaded here)."""
    ts = []
    t_end = time.perf_counter() + budget
    while len(ts) < max_rep:
        c = time.process_time()
        f()
        ts.append(time.process_time() - c)
        if time.perf_counter() > t_end:
            break
    return 1e3 * float(np.min(ts))


class _Timed:
    """Wraps a callable and accumulates its wall (t) and CPU (cpu) time."""

    def __init__(self, f):
        self.f, self.t, self.cpu = f, 0.0, 0.0

    def __call__(self, *a, **k):
        c, t = time.process_time(), time.perf_counter()
        try:
            return self.f(*a, **k)
        finally:
            self.t += time.perf_counter() - t
            self.cpu += time.process_time() - c


def sheet(n):
    return build_sheet(f"sheet-{n}x{n}", 1.0, 1.0, n, n, dt=DT, duration=1.0)


def run_size(n, steps, step_budget_s, strategy="new"):
    """Warm up, then time up to `steps` steps from the initial state, fewer when the next step would
    overrun `step_budget_s` (at least one). Returns (row, scene, final state)."""
    t0 = time.perf_counter()
    sc = sheet(n)
    build = time.perf_counter() - t0
    st, s0 = use_strategy(sc.stepper, strategy), sc.initial_state
    # warm-up: one step capped at one projection iteration (compiles the numba kernels, builds the
    # Schur pattern and CHOLMOD's symbolic analysis, which the solver caches) -- a full step costs
    # ~1 min at 100x100
    t0 = time.perf_counter()
    cap, st.solver.max_iterations = st.solver.max_iterations, 1
    try:
        st.step(s0)
    finally:
        st.solver.max_iterations = cap
    warm = time.perf_counter() - t0
    proj, pred = _Timed(st.project), _Timed(st.predict)
    st.project, st.predict = proj, pred  # instance attributes shadow the methods step() calls
    walls, cpus, its, facts, res, unconv = [], [], [], [], [], 0
    t_start = time.perf_counter()
    s = s0
    for k in range(steps):
        c, t = time.process_time(), time.perf_counter()
        s, info = st.step(s)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
        its.append(info.iterations)
        facts.append(info.factorizations)
        res.append(info.residual)
        unconv += not info.converged
        if time.perf_counter() - t_start + walls[-1] > step_budget_s:
            break
    del st.project, st.predict
    walls = np.array(walls)
    m = sc.model
    total_its = int(np.sum(its))
    row = {
        "N": n, "strategy": strategy, "nodes": m.node_count, "rows": int(m.active_rows.size), "steps": len(walls),
        "steps_requested": steps, "build_s": build, "warmup_s": warm,
        "ms_per_step": 1e3 * walls.mean(), "cpu_ms_per_step": 1e3 * float(np.mean(cpus)), "median_ms_per_step": 1e3 * float(np.median(walls)),
        "mean_iterations": float(np.mean(its)), "max_iterations": int(np.max(its)),
        "mean_factorizations": float(np.mean(facts)),
        "ms_per_iteration": 1e3 * proj.t / max(total_its, 1), "cpu_ms_per_iteration": 1e3 * proj.cpu / max(total_its, 1),
        "projection_share": proj.t / walls.sum(), "predictor_share": pred.t / walls.sum(),
        "max_residual": float(np.max(res)), "unconverged_steps": unconv,
        "max_iterations_cap": st.solver.max_iterations,
        "cpu_per_step": [float(c) for c in cpus], "wall_per_step": [float(w) for w in walls],
        "its_per_step": [int(i) for i in its], "facts_per_step": [int(f) for f in facts],
    }
    return row, sc, s


def backend_times(sc, x, *, include_slow=True):
    """Linear-solve timings at positions x for the scene's Schur complement."""
    from isocloth.solvers.linalg import spd_factor
    from isocloth.solvers.schur import SchurSystem, _cholmod

    m = sc.model
    C, rows, w = m.constraints, m.active_rows, m.inverse_masses
    AX = C.A @ x
    c = np.ascontiguousarray(C.value_from(AX, x)[rows])
    # the sparse system as the solver factored it before (CHOLMOD's own mode and ordering)
    sparse_sys = SchurSystem(C.pair_row, C.pair_node, rows, w, C.row_count, dense=False,
                             cholmod_mode="cholmod", ordering="default")
    new_sys = SchurSystem(C.pair_row, C.pair_node, rows, w, C.row_count, dense=False)  # current defaults
    S = sparse_sys.matrix(AX).copy()
    k = S.shape[0]
    out = {"k": k, "nnz_S": int(S.nnz)}
    sol = {}

    def run(b, M):
        sol[b] = spd_factor(M, regularization=1e-9, backend=b).solve(c)

    if k <= DENSE_MAX:
        D = S.toarray()
        out["dense_ms"] = timeit(lambda: run("dense", D))
        dense_sys = SchurSystem(C.pair_row, C.pair_node, rows, w, C.row_count, dense=True)
        out["asm_dense_ms"] = timeit(lambda: dense_sys._assemble(AX))  # lower triangle, as the solver
        out["path_dense_ms"] = timeit(lambda: dense_sys.solve(AX, c, 1e-9, "dense"))
        del D, dense_sys
    # spd_factor's "cholmod" backend: scikit-sparse when installed (fresh analysis every call), else cholespy
    out["cholmod_ms"] = timeit(lambda: run("cholmod", S))
    # the cholespy wheel itself (analysis + factorization on every call), timed through linalg's wrapper
    try:
        import cholespy  # noqa: F401
        import scipy.sparse as sp

        from isocloth.solvers.linalg import _cholespy

        eps0 = 1e-9 * float(S.diagonal().max())

        def run_cholespy():
            Ss = sp.csc_matrix(S) + eps0 * sp.identity(k, format="csc")
            sol["cholespy"] = _cholespy(Ss)(c)

        out["cholespy_ms"] = timeit(run_cholespy)
    except ImportError:
        pass
    if include_slow or k <= 20000:
        out["splu_ms"] = timeit(lambda: run("splu", S), budget=0.2, max_rep=5)
    out["asm_sparse_ms"] = timeit(lambda: sparse_sys._assemble(AX))  # lower triangle, as the solver
    cm = _cholmod()
    if cm is not None:
        eps = 1e-9 * float(S.diagonal().max())
        out["sks_analyze_ms"] = timeit(lambda: cm.analyze(S, mode="auto"), max_rep=5)
        f = cm.analyze(S, mode="auto")
        out["sks_factor_ms"] = timeit(lambda: f.cholesky_inplace(S, beta=eps))
        out["sks_solve_ms"] = timeit(lambda: f(c))
        out["nnz_L"] = int(f.L().nnz)
        sol["sksparse"] = f(c)
        sparse_sys.solve(AX, c, 1e-9, "auto")  # analysis done once here, as in the solver
        out["path_sparse_ms"] = timeit(lambda: sparse_sys.solve(AX, c, 1e-9, "auto"))
        sol["new"] = new_sys.solve(AX, c, 1e-9, "auto")
        out["path_new_ms"] = timeit(lambda: new_sys.solve(AX, c, 1e-9, "auto"))
        out["new_factor_ms"] = timeit(lambda: new_sys.factorize(AX, 1e-9))
        out["new_solve_ms"] = timeit(lambda: new_sys.solve_factored(c))
        out["new_mode"] = f"{new_sys.cholmod_mode}/{new_sys.ordering}"
        try:
            out["nnz_L_new"] = int(new_sys._symbolic.L().nnz)
        except Exception:  # pragma: no cover - depends on the factor kind
            pass
    ref = sol.get("splu", sol.get("sksparse"))
    out["max_rel_diff"] = max(float(np.linalg.norm(v - ref) / max(np.linalg.norm(ref), 1e-300)) for v in sol.values())
    return out


def slope(xs, ys):
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def fmt(v, nd=2):
    return "–" if v is None else f"{v:.{nd}f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[20, 32, 50, 71, 100], help="nodes per side")
    ap.add_argument("--crossover-sizes", type=int, nargs="*", default=[8, 10, 12, 14, 16, 18, 24, 28],
                    help="extra (small) sheets for the backend-only crossover sweep")
    ap.add_argument("--steps", type=int, default=30, help="timed steps per size (after warm-up)")
    ap.add_argument("--budget", type=float, default=420.0,
                    help="wall-time budget [s] for the stepping part (all strategies); later sizes get fewer steps")
    ap.add_argument("--strategies", nargs="*", default=["new", "before"], choices=sorted(STRATEGIES),
                    help="projection strategies to time (default: new before)")
    ap.add_argument("--quick", action="store_true", help="sizes 20 32 50, 10 steps")
    ap.add_argument("--blas-threads", type=int, default=1, help="BLAS threads (0 = library default); default 1")
    ap.add_argument("--json", help="write the results to this JSON file")
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.steps, args.crossover_sizes = [20, 32, 50], 10, [10, 14]
    warnings.filterwarnings("ignore", category=UserWarning)  # sksparse's "not in CSC format" notes
    print_machine(THREADS)
    print(f"sheets: 1 m x 1 m, light-cotton, two top corners fixed, dt {DT}, warm-up = 1 step capped at 1 iteration, "
          f"{args.steps} timed steps requested per size, stepping budget {args.budget:.0f} s")
    t_all = time.perf_counter()

    rows, backs = [], []
    sizes = sorted(args.sizes)
    # the old strategy costs ~1.5-2x more per step: give it the larger share of each size's budget
    share = {"new": 1.0, "before": 2.0}
    for i, n in enumerate(sizes):
        spent = time.perf_counter() - t_all
        # share what is left of the budget, giving the larger (later) sizes the larger part
        left = max(args.budget - spent, 10.0)
        weights = np.array([s**2 for s in sizes[i:]], float) ** 1.3  # rough cost growth
        size_budget = left * weights[0] / weights.sum()
        total_share = sum(share.get(k, 1.0) for k in args.strategies)
        steps = args.steps
        for strategy in args.strategies:
            step_budget = size_budget * share.get(strategy, 1.0) / total_share
            row, sc, s = run_size(n, steps, step_budget, strategy)
            rows.append(row)
            steps = min(steps, row["steps"])  # the next strategy times the same steps of the fall
            note = "" if row["steps"] == row["steps_requested"] else f" (cut to {row['steps']} steps by the budget)"
            print(f"  {n}x{n} [{strategy}]: {row['nodes']} nodes, {row['rows']} rows, {row['ms_per_step']:.1f} ms/step "
                  f"(CPU {row['cpu_ms_per_step']:.1f}), {row['mean_iterations']:.2f} it/step, "
                  f"{row['mean_factorizations']:.2f} factorizations/step, {row['unconverged_steps']} unconverged, "
                  f"budget {step_budget:.0f} s{note}", flush=True)
        b = backend_times(sc, s.x)
        b.update(N=n, nodes=row["nodes"], state="after run")
        backs.append(b)
        print(f"    backends done (k = {b['k']})", flush=True)

    for n in sorted(args.crossover_sizes):
        if n in sizes:
            continue
        sc = sheet(n)
        s = sc.initial_state
        for _ in range(10):
            s, _ = sc.stepper.step(s)
        b = backend_times(sc, s.x)
        b.update(N=n, nodes=sc.model.node_count, state="after 10 steps")
        backs.append(b)
    backs.sort(key=lambda b: b["k"])

    # ---------------------------------------------------------------- tables
    print("\n### Stepping cost vs size\n")
    print("| N×N | strategy | nodes | enforced rows | timed steps | ms/step (median) | CPU ms/step | mean it/step (max) "
          "| factorizations/step | ms/iteration (CPU) | projection share | unconverged steps | max residual | warm-up [s] |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        cut = "" if r["steps"] == r["steps_requested"] else " (cut by budget)"
        print(f"| {r['N']}² | {r['strategy']} | {r['nodes']} | {r['rows']} | {r['steps']}{cut} | {r['ms_per_step']:.1f} "
              f"({r['median_ms_per_step']:.1f}) | {r['cpu_ms_per_step']:.1f} | {r['mean_iterations']:.2f} ({r['max_iterations']}) "
              f"| {r['mean_factorizations']:.2f} "
              f"| {r['ms_per_iteration']:.1f} ({r['cpu_ms_per_iteration']:.1f}) | {100 * r['projection_share']:.0f} % | {r['unconverged_steps']} "
              f"| {r['max_residual']:.1e} | {r['warmup_s']:.2f} |")
    by = {(r["N"], r["strategy"]): r for r in rows}
    # (baseline, variant) pairs of the same size: before → new, and new → each sub-step strategy
    pairs = [(by[(n, "before")], by[(n, "new")]) for n in sizes if (n, "before") in by and (n, "new") in by]
    pairs += [(by[(n, "new")], by[(n, stg)]) for n in sizes for stg in args.strategies
              if stg.startswith("sub") and (n, "new") in by and (n, stg) in by]
    if pairs:
        print("\n### Speed-up over the same run's baseline (before → new; new → sub-steps; same first steps)\n")
        print("| N×N | strategies a → b | timed steps | it/step a → b | factorizations/step a → b "
              "| CPU ms/step a → b | **speed-up (CPU)** | speed-up (wall) | unconverged a → b |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for b, n_ in pairs:
            k = min(b["steps"], n_["steps"])
            cb, cn = np.mean(b["cpu_per_step"][:k]), np.mean(n_["cpu_per_step"][:k])
            wb, wn = np.mean(b["wall_per_step"][:k]), np.mean(n_["wall_per_step"][:k])
            mi = [np.mean(r["its_per_step"][:k]) for r in (b, n_)]
            mf = [np.mean(r["facts_per_step"][:k]) for r in (b, n_)]
            print(f"| {n_['N']}² | {b['strategy']} → {n_['strategy']} | {k} | {mi[0]:.2f} → {mi[1]:.2f} "
                  f"| {mf[0]:.2f} → {mf[1]:.2f} "
                  f"| {1e3 * cb:.1f} → {1e3 * cn:.1f} | **{cb / cn:.2f}×** | {wb / wn:.2f}× "
                  f"| {b['unconverged_steps']} → {n_['unconverged_steps']} |")
    print(f"\n(timed steps are the first steps of the fall from the flat initial sheet; an unconverged step hit "
          f"max_iterations = {rows[0]['max_iterations_cap']} and its residual is above the 1e-3 tolerance)")
    for strategy in args.strategies:
        srows = [r for r in rows if r["strategy"] == strategy]
        if len(srows) < 2:
            continue
        print(f"\n[{strategy}]")
        rows_ = srows
        nodes = [r["nodes"] for r in rows_]
        print(f"growth exponent (log-log slope vs nodes, all sizes): ms/step {slope(nodes, [r['ms_per_step'] for r in rows_]):.2f}, "
              f"CPU ms/step {slope(nodes, [r['cpu_ms_per_step'] for r in rows_]):.2f}, "
              f"ms/iteration {slope(nodes, [r['ms_per_iteration'] for r in rows_]):.2f} "
              f"(CPU {slope(nodes, [r['cpu_ms_per_iteration'] for r in rows_]):.2f}), "
              f"iterations {slope(nodes, [r['mean_iterations'] for r in rows_]):.2f}, "
              f"factorizations {slope(nodes, [max(r['mean_factorizations'], 1e-3) for r in rows_]):.2f}")
        print("pairwise CPU ms/step slopes: " + ", ".join(
            f"{a['N']}²→{b['N']}² {slope([a['nodes'], b['nodes']], [a['cpu_ms_per_step'], b['cpu_ms_per_step']]):.2f}"
            for a, b in zip(rows_, rows_[1:])))

    print("\n### Linear solve of one projection iteration, by backend [CPU ms, best of repeats]\n")
    print(f"spd_factor(S, regularization=1e-9, backend=b).solve(c) columns (dense, cholmod, splu) include "
          f"factorization + solve; spd_factor's 'cholmod' backend is {CHOLMOD_LIB}; 'cholespy' is the cholespy wheel "
          "(analysis + factorization every call, as spd_factor uses it without scikit-sparse); 'CHOLMOD reuse' is "
          "scikit-sparse with the symbolic analysis done once (what SchurSystem uses); 'path' columns are "
          "SchurSystem.solve (assembly + factor + solve).\n")
    print("| N×N | k | nnz(S) | nnz(L) | dense (LAPACK) | cholmod | cholespy | splu | CHOLMOD reuse: analyze / factor / solve "
          "| assembly dense / sparse | path dense | path sparse (before) | dense/sparse path | max rel. diff "
          "| new: mode/ordering | new: nnz(L) | new: factor / solve | path sparse (new) | factor speed-up new vs before |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|")
    for b in backs:
        ratio = (b["path_dense_ms"] / b["path_sparse_ms"]) if "path_dense_ms" in b and "path_sparse_ms" in b else None
        print(f"| {b['N']}² | {b['k']} | {b['nnz_S']} | {b.get('nnz_L', '–')} | {fmt(b.get('dense_ms'))} "
              f"| {fmt(b['cholmod_ms'])} | {fmt(b.get('cholespy_ms'))} | {fmt(b.get('splu_ms'))} | {fmt(b.get('sks_analyze_ms'))} / "
              f"{fmt(b.get('sks_factor_ms'))} / {fmt(b.get('sks_solve_ms'), 3)} | {fmt(b.get('asm_dense_ms'))} / "
              f"{fmt(b['asm_sparse_ms'])} | {fmt(b.get('path_dense_ms'))} | {fmt(b.get('path_sparse_ms'))} "
              f"| {fmt(ratio)} | {b['max_rel_diff']:.1e} | {b.get('new_mode', '–')} | {b.get('nnz_L_new', '–')} "
              f"| {fmt(b.get('new_factor_ms'))} / {fmt(b.get('new_solve_ms'), 3)} | {fmt(b.get('path_new_ms'))} "
              f"| {fmt(b['sks_factor_ms'] / b['new_factor_ms'] if 'new_factor_ms' in b and 'sks_factor_ms' in b else None)} |")
    cross = [b for b in backs if "path_dense_ms" in b and "path_sparse_ms" in b]
    if cross:
        faster_sparse = [b["k"] for b in cross if b["path_sparse_ms"] < b["path_dense_ms"]]
        faster_dense = [b["k"] for b in cross if b["path_sparse_ms"] >= b["path_dense_ms"]]
        print(f"\ncrossover (SchurSystem.solve, dense vs CHOLMOD reuse): dense faster at k = {faster_dense}, "
              f"sparse faster at k = {faster_sparse}")
        chs = [b["k"] for b in backs if "dense_ms" in b and b["cholmod_ms"] < b["dense_ms"]]
        print(f"crossover (spd_factor, dense vs cholmod = {CHOLMOD_LIB}): cholmod faster at k = {chs}")
        chs = [b["k"] for b in backs if "dense_ms" in b and b.get("cholespy_ms", np.inf) < b["dense_ms"]]
        print(f"crossover (dense vs cholespy wheel, no scikit-sparse): cholespy faster at k = {chs}")
        from isocloth.solvers.linalg import DENSE_LIMIT

        print(f"current DENSE_LIMIT = {DENSE_LIMIT}")
    print(f"\ntotal benchmark time {time.perf_counter() - t_all:.1f} s; load average at the end "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": THREADS, "steps": rows, "backends": backs}, f, indent=1)


if __name__ == "__main__":
    main()
