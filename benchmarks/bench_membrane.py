"""Cost of the membrane stabilisation in the implicit-Euler predictor (``cloth.membrane_stiffness``).

Each step the predictor solves (A + dt² H(φⁿ)) v* = b with H the Gauss–Newton Hessian of the membrane
energy (isocloth.fem.membrane). Timed per call, on states of the scene's own run:

- "blocks": the shipped path, per-point Hessian blocks summed into a fixed CSC pattern
  (isocloth.solvers.block_assembly) and factorized (dense LAPACK up to 600 unknowns, CHOLMOD above);
- "sparse": the baseline measured in the same run, the path used before the block assembly (and
  still used with the shear energy): H as a scipy matrix, its free block sliced and added to A;
- "no membrane": the same step with k_m = 0 (a constant factorization), for the total cost.

Both membrane paths solve the same system: the largest difference of v* is printed.

Run: python benchmarks/bench_membrane.py [--calls 200]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from _common import configure_threads, print_machine  # noqa: E402

THREADS = configure_threads()

import numpy as np  # noqa: E402

from isocloth.scenes.loader import load_scene  # noqa: E402
from isocloth.solvers.linalg import SPDFactorCache  # noqa: E402

_RING = '{ generator = "annulus", r_inner = 0.09, r_outer = 0.15, n_radial = %d, n_angular = %d, element = "quad" }'
CASES = {
    "hit-a2 (63 nodes)": ("hit-a2", []),
    "drop-fold (225 nodes)": ("drop-fold", []),
    "Cusick ring 490 nodes": ("cusick-drape", [f"cloth.mesh={_RING % (7, 70)}", "cloth.membrane_stiffness=1000",
                                               "simulation.dt=0.0005"]),
    "Cusick ring 800 nodes": ("cusick-drape", [f"cloth.mesh={_RING % (10, 80)}", "cloth.membrane_stiffness=1000",
                                               "simulation.dt=0.0005"]),
}


def _sparse_velocity(pred, x, rhs, out, dt, cache):
    """The baseline: scipy assembly of A_ff + dt² H_ff and of the prescribed coupling."""
    model = pred.model
    f3, assembly = pred._nonlinear_base
    free3 = np.zeros(3 * model.node_count, dtype=bool)
    free3[f3] = True
    g3 = np.flatnonzero(~free3)
    A3 = assembly._A
    fe, blocks = pred._membrane(x)
    H = model.membrane.assemble(blocks)
    vg = out.ravel()[g3]
    b = (rhs + dt * fe).ravel()[f3] - A3[f3][:, g3] @ vg - dt * dt * (H[f3][:, g3] @ vg)
    S = (A3[f3][:, f3] + dt * dt * H[f3][:, f3]).tocsc()
    return cache.factor(S).solve(b).reshape(-1, 3)


def _rhs(pred, s, dt):
    mat, m = pred.model.material, pred.model.area_mass
    rhs = mat.rho * m[:, None] * s.v + dt * pred._gravity
    if mat.kappa > 0:
        rhs -= dt * mat.kappa * (pred.model.bending @ s.x)
    return rhs


def run(label, scene, over, calls, warm_steps):
    sc = load_scene(scene, ["output.video='none'", *over])
    st, dt = sc.stepper, sc.dt
    s = sc.initial_state
    for _ in range(warm_steps):  # a deformed state, so that H is not the rest Hessian
        s, _ = st.step(s)
    pred = st.predictor
    pred._ensure(dt)
    out = np.array(s.v, copy=True)
    rhs = _rhs(pred, s, dt)
    cache = SPDFactorCache()
    v_blocks = pred._nonlinear_velocity(s.x, rhs, out, dt)
    v_sparse = _sparse_velocity(pred, s.x, rhs, out, dt, cache)
    diff = float(np.abs(v_blocks - v_sparse).max() / max(np.abs(v_sparse).max(), 1e-300))
    times = {}
    for name, fn in (("blocks", lambda: pred._nonlinear_velocity(s.x, rhs, out, dt)),
                     ("sparse", lambda: _sparse_velocity(pred, s.x, rhs, out, dt, cache))):
        fn()
        tic = time.perf_counter()
        for _ in range(calls):
            fn()
        times[name] = 1e3 * (time.perf_counter() - tic) / calls
    plain = load_scene(scene, ["output.video='none'", *over, "cloth.membrane_stiffness=0"]).stepper.predictor
    plain.velocity(s.x, s.v, dt)
    tic = time.perf_counter()
    for _ in range(calls):
        plain.velocity(s.x, s.v, dt)
    times["none"] = 1e3 * (time.perf_counter() - tic) / calls
    return {"case": label, "unknowns": pred._nonlinear_base[1].size, **times, "diff": diff}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--warm-steps", type=int, default=20)
    ap.add_argument("--blas-threads", type=int, default=1)
    args = ap.parse_args()
    print_machine(THREADS)
    print("| case | free unknowns | blocks [ms/call] | sparse baseline [ms/call] | speed-up | no membrane [ms/call] "
          "| relative difference of v* |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, (scene, over) in CASES.items():
        r = run(label, scene, over, args.calls, args.warm_steps)
        print(f"| {r['case']} | {r['unknowns']} | {r['blocks']:.3f} | {r['sparse']:.3f} | "
              f"{r['sparse'] / r['blocks']:.2f}× | {r['none']:.3f} | {r['diff']:.1e} |", flush=True)


if __name__ == "__main__":
    main()
