"""isocloth beside MuJoCo flex on the same sheets: CPU time with each engine's accuracy beside it.

Scenes (1 m × 1 m, 20 × 20 nodes, 0.2 kg, full gravity, no air: isocloth's δ = ρ and α = 0, as MuJoCo
has no aerodynamics by default):

hang-20x20    the sheet starts flat at z = 1 m and falls, held at two adjacent corners, 5 s
sphere-20x20  the sheet starts flat 5 cm above a sphere of radius 0.25 m and drapes on it, 5 s; Coulomb
              friction μ = 0.5 in both engines (MuJoCo's flex contact friction set to it explicitly:
              MuJoCo takes the larger of the two friction coefficients of a pair, and the flex default is 1)

isocloth runs its default model and solvers at dt = 10 ms (0.5 mm rest-shape noise), bending
stiffness κ = ``--kappa`` [N·m] (default 0: the membrane alone, like MuJoCo's ``elastic2d="stretch"``).
MuJoCo (the optional ``mujoco`` package; skipped with a note when it is missing) runs a ``flexcomp``
grid with the "stiff membrane" settings a MuJoCo user picks: linear elasticity of the triangles,
Young's modulus × thickness = 1e5 N/m (``--membrane``, the tensile stiffness of isocloth's held stretch
limits), Poisson ratio 0, the ``discrete`` integrator (flex elasticity is not integrated implicitly by
MuJoCo's implicit integrators), vertex radius ``--vertex-radius`` (default 5 mm), no self-collision;
with ``--kappa`` > 0 also bending (``elastic2d="both"``) with the thickness t that gives the same
plate stiffness, E t³ / 12 = κ at E t fixed. MuJoCo runs at every step of ``--mujoco-dt`` (default
10, 5 and 2 ms: at 10 ms its sheet stretches beyond 1 % on the sphere).

The engines alternate within each repeat. Per run: CPU time per simulated second (process time of the
stepping only) and real-time factor; the CPU ratio isocloth / MuJoCo of the same repeat; peak edge
stretch over every step, on the same edges for both engines (grid neighbours at the grid spacing, no
diagonals; len/rest − 1); on the sphere, the deepest point of the cloth inside the sphere, R − |x − c|
of the nodes (negative: every node outside; MuJoCo's node is the centre of a vertex sphere of the
vertex radius, which keeps it about that far outside); isocloth's unconverged steps.

``--scaling N ...`` adds CPU milliseconds per step of the hanging sheet at N × N nodes (after one
step not timed, ``--scaling-steps`` steps, MuJoCo at 10 ms) and the exponent of a power law in the node
count fitted to each engine's rows.

Usage: python benchmarks/bench_peers.py [--only hang-20x20 sphere-20x20] [--duration S] [--repeats N]
       [--membrane N_PER_M] [--kappa NM] [--vertex-radius M] [--mujoco-dt S ...]
       [--scaling N ...] [--scaling-steps K]
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
from scipy.spatial import cKDTree  # noqa: E402

from _common import print_machine, run_timed  # noqa: E402

SIDE, N, MASS, DT = 1.0, 20, 0.2, 0.01
SPHERE_R, SPHERE_MU = 0.25, 0.5
SCENES = ("hang-20x20", "sphere-20x20")


def _start_height(scene: str) -> float:
    return SPHERE_R + 0.05 if scene == "sphere-20x20" else 1.0


class GridEdges:
    """Grid-neighbour edges (rest distance = spacing) of rest positions x (n, 3), and their peak stretch."""

    def __init__(self, x: np.ndarray):
        spacing = SIDE / (N - 1)
        self.pairs = np.array(sorted(cKDTree(x).query_pairs(1.01 * spacing)), dtype=np.int64)
        self.rest = np.linalg.norm(x[self.pairs[:, 0]] - x[self.pairs[:, 1]], axis=1)
        self.peak = 0.0

    def update(self, x: np.ndarray) -> None:
        r = np.linalg.norm(x[self.pairs[:, 0]] - x[self.pairs[:, 1]], axis=1) / self.rest - 1.0
        self.peak = max(self.peak, float(r.max()))


def _depth(scene: str, x: np.ndarray) -> float:
    if scene != "sphere-20x20":
        return -np.inf
    return float((SPHERE_R - np.linalg.norm(x, axis=1)).max())


def isocloth_scene(scene: str, duration: float, kappa: float, n: int = N):
    """The Scene of ``scene`` (module docstring) on an n × n sheet."""
    from isocloth.scenes.loader import build_scene, config_from_dict

    z = _start_height(scene)
    rho = MASS / SIDE ** 2
    cfg = {"name": scene, "description": "peer benchmark sheet",
           "cloth": {"mesh": {"generator": "rectangle", "width": SIDE, "height": SIDE, "nx": n, "ny": n,
                              "element": "quad", "plane": "xy"},
                     "placement": {"translate": [0.0, 0.0, z]}, "noise": {"sigma": 0.0005, "seed": 0},
                     "rho": rho, "delta": rho, "alpha": 0.0, "kappa": kappa},
           "simulation": {"dt": DT, "duration": duration}, "output": {"video": "none"}}
    if scene == "sphere-20x20":
        cfg["obstacles"] = [{"type": "sphere", "center": [0.0, 0.0, 0.0], "radius": SPHERE_R, "mu": SPHERE_MU}]
    else:
        h = SIDE / 2
        cfg["grasps"] = [{"name": "corners", "nodes": {"nearest": [[-h, -h, z], [h, -h, z]]},
                          "trajectory": {"type": "fixed"}}]
    return build_scene(config_from_dict(cfg))


def isocloth_run(scene: str, duration: float, kappa: float) -> dict:
    sc = isocloth_scene(scene, duration, kappa)
    st, s = sc.stepper, sc.initial_state
    edges = GridEdges(sc.model.mesh.rest_vertices)
    out = dict(depth=-np.inf, unconverged=0)

    def observe(s, info):
        out["unconverged"] += not info.converged
        edges.update(s.x)
        out["depth"] = max(out["depth"], _depth(scene, s.x))

    s, cpu, out["status"] = run_timed(st, s, duration, observe)
    out.update(cpu=cpu, simulated=s.t, stretch=edges.peak)
    return out


def mujoco_xml(scene: str, membrane: float, kappa: float, radius: float, dt: float, n: int = N) -> str:
    """MJCF of ``scene`` on an n × n flex grid: E t = ``membrane`` [N/m]; bending only with ``kappa`` > 0,
    at the thickness t with E t³ / 12 = κ (Poisson ratio 0)."""
    z = _start_height(scene)
    sphere = (f'<geom type="sphere" size="{SPHERE_R}" pos="0 0 0" friction="{SPHERE_MU}"/>'
              if scene == "sphere-20x20" else "")
    pin = "" if scene == "sphere-20x20" else f'<pin id="0 {n - 1}"/>'
    thickness = float(np.sqrt(12.0 * kappa / membrane)) if kappa > 0 else 1e-3
    mode = "both" if kappa > 0 else "stretch"
    return (f'<mujoco><option timestep="{dt}" integrator="discrete"/><worldbody>{sphere}'
            f'<flexcomp name="cloth" type="grid" count="{n} {n} 1" spacing="{SIDE / (n - 1)} {SIDE / (n - 1)} 0.1" '
            f'pos="0 0 {z}" radius="{radius}" dim="2" mass="{MASS}">'
            f'<elasticity young="{membrane / thickness}" poisson="0" thickness="{thickness}" elastic2d="{mode}"/>'
            f'<contact selfcollide="none" condim="3" friction="{SPHERE_MU}"/>{pin}</flexcomp></worldbody></mujoco>')


def mujoco_run(scene: str, duration: float, membrane: float, kappa: float, radius: float, dt: float) -> dict:
    import mujoco

    notes = []
    mujoco.set_mju_user_warning(lambda msg: notes.append(str(msg).strip()))  # keep the table clean
    m = mujoco.MjModel.from_xml_string(mujoco_xml(scene, membrane, kappa, radius, dt))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    edges = GridEdges(d.flexvert_xpos.copy())
    out = dict(depth=-np.inf, unconverged=0, status="ok")
    steps = int(round(duration / dt))
    cpu = 0.0
    for _ in range(steps):
        t0 = time.process_time()
        mujoco.mj_step(m, d)
        cpu += time.process_time() - t0
        x = d.flexvert_xpos
        if not np.isfinite(x).all():
            out["status"] = "non-finite"
            break
        edges.update(x)
        out["depth"] = max(out["depth"], _depth(scene, x))
    out.update(cpu=cpu, simulated=d.time, stretch=edges.peak)
    if notes:
        out["status"] += f" (MuJoCo warned: {notes[0].splitlines()[0]})"
    return out


def scaling_row(n: int, steps: int, membrane: float, kappa: float, radius: float, peer: str | None) -> dict:
    """CPU ms per step of the hanging n × n sheet (one step not timed first) for each engine."""
    out = {}
    sc = isocloth_scene("hang-20x20", (steps + 1) * DT, kappa, n)
    st, s = sc.stepper, sc.initial_state
    s, _ = st.step(s)
    t0 = time.process_time()
    its = 0
    for _ in range(steps):
        s, info = st.step(s)
        its += info.iterations
    out["isocloth"] = (1e3 * (time.process_time() - t0) / steps, its / steps)
    if peer:
        import mujoco

        m = mujoco.MjModel.from_xml_string(mujoco_xml("hang-20x20", membrane, kappa, radius, DT, n))
        d = mujoco.MjData(m)
        mujoco.mj_step(m, d)
        t0 = time.process_time()
        for _ in range(steps):
            mujoco.mj_step(m, d)
        out[peer] = (1e3 * (time.process_time() - t0) / steps, float("nan"))
    return out


def print_scaling(sizes, steps, membrane, kappa, radius, peer) -> None:
    print()
    print("| nodes | engine | CPU ms / step | projection its / step |")
    print("|---|---|---|---|")
    rows = {}
    for n in sizes:
        for name, (ms, its) in scaling_row(n, steps, membrane, kappa, radius, peer).items():
            rows.setdefault(name, []).append((n * n, ms))
            print(f"| {n} × {n} | {name} | {ms:.2f} | {'' if np.isnan(its) else f'{its:.1f}'} |", flush=True)
    for name, pts in rows.items():
        if len(pts) > 1:
            a = np.log(np.array(pts))
            print(f"{name}: CPU per step ~ n^{np.polyfit(a[:, 0], a[:, 1], 1)[0]:.2f} (n = nodes)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=list(SCENES), choices=SCENES)
    ap.add_argument("--duration", type=float, default=5.0, help="simulated seconds per run (default 5)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--membrane", type=float, default=1e5, help="MuJoCo's E t [N/m] (default 1e5)")
    ap.add_argument("--kappa", type=float, default=0.0, help="bending stiffness κ [N m] of both engines (default 0)")
    ap.add_argument("--vertex-radius", type=float, default=0.005, help="MuJoCo vertex radius [m] (default 5e-3)")
    ap.add_argument("--mujoco-dt", type=float, nargs="+", default=[0.01, 0.005, 0.002],
                    help="MuJoCo time steps [s] (default 0.01 0.005 0.002)")
    ap.add_argument("--scaling", type=int, nargs="*", default=[], help="hanging N × N sheets to time per step")
    ap.add_argument("--scaling-steps", type=int, default=10)
    ap.add_argument("--blas-threads", default=None, help="see benchmarks/_common.py")
    args = ap.parse_args()
    try:
        import mujoco
        peer = f"MuJoCo {mujoco.__version__}"
    except ImportError:
        peer = None
    print_machine(THREADS)
    print(f"peer:    {peer or 'mujoco not installed (pip install mujoco): isocloth only'}")
    print(f"physics: {N} x {N} nodes, {MASS} kg, g = 9.81 m/s2, no air, kappa = {args.kappa} N m, "
          f"MuJoCo E t = {args.membrane:g} N/m, vertex radius {1e3 * args.vertex_radius:g} mm")
    print()
    print("| scene | engine | dt [ms] | CPU s / sim s | RTF | CPU ratio (isocloth / engine) | peak edge stretch | "
          "deepest node inside [mm] | unconverged | status |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for _ in range(args.repeats):
        for scene in args.only:
            runs = [("isocloth", DT, lambda: isocloth_run(scene, args.duration, args.kappa))]
            for dt in (args.mujoco_dt if peer else []):
                runs.append((peer, dt, lambda dt=dt: mujoco_run(scene, args.duration, args.membrane, args.kappa,
                                                                args.vertex_radius, dt)))
            results = [(name, dt, run()) for name, dt, run in runs]
            own = results[0][2]["cpu"] / max(results[0][2]["simulated"], 1e-12)
            for name, dt, r in results:
                per = r["cpu"] / max(r["simulated"], 1e-12)
                ratio = f"{own / per:.1f}" if name != "isocloth" else ""
                depth = f"{1000 * r['depth']:.2f}" if scene == "sphere-20x20" else "–"
                unconv = str(r["unconverged"]) if name == "isocloth" else "–"
                print(f"| {scene} | {name} | {1e3 * dt:g} | {per:.3f} | {1 / per:.2f}× | {ratio} | "
                      f"{100 * r['stretch']:.2f} % | {depth} | {unconv} | {r['status']} |", flush=True)
    if args.scaling:
        print_scaling(args.scaling, args.scaling_steps, args.membrane, args.kappa, args.vertex_radius, peer)


if __name__ == "__main__":
    main()
