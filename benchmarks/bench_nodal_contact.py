"""The primal nodal frictional contact solver of Li et al. 2018 (Algorithm 1, on Ŵ = G A Gᵀ) against
the dual baseline (Gauss–Seidel on the assembled Delassus operator W = J A⁻¹ Jᵀ), on the same
problems, interleaved; and the scenes of Li et al. §7.1, per step and split as in their Table 2.

Problems: an n × n-node 1 m sheet of measured denim (Wang et al. 2011; membrane and bending
stiffness at rest, A = M + δt² K, δt = 2 ms as in Li §7) lying on a floor with every node in
contact (gap 0–3 mm, μ = 0.3), random velocities of 0.3 m/s plus 1 m/s downwards. Reported per
size: contacts c, the wall time of each solver (the dual's includes its Delassus assembly),
sweeps, residual [m/s], the largest velocity difference between the two, and the ratio
dual / primal. Li et al. 2018 Table 2 (C++, desktop): house of cards 0.09 s per step with 176
contacts; they report a 1,200× speed-up of the primal form on a dress with 1,100 contacts.

Usage: python benchmarks/bench_nodal_contact.py [--sizes 10 20 30 40] [--dual-max 30] [--repeats 3]
       [--scenes house-of-cards circular-drag ...]
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
    ap.add_argument("--scenes", nargs="*", default=list(LI_TABLE_2), help="scenes of Li et al. §7.1 to run")
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
    table2(args.scenes)


LI_TABLE_2 = {  # Li et al. 2018 Table 2 (C++, i7-5600U): n_v, n_c, t_p, t_cd, t_m, t_s [s], e, n_iter
    "house-of-cards-low-friction": "μ 0.2: 75 / 176 / 0.09 / 9e-4 / 4e-4 / 0.09 / 2.6e-12 / 387",
    "house-of-cards": "μ 0.6: 218 / 119 / 0.29 / 2e-3 / 3e-4 / 0.28 / 3.9e-11 / 1778",
    "circular-drag": "μ 0.6: 59 / 26 / 0.04 / 6e-5 / 0 / 0.04 / 1.5e-10 / 25",
    "belt": "μ 0.4: 502 / 476 / 2.48 / 0.01 / 2e-3 / 2.42 / 5.7e-9 / 261",
    "li-inclined-plane": "–",
}


def table2(names) -> None:
    """Li et al. Table 2's columns for our scenes, per step with contacts: vertices, contacts, whole step, detection,
    merging, solver [ms], mean residual [m/s], sweeps, and the share of steps solved to the tolerance."""
    from isocloth.scenes.loader import load_scene

    print("\n| scene | nodes | contacts | step ms | detection ms | merging ms | solver ms | residual m/s | sweeps | "
          "converged | Li Table 2: n_v / n_c / t_p / t_cd / t_m / t_s [s] / ē / n_iter |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name in names:
        sc = load_scene(name)
        s = sc.initial_state
        rows = []
        while s.t < sc.duration - 1e-9:
            s, i = sc.stepper.step(s)
            if i.contact_count:
                rows.append((i.wall_time, i.detection_time, i.merge_time, i.solver_time, i.contact_count,
                             i.residual, i.friction_sweeps, i.converged))
        w = np.array(rows, dtype=float)
        ms = 1e3 * w[:, :4].mean(axis=0)
        print(f"| {name} | {sc.model.mesh.node_count} | {w[:, 4].mean():.0f} | {ms[0]:.2f} | {ms[1]:.2f} | "
              f"{ms[2]:.2f} | {ms[3]:.2f} | {w[:, 5].mean():.1e} | {w[:, 6].mean():.0f} | "
              f"{100 * w[:, 7].mean():.1f} % | {LI_TABLE_2.get(name, '–')} |", flush=True)


if __name__ == "__main__":
    main()
