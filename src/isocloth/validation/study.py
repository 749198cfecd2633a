"""Mesh-convergence studies: the Cusick drape and the locking test on a sequence of meshes.

A study runs one built-in scene per case (a mesh, and a bending stiffness or a noise seed) to its end
and records one row per case in ``table.csv`` (written atomically after every case; a re-run of the
same folder skips the cases already there), the settled shape of each case (``shapes/<case>.npz``:
positions (n, 3) float64 [m] and triangles (t, 3) int64) and a plot:

- ``cusick``: drape coefficient DC (thesis eq. 2.22, §2.7.2) against the node count, one curve per κ,
  with the Richardson extrapolation of the three finest meshes (:func:`richardson`);
- ``locking``: the free corner's position and the centre of mass of the four meshes of thesis §2.7.1
  (two irregular triangle meshes, two quad grids) for each noise seed, with the pairwise distances of
  the free corner (thesis Table 2.2).
"""

from __future__ import annotations

import csv
import io
import itertools
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["StudyCase", "cusick_cases", "locking_cases", "run_study", "richardson", "plot_study",
           "CUSICK_MESHES", "KAPPA0"]

KAPPA0 = 5e-5
"""κ0 [N·m] of the ``cusick-drape`` scene family: the thesis' low-stiffness drape with this code's bending matrix."""

CUSICK_MESHES = ((5, 50), (7, 70), (9, 90), (12, 120), (16, 160))
"""(node rings, nodes per ring) of the default Cusick sequence: 250 to 2560 nodes."""

_SQUARE = 'width = 1.0, height = 1.0, plane = "xy"'
LOCKING_MESHES = {
    "tri472": f'{{ generator = "irregular", node_count = 472, seed = 1, {_SQUARE} }}',
    "tri941": f'{{ generator = "irregular", node_count = 941, seed = 3, {_SQUARE} }}',
    "quad529": f'{{ generator = "rectangle", nx = 23, ny = 23, element = "quad", {_SQUARE} }}',
    "quad900": f'{{ generator = "rectangle", nx = 30, ny = 30, element = "quad", {_SQUARE} }}',
}
_FREE_CORNER = np.array([0.5, 0.5, 0.0])
_R_TABLE, _R_CLOTH, _TABLE_Z = 0.09, 0.15, 0.5


@dataclass(frozen=True)
class StudyCase:
    """One run of a study: ``name`` (unique in the study), the scene and its overrides, and the
    study's parameters of the case (``group``: κ [N·m] for cusick, noise seed for locking)."""

    name: str
    scene: str
    overrides: tuple[str, ...]
    group: float


def cusick_cases(meshes=CUSICK_MESHES, kappas=(KAPPA0,)) -> list[StudyCase]:
    """Cases of the Cusick study: every ((rings, per ring), κ) pair.

    Raises
    ------
    ValueError
        If a mesh has fewer than 2 rings or 8 nodes per ring, or a κ is negative.
    """
    cases = []
    for (nr, na), kappa in itertools.product(meshes, kappas):
        if int(nr) < 2 or int(na) < 8:
            raise ValueError(f"a Cusick mesh needs at least 2 rings of 8 nodes, got {nr} x {na}")
        if not kappa >= 0:
            raise ValueError(f"bending stiffness kappa must be >= 0 N·m, got {kappa}")
        cases.append(StudyCase(f"ring{nr}x{na}-k{kappa:g}", "cusick-drape",
                               (f"cloth.mesh.n_radial={int(nr)}", f"cloth.mesh.n_angular={int(na)}",
                                f"cloth.kappa={kappa!r}"), float(kappa)))
    return cases


def locking_cases(seeds=(4,)) -> list[StudyCase]:
    """Cases of the locking study: the four thesis meshes for every noise seed."""
    return [StudyCase(f"{mesh}-seed{int(seed)}", "locking-test",
                      (f"cloth.mesh={spec}", f"cloth.noise.seed={int(seed)}"), float(seed))
            for seed in seeds for mesh, spec in LOCKING_MESHES.items()]


_COLUMNS = ("case", "group", "nodes", "value", "corner_x", "corner_y", "corner_z", "com_z", "max_residual",
            "unconverged_steps", "peak_edge_stretch", "cpu_s")


def _read_table(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path, newline="") as fh:
        return [{k: (v if k == "case" else float(v)) for k, v in row.items()} for row in csv.DictReader(fh)]


def _write_table(path: Path, rows: list[dict]) -> None:
    from isocloth.io.atomic import atomic_write_text

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=_COLUMNS)
    w.writeheader()
    for r in rows:
        w.writerow({k: r[k] for k in _COLUMNS})
    atomic_write_text(path, buf.getvalue())


def _run_case(kind: str, case: StudyCase, folder: Path, extra: list[str], duration: float | None) -> dict:
    from isocloth.io.atomic import atomic_path
    from isocloth.scenes.loader import load_scene
    from isocloth.validation.drape import drape_coefficient

    over = list(case.overrides) + list(extra) + ["output.video='none'"]
    if duration is not None:
        over.append(f"simulation.duration={duration!r}")
    sc = load_scene(case.scene, over)
    m, st, s = sc.model, sc.stepper, sc.initial_state
    t0 = time.process_time()
    max_res, unconverged, stretch = 0.0, 0, 0.0
    while s.t < sc.duration - 1e-9:
        s, info = st.step(s)
        max_res = max(max_res, info.residual)
        unconverged += not info.converged
        stretch = max(stretch, info.edge_stretch_max)
    tri = m.surface_mesh.triangulated_faces()
    com = (s.x * m.masses[:, None]).sum(0) / m.masses.sum()
    x, x0 = m.surface_positions(s.x), m.surface_positions(m.initial_positions)  # the cloth's vertices
    corner = np.full(3, np.nan)
    if kind == "cusick":
        value = drape_coefficient(x - [0.0, 0.0, _TABLE_Z], tri, _R_TABLE, _R_CLOTH)
    else:
        corner = x[int(np.argmin(np.linalg.norm(x0 - _FREE_CORNER, axis=1)))]
        value = float(corner[2])
    (folder / "shapes").mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / "shapes" / f"{case.name}.npz") as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, positions=x, triangles=tri)
    return {"case": case.name, "group": case.group, "nodes": float(m.node_count), "value": float(value),
            "corner_x": float(corner[0]), "corner_y": float(corner[1]), "corner_z": float(corner[2]),
            "com_z": float(com[2]), "max_residual": max_res, "unconverged_steps": float(unconverged),
            "peak_edge_stretch": stretch, "cpu_s": time.process_time() - t0}


def run_study(kind: str, cases: list[StudyCase], folder, *, overrides=(), duration: float | None = None,
              report=None) -> list[dict]:
    """Run the cases not yet in ``folder/table.csv``, appending a row after each; returns all rows.

    Parameters
    ----------
    kind : "cusick" or "locking" (what ``value`` is: DC [%], or the free corner's height [m])
    cases : list of StudyCase
    folder : path of the study folder (created)
    overrides : scene overrides applied to every case (e.g. ``cloth.constraint_model='stretch-limited'``)
    duration : simulated time [s] of every case (default: the scene's)
    report : callable(str), optional, told about every finished case

    Raises
    ------
    ValueError
        For an unknown kind, duplicate case names, or a folder whose table holds another study.
    SceneError, SimulationDiverged
        From a case (the rows before it are kept).
    """
    if kind not in ("cusick", "locking"):
        raise ValueError(f"study kind must be 'cusick' or 'locking', got {kind!r}")
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise ValueError("study cases must have distinct names")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    table = folder / "table.csv"
    rows = _read_table(table)
    done = {r["case"] for r in rows}
    stranger = done - set(names)
    if stranger:
        raise ValueError(f"{table} holds cases of another study ({sorted(stranger)[0]}, ...): use a new folder")
    for case in cases:
        if case.name in done:
            continue
        rows.append(_run_case(kind, case, folder, list(overrides), duration))
        _write_table(table, rows)
        if report is not None:
            r = rows[-1]
            report(f"{case.name}: {int(r['nodes'])} nodes, value {r['value']:.4g}, "
                   f"{int(r['unconverged_steps'])} unconverged steps, {r['cpu_s']:.0f} s")
    return rows


def richardson(nodes, values) -> tuple[float, float]:
    """Richardson extrapolation of the three finest of a mesh sequence.

    With the mesh size h ∝ nodes^(−1/2) and values f(h) = f∞ + C h^p, the three finest meshes give p
    (by bisection on the ratio (f1 − f2)/(f2 − f3)) and f∞.

    Returns
    -------
    (f∞, p); (nan, nan) with fewer than three meshes or when the differences do not shrink
    monotonically (the sequence is not in its asymptotic range).
    """
    nodes = np.asarray(nodes, dtype=float)
    values = np.asarray(values, dtype=float)
    if nodes.size < 3:
        return float("nan"), float("nan")
    order = np.argsort(nodes)[-3:]
    h = nodes[order] ** -0.5
    f = values[order]
    d1, d2 = f[0] - f[1], f[1] - f[2]
    if d1 == 0 or d2 == 0 or np.sign(d1) != np.sign(d2) or abs(d2) >= abs(d1):
        return float("nan"), float("nan")
    target = d1 / d2

    def ratio(p):
        return (h[0] ** p - h[1] ** p) / (h[1] ** p - h[2] ** p) - target

    lo, hi = 1e-3, 12.0
    if ratio(lo) * ratio(hi) > 0:
        return float("nan"), float("nan")
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ratio(lo) * ratio(mid) > 0 else (lo, mid)
    p = 0.5 * (lo + hi)
    C = d2 / (h[1] ** p - h[2] ** p)
    return float(f[2] - C * h[2] ** p), float(p)


def pairwise_corner_distances(rows: list[dict]) -> dict:
    """Locking study: {seed: {(case a, case b): distance [m]}} of the free corners."""
    out = {}
    for seed in sorted({r["group"] for r in rows}):
        sub = [r for r in rows if r["group"] == seed]
        out[seed] = {(a["case"], b["case"]): float(np.linalg.norm(
            [a["corner_x"] - b["corner_x"], a["corner_y"] - b["corner_y"], a["corner_z"] - b["corner_z"]]))
            for a, b in itertools.combinations(sub, 2)}
    return out


def plot_study(kind: str, rows: list[dict], path) -> Path:
    """The study's plot (PNG): DC vs nodes per κ with the extrapolated DC (cusick), or the free
    corner's height and the centre of mass per mesh and seed (locking)."""
    from isocloth.viz.figures import save_figure
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2))
    ax = fig.add_subplot()
    for group in sorted({r["group"] for r in rows}):
        sub = sorted((r for r in rows if r["group"] == group), key=lambda r: r["nodes"])
        n = [r["nodes"] for r in sub]
        if kind == "cusick":
            line, = ax.plot(n, [r["value"] for r in sub], "o-", label=f"κ = {group:g} N·m")
            f_inf, p = richardson(n, [r["value"] for r in sub])
            if np.isfinite(f_inf):
                ax.axhline(f_inf, color=line.get_color(), ls="--", lw=0.8,
                           label=f"Richardson: {f_inf:.1f} % (order {p:.2f})")
        else:
            ax.plot(n, [r["corner_z"] for r in sub], "o", label=f"free corner z, seed {int(group)}")
            ax.plot(n, [r["com_z"] for r in sub], "s", label=f"centre of mass z, seed {int(group)}")
    ax.set_xlabel("nodes")
    ax.set_ylabel("drape coefficient DC [%]" if kind == "cusick" else "height [m]")
    ax.set_title("Cusick drape vs mesh (thesis §2.7.2)" if kind == "cusick" else "Locking test (thesis §2.7.1)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return save_figure(fig, path)
