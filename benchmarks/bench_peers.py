"""isocloth beside MuJoCo flex on the same sheets: CPU time with each engine's accuracy beside it.

Scenes (1 m × 1 m, 20 × 20 nodes, 0.2 kg, dt = 10 ms):

hang-20x20    the sheet starts flat at z = 1 m and falls, held at two adjacent corners, 5 s
sphere-20x20  the sheet starts flat 5 cm above a sphere of radius 0.25 m (μ = 0.5) and drapes on it, 5 s

isocloth runs its default model and solvers (light-cotton bending, 0.5 mm rest-shape noise). MuJoCo (the
optional ``mujoco`` package; skipped with a note when it is missing) runs a ``flexcomp`` grid with the
"stiff membrane" settings: linear elasticity of the triangles only (``elastic2d="stretch"``), Young's
modulus × thickness = ``--young`` × ``--thickness`` (default 1e8 Pa × 1 mm = 1e5 N/m, the tensile stiffness
of isocloth's held stretch limits), Poisson ratio 0, the ``discrete`` integrator (flex elasticity is
not integrated implicitly by MuJoCo's implicit integrators), vertex radius ``--vertex-radius``
(default 5 mm), no self-collision.

The engines alternate within each repeat. Per run: CPU time per simulated second (process time of the
stepping only) and real-time factor; the CPU ratio isocloth / MuJoCo of the same repeat; peak edge
stretch over every step, on the same edges for both engines (grid neighbours at the grid spacing, no
diagonals; len/rest − 1); on the sphere, the deepest node inside the sphere (R − |x − c|; MuJoCo's
node is the centre of a vertex sphere of the vertex radius, so its cloth surface lies that much
deeper); isocloth's unconverged steps.

Usage: python benchmarks/bench_peers.py [--only hang-20x20 sphere-20x20] [--duration S] [--repeats N]
       [--young PA] [--thickness M] [--vertex-radius M]
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
        return 0.0
    return max(0.0, float((SPHERE_R - np.linalg.norm(x, axis=1)).max()))


def isocloth_run(scene: str, duration: float) -> dict:
    from isocloth.scenes.loader import build_scene, config_from_dict

    z = _start_height(scene)
    cfg = {"name": scene, "description": "peer benchmark sheet",
           "cloth": {"mesh": {"generator": "rectangle", "width": SIDE, "height": SIDE, "nx": N, "ny": N,
                              "element": "quad", "plane": "xy"},
                     "placement": {"translate": [0.0, 0.0, z]}, "noise": {"sigma": 0.0005, "seed": 0},
                     "fabric": "light-cotton", "rho": MASS / SIDE ** 2},
           "simulation": {"dt": DT, "duration": duration}, "output": {"video": "none"}}
    if scene == "sphere-20x20":
        cfg["obstacles"] = [{"type": "sphere", "center": [0.0, 0.0, 0.0], "radius": SPHERE_R, "mu": SPHERE_MU}]
    else:
        h = SIDE / 2
        cfg["grasps"] = [{"name": "corners", "nodes": {"nearest": [[-h, -h, z], [h, -h, z]]},
                          "trajectory": {"type": "fixed"}}]
    sc = build_scene(config_from_dict(cfg))
    st, s = sc.stepper, sc.initial_state
    edges = GridEdges(sc.model.mesh.rest_vertices)
    out = dict(depth=0.0, unconverged=0)

    def observe(s, info):
        out["unconverged"] += not info.converged
        edges.update(s.x)
        out["depth"] = max(out["depth"], _depth(scene, s.x))

    s, cpu, out["status"] = run_timed(st, s, duration, observe)
    out.update(cpu=cpu, simulated=s.t, stretch=edges.peak)
    return out


def mujoco_xml(scene: str, young: float, thickness: float, radius: float) -> str:
    z = _start_height(scene)
    sphere = (f'<geom type="sphere" size="{SPHERE_R}" pos="0 0 0" friction="{SPHERE_MU}"/>'
              if scene == "sphere-20x20" else "")
    pin = "" if scene == "sphere-20x20" else f'<pin id="0 {N - 1}"/>'
    return (f'<mujoco><option timestep="{DT}" integrator="discrete"/><worldbody>{sphere}'
            f'<flexcomp name="cloth" type="grid" count="{N} {N} 1" spacing="{SIDE / (N - 1)} {SIDE / (N - 1)} 0.1" '
            f'pos="0 0 {z}" radius="{radius}" dim="2" mass="{MASS}">'
            f'<elasticity young="{young}" poisson="0" thickness="{thickness}" elastic2d="stretch"/>'
            f'<contact selfcollide="none" condim="3"/>{pin}</flexcomp></worldbody></mujoco>')


def mujoco_run(scene: str, duration: float, young: float, thickness: float, radius: float) -> dict:
    import mujoco

    notes = []
    mujoco.set_mju_user_warning(lambda msg: notes.append(str(msg).strip()))  # keep the table clean
    m = mujoco.MjModel.from_xml_string(mujoco_xml(scene, young, thickness, radius))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    edges = GridEdges(d.flexvert_xpos.copy())
    out = dict(depth=0.0, unconverged=0, status="ok")
    steps = int(round(duration / DT))
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=list(SCENES), choices=SCENES)
    ap.add_argument("--duration", type=float, default=5.0, help="simulated seconds per run (default 5)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--young", type=float, default=1e8, help="MuJoCo Young's modulus [Pa] (default 1e8)")
    ap.add_argument("--thickness", type=float, default=1e-3, help="MuJoCo membrane thickness [m] (default 1e-3)")
    ap.add_argument("--vertex-radius", type=float, default=0.005, help="MuJoCo vertex radius [m] (default 5e-3)")
    ap.add_argument("--blas-threads", default=None, help="see benchmarks/_common.py")
    args = ap.parse_args()
    try:
        import mujoco
        peer = f"MuJoCo {mujoco.__version__}"
    except ImportError:
        peer = None
    print_machine(THREADS)
    print(f"peer:    {peer or 'mujoco not installed (pip install mujoco): isocloth only'}")
    print()
    print("| scene | engine | CPU s / sim s | RTF | CPU ratio (isocloth / MuJoCo) | peak edge stretch | "
          "deepest node inside [mm] | unconverged | status |")
    print("|---|---|---|---|---|---|---|---|---|")
    for _ in range(args.repeats):
        for scene in args.only:
            runs = [("isocloth", lambda: isocloth_run(scene, args.duration))]
            if peer:
                runs.append((peer, lambda: mujoco_run(scene, args.duration, args.young, args.thickness,
                                                      args.vertex_radius)))
            results = [(name, run()) for name, run in runs]
            per = {name: r["cpu"] / max(r["simulated"], 1e-12) for name, r in results}
            for name, r in results:
                ratio = f"{per['isocloth'] / per[peer]:.1f}" if peer and name == "isocloth" else ""
                depth = f"{1000 * r['depth']:.2f}" if scene == "sphere-20x20" else "–"
                unconv = str(r["unconverged"]) if name == "isocloth" else "–"
                print(f"| {scene} | {name} | {per[name]:.3f} | {1 / per[name]:.2f}× | {ratio} | "
                      f"{100 * r['stretch']:.2f} % | {depth} | {unconv} | {r['status']} |", flush=True)


if __name__ == "__main__":
    main()
