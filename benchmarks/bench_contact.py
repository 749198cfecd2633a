"""Contacts (issue 3): active-set vs interior-point on the same QPs, contact-scene speed, and the
factorization-update choice.

1. QP solvers: records every QP of a contact scene (solved by the active-set solver), then times
   the active-set solver (warm-started as in the simulation) and the interior-point baseline
   (Clarabel through qpsolvers) on exactly those QPs, in the same process; prints the ratio
   (the seed reports ~3x over a standard interior-point method; the issue aims at >= 10x).
2. Scenes: real-time factor (simulated s per CPU s and per wall s), projection iterations and QP
   (KKT) solves per step, factorizations per step, unconverged steps, for each contact scene.
3. Factorization updates (docs/design/linear-algebra.md): on a recorded cylinder-friction QP,
   the cost of one working-set change by (a) refactorizing, (b) the bordered Schur-complement
   update used by SolverActiveSet, (c) a CHOLMOD rank-2 update/downdate (the matrix factored
   with placeholder rows for every detected contact).

Run: python benchmarks/bench_contact.py [--quick] [--only scene ...] [--skip-scenes]
"""

from __future__ import annotations

import argparse
import os
import time

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from isocloth.scenes.loader import load_scene  # noqa: E402
from isocloth.solvers.active_set import SolverActiveSet  # noqa: E402
from isocloth.solvers.interior_point import SolverInteriorPoint  # noqa: E402

SCENES = ["inclined-plane", "cylinder-friction", "rotating-sphere", "needles", "tablecloth",
          "tablecloth-low-friction", "ipc-rotating-sphere"]


class Recorder(SolverActiveSet):
    def __init__(self):
        super().__init__()
        self.qps = []

    def solve_qp(self, *args, **kw):
        self.qps.append(args)
        return super().solve_qp(*args, **kw)


def record(scene: str, duration: float):
    sc = load_scene(scene, [f"simulation.duration={duration}", "output.video='none'"])
    rec = Recorder()
    sc.stepper.contact_solver.qp_solver = rec
    s = sc.initial_state
    while s.t < duration - 1e-9:
        s, _ = sc.stepper.step(s)
    return sc, [q for q in rec.qps if q[4].shape[0] > 0]


def qp_comparison(scene: str, duration: float, max_qps: int) -> None:
    sc, qps = record(scene, duration)
    qps = qps[:: max(1, len(qps) // max_qps)][:max_qps]
    t_as = t_ip = t_asr = 0.0
    diff = diff_r = 0.0
    for q in qps:
        t = time.process_time()
        ra = SolverActiveSet().solve_qp(*q)
        t_as += time.process_time() - t
        t = time.process_time()
        rr = SolverActiveSet(refinement=2).solve_qp(*q)
        t_asr += time.process_time() - t
        t = time.process_time()
        rb = SolverInteriorPoint().solve_qp(*q[:6])
        t_ip += time.process_time() - t
        diff = max(diff, float(np.abs(ra.dx - rb.dx).max()))
        diff_r = max(diff_r, float(np.abs(rr.dx - rb.dx).max()))
    n = len(qps)
    m = np.mean([q[4].shape[0] for q in qps])
    print(f"{scene}: {sc.model.node_count} nodes, {sc.model.active_rows.size} inextensibility rows, "
          f"{n} recorded QPs with {m:.0f} contact rows on average (CPU time per QP)")
    print(f"  active-set {1e3 * t_as / n:.2f} ms, with refinement {1e3 * t_asr / n:.2f} ms, interior-point "
          f"(Clarabel) {1e3 * t_ip / n:.2f} ms -> ratio IP/AS {t_ip / t_as:.1f}x (refined {t_ip / t_asr:.1f}x); "
          f"max |dx_AS - dx_IP| {diff:.1e} m (refined {diff_r:.1e} m)")


def scene_speed(scene: str, duration: float | None) -> None:
    sc = load_scene(scene, ["output.video='none'"])
    T = sc.duration if duration is None else min(duration, sc.duration)
    s = sc.initial_state
    s, _ = sc.stepper.step(s)  # warm-up (numba, imports); not timed
    s = sc.initial_state
    infos = []
    c0, w0 = time.process_time(), time.perf_counter()
    while s.t < T - 1e-9:
        s, info = sc.stepper.step(s)
        infos.append(info)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    cont = [i for i in infos if i.contact_count > 0] or infos
    print(f"  {scene:24s} {sc.model.node_count:4d} nodes dt {sc.dt:.3f} sim {T:.2f} s | RTF cpu {T / cpu:6.3f} "
          f"wall {T / wall:6.3f} | in contact: {len(cont):4d} steps, projection it/step "
          f"{np.mean([i.iterations for i in cont]):5.2f} (max {max(i.iterations for i in cont):2d}), "
          f"KKT solves/step {np.mean([i.qp_iterations for i in cont]):5.1f}, factorizations/step "
          f"{np.mean([i.factorizations for i in cont]):5.2f}, unconverged {sum(not i.converged for i in infos)}")


def update_costs() -> None:
    from sksparse.cholmod import analyze

    from isocloth.solvers.active_set import _Bordered

    _, qps = record("cylinder-friction", 0.35)
    w, f, A_E, c_E, A_I, h, W = max(qps, key=lambda q: q[4].shape[0])
    A_E, A_I = sp.csr_matrix(A_E), sp.csr_matrix(A_I)
    mI = A_I.shape[0]
    W = np.asarray(W, dtype=np.int64)
    out = np.setdiff1d(np.arange(mI), W)
    reps = 20

    def cpu(fn, n=reps):
        t = time.process_time()
        for _ in range(n):
            fn()
        return 1e3 * (time.process_time() - t) / n

    # (a) refactorization of the Delassus matrix with one more row (symbolic analysis reused)
    fac = SolverActiveSet().factorize(w, A_E, A_I, W)
    G1 = sp.vstack([A_E, A_I[np.r_[W, out[:1]]]], format="csr")
    A1 = (G1.multiply(w[None, :]) @ G1.T).tocsc()
    sym = analyze(A1, mode="simplicial")
    t_refac = cpu(lambda: sym.cholesky_inplace(A1, beta=1e-12 * A1.diagonal().max()))
    t_solve = cpu(lambda: sym(np.ones(A1.shape[0])))

    # (b) bordered Schur-complement update: add one row, then solve
    def schur_add():
        b = _Bordered(fac)
        b.add(A_I[out[0]], int(out[0]))
        b.solve(np.ones(fac.m0), np.ones(1))

    t_schur = cpu(schur_add)
    bord = _Bordered(fac)
    bord.add(A_I[out[0]], int(out[0]))
    rhs = A1 @ np.ones(A1.shape[0])
    x0, xk = bord.solve(rhs[:-1], rhs[-1:])
    err_schur = max(np.abs(x0 - 1).max(), np.abs(xk - 1).max())

    # (c) CHOLMOD rank-2 update/downdate: the factor holds a placeholder row (unit diagonal) for
    # the entering contact; activating it changes row/column k by (b, d − 1): A + u vᵀ + v uᵀ
    k = A1.shape[0] - 1
    A_ph = A1.tolil()
    A_ph[k, :k] = 0.0
    A_ph[:k, k] = 0.0
    A_ph[k, k] = 1.0
    A_ph = A_ph.tocsc()
    col = A1[:, k].toarray().ravel()
    u = np.zeros(k + 1)
    u[k] = 1.0
    v = col.copy()
    v[k] = 0.5 * (col[k] - 1.0)
    p, q = (u + v) / np.sqrt(2.0), (u - v) / np.sqrt(2.0)  # u vᵀ + v uᵀ = p pᵀ − q qᵀ
    fph = analyze(A_ph, mode="simplicial")

    def updown():
        fph.cholesky_inplace(A_ph, beta=1e-12 * A1.diagonal().max())
        fph.update_inplace(sp.csc_matrix(p[:, None]), subtract=False)
        fph.update_inplace(sp.csc_matrix(q[:, None]), subtract=True)
        fph(np.ones(k + 1))

    t_reset = cpu(lambda: fph.cholesky_inplace(A_ph, beta=1e-12 * A1.diagonal().max()))
    t_updown = cpu(updown) - t_reset
    err = np.abs(fph(A1 @ np.ones(k + 1)) - 1.0).max()
    print(f"factorization updates on a cylinder-friction Delassus matrix ({A1.shape[0]} rows, "
          f"{A1.nnz} non-zeros; CPU ms, one contact entering the working set, then one solve):")
    print(f"  (a) refactorize (symbolic reused)      {t_refac + t_solve:7.3f} ms")
    print(f"  (b) bordered Schur-complement update   {t_schur:7.3f} ms  ({(t_refac + t_solve) / t_schur:.1f}x faster "
          f"than (a); solve error {err_schur:.1e})")
    print(f"  (c) CHOLMOD rank-2 update/downdate     {t_updown:7.3f} ms  ({(t_refac + t_solve) / t_updown:.1f}x faster "
          f"than (a); solve error after the update {err:.1e})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="short scene runs (first contacts only)")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--skip-scenes", action="store_true")
    ap.add_argument("--max-qps", type=int, default=40)
    a = ap.parse_args()
    print("== 1. active-set vs interior-point on the same QP sequences ==")
    for scene, dur in (("cylinder-friction", 0.4), ("rotating-sphere", 0.4), ("tablecloth", 1.0)):
        if a.only is None or scene in a.only:
            qp_comparison(scene, dur, a.max_qps)
    if not a.skip_scenes:
        print("== 2. contact scenes (default active-set solver) ==")
        quick = {"inclined-plane": 0.5, "cylinder-friction": 0.5, "rotating-sphere": 0.5, "needles": 0.35,
                 "tablecloth": 1.5, "tablecloth-low-friction": 1.5, "ipc-rotating-sphere": 0.5}
        for scene in SCENES:
            if a.only is None or scene in a.only:
                scene_speed(scene, quick[scene] if a.quick else None)
    print("== 3. factorization updates ==")
    update_costs()


if __name__ == "__main__":
    main()
