"""The constraint models side by side: thesis-nodal, stretch-limited (isocloth.fem.stretch_limits) and
nonconforming (isocloth.fem.nonconforming).

For each scene both models run in the same process, alternating (``--repeats`` rounds), and the
script prints one Markdown row per run: CPU time per simulated second and real-time factor
(process CPU time, area diagnostics included), unknowns (3 per node or edge midpoint) and constraint
rows, projection iterations and factorizations per step, and the fidelity measures taken at every
step on the cloth surface (the ghost surface of the nonconforming model): peak edge stretch (element
edges, len/rest − 1), mean and largest element area error (thesis eq. 2.24) and total area error
(eq. 2.23), the deepest penetration of a surface vertex into an obstacle, and unconverged steps; for
the nonconforming model also the largest strain of an element's own edges (its rows). The CPU ratio is each run / the bare thesis-nodal run of the
same round. Scenes that once needed per-scene options with the thesis' rows (membrane
stabilisation, area-error substepping) also run with those options,
"thesis-nodal + options" (``OPTIONS``), the settings the stretch-limited default replaces.

Scenes
------
hang-a2          built-in (DIN A2, 7×9 nodes, shaken corners), 10 s
sheet-20x20      1 × 1 m light-cotton, 20×20 nodes, hanging from its two top corners (vertical), 5 s
sphere-20x20     the same sheet dropped flat from 5 cm onto a 25 cm sphere, μ = 0.5, 1 s
tablecloth       built-in (laid on a μ = 2 table), 2 s
cylinder-friction  built-in (μ = 0.55 bar), 2 s
shorts-hang-free built-in garment without its self-collisions (the default scene until 2026-11-26), 4 s
shorts-hang      built-in garment with self-collisions (4 mm, μ = 0.3), 4 s
hit-a2           built-in (a stick hits a hanging sheet four times), 8 s
drop-fold        built-in (a sheet falls and folds onto itself), 1.5 s

Usage: python benchmarks/bench_constraint_model.py [--quick] [--only NAME ...] [--repeats N] [--models M ...]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import configure_threads  # noqa: E402

THREADS = configure_threads()

import argparse  # noqa: E402

import numpy as np  # noqa: E402


from _common import print_machine, run_timed, sheet_config  # noqa: E402


def _sphere_config(model: str, duration: float) -> dict:
    return {"name": "sphere-20x20",
            "cloth": {"mesh": {"generator": "rectangle", "width": 1.0, "height": 1.0, "nx": 20, "ny": 20,
                               "element": "quad", "plane": "xy"},
                      "placement": {"translate": [0.0, 0.0, 0.30]}, "noise": {"sigma": 0.0005, "seed": 0},
                      "rho": 0.2, "fabric": "light-cotton", "constraint_model": model},
            "obstacles": [{"type": "sphere", "center": [0.0, 0.0, 0.0], "radius": 0.25, "mu": 0.5}],
            "simulation": {"dt": 0.01, "duration": duration}, "output": {"video": "none"}}


OPTIONS = {
    "hit-a2": ["cloth.membrane_stiffness=1000", "simulation.max_area_error_jump=0.02"],
    "shorts-hang-free": ["cloth.membrane_stiffness=1000"],
    "drop-fold": ["cloth.membrane_stiffness=1000"],
}
"""Per-scene options the built-in scenes set with the thesis' rows (until 2026-11-26; hit-a2 also ran the
contact-free fast path, an option since removed: with the stretch limits it was slower on every scene measured)."""


def build(name: str, model: str, duration: float, options: bool = False):
    """A Scene of ``name`` with ``constraint_model = model`` (and ``OPTIONS[name]`` with ``options``)."""
    from isocloth.scenes.loader import build_scene, config_from_dict, load_scene

    if name == "sheet-20x20":
        cfg = sheet_config("sheet-20x20", 1.0, 1.0, 20, 20, dt=0.01, duration=duration)
        cfg["cloth"]["constraint_model"] = model
        return build_scene(config_from_dict(cfg))
    if name == "sphere-20x20":
        return build_scene(config_from_dict(_sphere_config(model, duration)))
    if name == "shorts-hang-free":  # the default scene without its self-collisions (as it was until 2026-11-26)
        from isocloth.scenes.loader import load_scene_config

        over = [f"cloth.constraint_model='{model}'", "output.video='none'", f"simulation.duration={duration}"]
        cfg, base_dir = load_scene_config("shorts-hang", over + (OPTIONS.get(name, []) if options else []))
        return build_scene(cfg.model_copy(update={"self_collision": None}), base_dir)
    over = [f"cloth.constraint_model='{model}'", "output.video='none'", f"simulation.duration={duration}"]
    return load_scene(name, over + (OPTIONS.get(name, []) if options else []))


def measure(name: str, model: str, duration: float, options: bool = False) -> dict:
    sc = build(name, model, duration, options)
    st, s = sc.stepper, sc.initial_state
    s, _ = st.step(s)  # warm-up (numba compilation, factor patterns): not timed
    out = dict(stretch=0.0, mean=0.0, largest=0.0, total=0.0, penetration=0.0, unconverged=0, steps=0,
               iterations=0, factorizations=0, element=float("nan"), unknowns=3 * sc.model.node_count,
               rows=sc.model.constraint_count)
    nc = sc.model.nonconforming

    def observe(s, info):
        out["steps"] += 1
        out["iterations"] += info.iterations
        out["factorizations"] += info.factorizations or 0
        if nc is not None:
            out["element"] = np.nanmax([out["element"], float(np.abs(nc.element_strain(s.x)).max())])
        out["unconverged"] += not info.converged
        out["stretch"] = max(out["stretch"], info.edge_stretch_max)
        out["mean"] = max(out["mean"], info.area_error_mean)
        out["largest"] = max(out["largest"], info.area_error_max)
        out["total"] = max(out["total"], info.area_error_total)
        x = sc.model.surface_positions(s.x)
        for obs in sc.model.obstacles:
            out["penetration"] = max(out["penetration"], -float(obs.signed_distance(x, s.t).min()))

    s, cpu, out["status"] = run_timed(st, s, sc.duration, observe)
    out["simulated"] = s.t - sc.dt
    out["cpu"] = cpu
    return out


SCENES = {"hang-a2": 10.0, "sheet-20x20": 5.0, "sphere-20x20": 1.0, "tablecloth": 2.0, "cylinder-friction": 2.0,
          "shorts-hang-free": 4.0, "shorts-hang": 4.0, "hit-a2": 8.0, "drop-fold": 1.5}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1/5 of the simulated time")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--models", nargs="*", default=None, choices=["thesis-nodal", "stretch-limited", "nonconforming"],
                    help="run only these models (the CPU ratio is then against the first one run)")
    ap.add_argument("--blas-threads", default=None, help="see benchmarks/_common.py")
    args = ap.parse_args()
    print_machine(THREADS)
    print()
    print("| scene | model | unknowns | rows | CPU s / sim s | RTF | its/step | factorizations/step | peak edge stretch | "
          "mean elem. area err. | largest elem. err. | total area err. | element rows | penetration [mm] | "
          "unconverged | CPU ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, duration in SCENES.items():
        if args.only and name not in args.only:
            continue
        duration = duration / 5 if args.quick else duration
        runs = [("thesis-nodal", False)] + ([("thesis-nodal", True)] if name in OPTIONS else []) + \
            [("stretch-limited", False), ("nonconforming", False)]
        if args.models:
            runs = [(m, o) for m, o in runs if m in args.models]
        for _ in range(args.repeats):
            base = None
            for model, options in runs:
                r = measure(name, model, duration, options)
                per = r["cpu"] / max(r["simulated"], 1e-12)
                base = per if base is None else base
                label = model + (" + options" if options else "") + ("" if r["status"] == "ok" else f" [{r['status']}]")
                steps = max(r["steps"], 1)
                element = "" if np.isnan(r["element"]) else f"{100 * r['element']:.3f} %"
                print(f"| {name} | {label} | {r['unknowns']} | {r['rows']} | {per:.3f} | {1 / per:.2f}× | "
                      f"{r['iterations'] / steps:.2f} | {r['factorizations'] / steps:.2f} | "
                      f"{100 * r['stretch']:.2f} % | {100 * r['mean']:.2f} % | {100 * r['largest']:.1f} % | "
                      f"{100 * r['total']:.3f} % | {element} | {1000 * r['penetration']:.3f} | {r['unconverged']} | "
                      f"{per / base:.2f} |", flush=True)


if __name__ == "__main__":
    main()
