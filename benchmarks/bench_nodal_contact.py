"""The primal nodal frictional contact solver of Li et al. 2018 (Algorithm 1, on Ŵ = G A Gᵀ) against
the dual baseline (Gauss–Seidel on the assembled Delassus operator W = J A⁻¹ Jᵀ), on the same
problems, interleaved; and the elastic inclined-plane scene per step.

Problems: an n × n-node 1 m sheet of measured denim (Wang et al. 2011; membrane and bending
stiffness at rest, A = M + δt² K, δt = 2 ms as in Li §7) lying on a floor with every node in
contact (gap 0–3 mm, μ = 0.3), random velocities of 0.3 m/s plus 1 m/s downwards. Reported per
size: contacts c, the wall time of each solver (the dual's includes its Delassus assembly),
sweeps, residual [m/s], the largest velocity difference between the two, and the ratio
dual / primal. Li et al. 2018 Table 2 (C++, desktop): house of cards 0.09 s per step with 176
contacts; they report a 1,200× speed-up of the primal form on a dress with 1,100 contacts.

Usage: python benchmarks/bench_nodal_contact.py [--sizes 10 20 30 40] [--dual-max 30] [--repeats 3]
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
import scipy.sparse as sp  # noqa: E402

from _common import print_machine  # noqa: E402


def problem(n: int, seed: int = 0, dt: float = 0.002):
    from isocloth.elastic import MeasuredClothForces, load_measured_material
    from isocloth.mesh.generators import rectangle
    from isocloth.solvers.nodal_contact import NodalContacts, nodal_problem

    mesh = rectangle(1.0, 1.0, n, n, element="triangle")
    denim = load_measured_material("11oz-black-denim")
    _, K = MeasuredClothForces(mesh, denim).force_and_stiffness(mesh.vertices)
    m = mesh.node_count
    mass = np.repeat(np.full(m, denim.density / m), 3)
    A = (sp.diags(mass) + dt * dt * K).tocsr()
    rng = np.random.default_rng(seed)
    v0 = rng.normal(scale=0.3, size=(m, 3))
    v0[:, 2] -= 1.0
    b = -(mass * (v0.ravel() + dt * np.tile([0.0, 0.0, -9.81], m)))
    contacts = NodalContacts.of(np.arange(m), np.tile([0.0, 0.0, 1.0], (m, 1)), rng.uniform(0.0, 0.003, m), 0.3)
    return nodal_problem(A, b, contacts, dt=dt, thickness=0.0)


def main() -> None:
    from isocloth.solvers.nodal_contact import solve_dual, solve_primal

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 20, 30, 40])
    ap.add_argument("--dual-max", type=int, default=40, help="largest size solved by the dual baseline")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print_machine(THREADS)
    solve_primal(problem(4))  # compile
    solve_dual(problem(4))
    print("| nodes | contacts | primal s | sweeps | residual m/s | dual s | sweeps | residual m/s | max Δv m/s | dual / primal |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        P = problem(n)
        tp, td, p, d = [], [], None, None
        for _ in range(args.repeats):  # interleaved
            t0 = time.perf_counter()
            p = solve_primal(P)
            tp.append(time.perf_counter() - t0)
            if n <= args.dual_max:
                t0 = time.perf_counter()
                d = solve_dual(P)
                td.append(time.perf_counter() - t0)
        row = f"| {n * n} | {P.contact_block.size} | {min(tp):.4f} | {p.sweeps} | {p.residual:.1e} |"
        if td:
            row += (f" {min(td):.4f} | {d.sweeps} | {d.residual:.1e} | {np.abs(p.v - d.v).max():.1e} |"
                    f" **{min(td) / min(tp):.1f}×** |")
        else:
            row += " – | – | – | – | – |"
        print(row, flush=True)
    scene()


def scene() -> None:
    from isocloth.scenes.loader import load_scene

    sc = load_scene("li-inclined-plane")
    s = sc.initial_state
    rows = []
    while s.t < 1.0 - 1e-9:
        s, info = sc.stepper.step(s)
        rows.append((info.wall_time, info.detection_time, info.contact_count, info.friction_sweeps))
    w = np.array(rows)
    inc = w[w[:, 2] > 0]
    print(f"\nli-inclined-plane (25 nodes, elastic gray interlock, dt 2 ms, 500 steps): {1e3 * w[:, 0].mean():.2f} ms "
          f"per step, in contact {1e3 * inc[:, 0].mean():.2f} ms (detection {1e3 * inc[:, 1].mean():.2f} ms, "
          f"{inc[:, 3].mean():.0f} sweeps, {inc[:, 2].mean():.0f} contacts); real-time factor "
          f"{1.0 / w[:, 0].sum():.2f}")


if __name__ == "__main__":
    main()
