"""Garments drape or lock: the Garment Library shorts, T-shirt and pants dropped on a table and hung.

Each garment (UC Berkeley Garment Library meshes, rest shape = modelled shape, light cotton, bending
as the fabric preset, self-collisions 4 mm / μ = 0.3, dt = 10 ms, 2 s, default constraint model) runs
in two set-ups:

drop   laid flat-ish (rotated 90° about x, so its front-to-back depth is vertical), lowest point 5 cm
       above a μ = 0.5 table. Measure: height (z extent) at the end and its minimum over the run,
       as a fraction of the initial height. A garment that drapes collapses onto itself; one whose
       constraints lock keeps its tubes round.
hang   held at two nodes, the highest one on each side (|x| > 0.1 m: waist or shoulders), 1.5 m up.
       Measure: how far the lowest node hangs below the grasps at the end, as a fraction of the
       garment's modelled length (z extent).

Per run: peak edge stretch, mean / largest element area error (thesis eq. 2.24) and total area
error (eq. 2.23) at every step, frames (every 10th step) with intersecting faces, unconverged
steps and CPU time. ``--finer`` adds each garment re-triangulated finer (every triangle split
into four at its edge midpoints, same rest shape).

Usage: python benchmarks/bench_garments.py [--only shorts tshirt pants] [--modes drop hang] [--finer]
       [--bgl DIR] [--duration S] [--model nonconforming]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import configure_threads  # noqa: E402

THREADS = configure_threads()

import argparse  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from _common import print_machine, run_timed  # noqa: E402

GARMENTS = ("shorts", "tshirt", "pants")
DEFAULT_BGL = Path(__file__).resolve().parents[2] / "shared" / "data" / "meshes" / "bgl"


def finer_mesh(path: Path, out_dir: Path) -> Path:
    """The mesh at ``path`` with every triangle split into four (edge midpoints), written as OBJ."""
    import trimesh

    from isocloth.mesh.io import read_mesh

    mesh = read_mesh(path, rest="geometry")
    v, f = trimesh.remesh.subdivide(mesh.vertices, mesh.triangles)
    out = out_dir / f"{path.stem}-x4.obj"
    trimesh.Trimesh(v, f, process=False).export(out)
    return out


def scene_config(path: Path, mode: str, duration: float, model: str | None = None) -> dict:
    from scipy.spatial.transform import Rotation

    from isocloth.mesh.io import read_mesh

    v = read_mesh(path, rest="geometry").vertices
    cfg = {"name": f"{path.stem}-{mode}", "description": "garment benchmark",
           "cloth": {"mesh": {"file": str(path), "rest": "geometry"}, "fabric": "light-cotton"},
           "self_collision": {"thickness": "4 mm", "mu": 0.3},
           "simulation": {"dt": 0.01, "duration": duration, "tolerance": 1e-3}, "output": {"video": "none"}}
    if model is not None:
        cfg["cloth"]["constraint_model"] = model
    if mode == "drop":
        w = v @ Rotation.from_euler("xyz", [90, 0, 0], degrees=True).as_matrix().T
        cfg["cloth"]["placement"] = {"rotate_deg": [90, 0, 0], "translate": [0.0, 0.0, float(0.05 - w[:, 2].min())]}
        cfg["obstacles"] = [{"type": "plane", "name": "table", "mu": 0.5}]
    else:
        lift = float(1.5 - v[:, 2].max())
        points = []
        for side in (-1.0, 1.0):
            cand = np.flatnonzero(side * v[:, 0] > 0.1)
            if cand.size == 0:
                raise SystemExit(f"{path}: no node with |x| > 0.1 m on side {side:+.0f} to hang it from")
            p = v[cand[np.argmax(v[cand, 2])]].copy()
            p[2] += lift
            points.append(p.tolist())
        cfg["cloth"]["placement"] = {"translate": [0.0, 0.0, lift]}
        cfg["grasps"] = [{"name": "hold", "nodes": {"nearest": points}}]
    return cfg


def measure(path: Path, mode: str, duration: float, model: str | None = None) -> dict:
    from isocloth.contact.intersection import face_intersections
    from isocloth.scenes.loader import build_scene, config_from_dict

    sc = build_scene(config_from_dict(scene_config(path, mode, duration, model)))
    st, s, m = sc.stepper, sc.initial_state, sc.model
    st.area_diagnostics = True
    mesh, surface = m.surface_mesh, m.surface_positions  # the cloth's vertices (ghost surface of "nonconforming")
    h0 = float(np.ptp(surface(s.x)[:, 2]))
    length = float(np.ptp(mesh.rest_vertices[:, 2])) if mode == "hang" else h0
    out = dict(nodes=m.node_count, stretch=0.0, mean=0.0, largest=0.0, total=0.0, unconverged=0,
               frames=0, crossing=0, min_height=1.0)

    def observe(s, info):
        out["unconverged"] += not info.converged
        out["stretch"] = max(out["stretch"], info.edge_stretch_max)
        out["mean"] = max(out["mean"], info.area_error_mean)
        out["largest"] = max(out["largest"], info.area_error_max)
        out["total"] = max(out["total"], info.area_error_total)
        x = surface(s.x)
        out["min_height"] = min(out["min_height"], float(np.ptp(x[:, 2])) / h0)
        if s.step_index % 10 == 0:
            out["frames"] += 1
            out["crossing"] += len(face_intersections(x, mesh.triangles, mesh.quads)) > 0

    s, cpu, out["status"] = run_timed(st, s, duration, observe)
    x = surface(s.x)
    out["height"] = float(np.ptp(x[:, 2])) / h0
    g = m.grasp_nodes
    out["below"] = float(s.x[g, 2].mean() - x[:, 2].min()) / length if g.size else float("nan")
    out["cpu"], out["simulated"] = cpu, s.t
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=list(GARMENTS), choices=GARMENTS)
    ap.add_argument("--modes", nargs="*", default=["drop", "hang"], choices=["drop", "hang"])
    ap.add_argument("--finer", action="store_true", help="also each garment split 1:4")
    ap.add_argument("--bgl", type=Path, default=DEFAULT_BGL, help="Garment Library folder (<garment>/<garment>.obj)")
    ap.add_argument("--duration", type=float, default=2.0, help="simulated seconds per run (default 2)")
    ap.add_argument("--model", default=None, choices=["stretch-limited", "thesis-nodal", "nonconforming"],
                    help="constraint model (default: the package's default)")
    ap.add_argument("--blas-threads", default=None, help="see benchmarks/_common.py")
    args = ap.parse_args()
    missing = [g for g in args.only if not (args.bgl / g / f"{g}.obj").is_file()]
    if missing:
        raise SystemExit(f"no {', '.join(missing)} mesh under {args.bgl}: pass --bgl with the Garment Library "
                         "folder (it holds <garment>/<garment>.obj)")
    print_machine(THREADS)
    print()
    print("| garment | nodes | set-up | result | peak edge stretch | mean elem. area err. | largest elem. err. | "
          "total area err. | frames with crossings | unconverged | CPU s / sim s | status |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for g in args.only:
            paths = [args.bgl / g / f"{g}.obj"]
            if args.finer:
                paths.append(finer_mesh(paths[0], Path(tmp)))
            for path in paths:
                for mode in args.modes:
                    r = measure(path, mode, args.duration, args.model)
                    result = (f"height {r['height']:.2f} (min {r['min_height']:.2f}) of initial" if mode == "drop"
                              else f"lowest node {r['below']:.2f} lengths below the grasps")
                    print(f"| {path.stem} | {r['nodes']} | {mode} | {result} | {100 * r['stretch']:.2f} % | "
                          f"{100 * r['mean']:.2f} % | {100 * r['largest']:.1f} % | {100 * r['total']:.3f} % | "
                          f"{r['crossing']}/{r['frames']} | {r['unconverged']} | "
                          f"{r['cpu'] / max(r['simulated'], 1e-12):.1f} | {r['status']} |", flush=True)


if __name__ == "__main__":
    main()
