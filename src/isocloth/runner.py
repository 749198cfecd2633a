"""Run a scene into a results folder, with checkpoints, resume and Ctrl-C safety.

A run folder holds:
- ``trajectory.npz`` + ``metadata.json``: saved frames (positions, velocities, times) and the
  scene, parameters and versions (``isocloth.io.trajectory``; while the run goes on, the frames of
  each checkpoint are appended as ``trajectory.part-*.npz``, merged at the end);
- ``diagnostics.csv``: one row per step (iterations, residual, area errors, wall time), appended
  at each checkpoint;
- ``checkpoint.npz``: the latest State (exact), for ``isocloth run --resume``;
- ``summary.json``: real-time factor, residuals, area errors, and why the run stopped early;
- ``video.mp4`` (or ``.gif``) when rendering is on.
Every file is written atomically (appends end with a sync); on Ctrl-C, SIGTERM or a divergence
the frames and diagnostics computed so far are flushed together with a checkpoint, so nothing
computed is lost.
"""

from __future__ import annotations

import csv
import io
import math
import os
import platform
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from isocloth.io.atomic import atomic_write_text, remove_temporaries
from isocloth.io.jsontext import json_text
from isocloth.scenes.loader import (Scene, SceneError, apply_overrides, build_scene, config_from_dict, nodes_inside,
                                    scene_obstacles)
from isocloth.state import State
from isocloth.step.diagnostics import StepInfo
from isocloth.supervisor import GRACE

__all__ = ["RunSummary", "run_scene", "resume_run", "render_run", "run_obstacles", "speed_hints", "versions"]

_DIAG_FIELDS = list(StepInfo(0.0, 0, 0.0, True).as_row().keys())


def versions() -> dict:
    """Versions of isocloth and its numerical dependencies (for run metadata)."""
    import scipy

    import isocloth

    return {"isocloth": isocloth.__version__, "numpy": np.__version__, "scipy": scipy.__version__,
            "python": platform.python_version()}


@dataclass
class RunSummary:
    """What a run did.

    Attributes
    ----------
    folder : Path
    steps : int, steps taken in total (including before a resume)
    simulated_time : float [s]
    wall_time : float [s], time spent stepping in this invocation
    real_time_factor : float, simulated seconds per wall second (this invocation)
    max_residual : float, largest final relative constraint residual of any step
    mean_iterations : float
    unconverged_steps : int
    max_area_error_total, max_area_error_mean : float (eq. 2.23, 2.24)
    max_area_error_element : float, largest relative area error of a single element at any step
    max_edge_stretch : float, largest element-edge strain of any step (``StepInfo.edge_stretch_max``)
    interrupted : bool, stopped by Ctrl-C or SIGTERM (a checkpoint was written)
    stopped : str or None, why the run ended before its duration ("interrupted", or "diverged: " or
        "step budget: " and the reason; ``UNFINISHED`` in the provisional summary written while the run goes on);
        None for a complete run
    extra : dict, also written to summary.json: "tolerance", "hints" (list of str, :func:`speed_hints`);
        for the elastic model "mean_step_split_s", the mean wall time per step [s] in "detection", "merge" and
        "solver" (the contact columns of Li et al. 2018 Table 2) and of the whole "step", and with
        self-collisions "steps_with_intersections" and "steps_with_intersections_after_icm", the steps whose
        contact solve left intersecting faces and those where intersection contour minimization did not remove them
    video : Path or None
    """

    folder: Path
    steps: int = 0
    simulated_time: float = 0.0
    wall_time: float = 0.0
    real_time_factor: float = float("nan")
    max_residual: float = 0.0
    mean_iterations: float = 0.0
    unconverged_steps: int = 0
    max_area_error_total: float = 0.0
    max_area_error_mean: float = 0.0
    max_area_error_element: float = 0.0
    max_edge_stretch: float = 0.0
    interrupted: bool = False
    stopped: str | None = None
    video: Path | None = None
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "extra"}
        d["folder"] = str(self.folder)
        d["video"] = str(self.video) if self.video else None
        d.update(self.extra)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> RunSummary:
        """The summary of :meth:`to_dict` (keys that are not attributes go to ``extra``)."""
        own = {k: v for k, v in d.items() if k in cls.__dataclass_fields__ and k != "extra"}
        own["folder"] = Path(own.get("folder", "."))
        own["video"] = Path(own["video"]) if own.get("video") else None
        floats = {k for k, f in cls.__dataclass_fields__.items() if f.type in ("float", float)}
        own = {k: (float("nan") if v is None and k in floats else v) for k, v in own.items()}  # NaN is written null
        return cls(**own, extra={k: v for k, v in d.items() if k not in cls.__dataclass_fields__})


def speed_hints(scene: Scene, diag_rows: list[dict]) -> list[str]:
    """Advice printed after a run (and kept in summary.json under "hints"), from its diagnostics.

    Sub-steps: a contact-free scene with a sparse projection (more than ``DENSE_LIMIT`` rows) that
    refactored ∇C M⁻¹ ∇Cᵀ in at least half of its iterations (at least 20) keeps the factorization
    with shorter steps (``Stepper.substeps``; 7× on the 660-node sheet of benchmarks/RESULTS.md).
    """
    from isocloth.solvers.linalg import DENSE_LIMIT

    hints = []
    its = sum(int(r["iterations"]) for r in diag_rows)
    facts = sum(int(r["factorizations"]) for r in diag_rows)
    model = scene.model
    if (scene.stepper.substeps == 1 and not model.has_contacts and model.active_rows.size > DENSE_LIMIT
            and its >= 20 and facts >= 0.5 * its):
        hints.append(f"the projection refactored in {100 * facts / its:.0f} % of its {its} iterations: on large "
                     "sheets `--set simulation.substeps=4` often runs several times faster (README, Speed)")
    return hints


def _diag_cell(v):
    """A diagnostics.csv cell: floats exactly (repr), an empty cell for NaN / ±inf (not measured: no
    ω without collision detection, no gap without contacts), which :func:`_read_diag` reads back."""
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ""
    return v


def _diag_csv(rows: list[dict], header: bool = True) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=_DIAG_FIELDS)
    if header:
        w.writeheader()
    for r in rows:
        w.writerow({k: _diag_cell(v) for k, v in r.items()})
    return buf.getvalue()


class _DiagnosticsFile:
    """diagnostics.csv of a run: written whole (atomically) the first time, then appended, so a
    long run's I/O stays linear in its length. An append cut short by a crash leaves a partial
    last line, which :func:`_read_diag` drops."""

    def __init__(self, path: Path):
        self.path = path
        self.written = None  # rows on disk (None: the file is not this run's yet)

    def write(self, rows: list[dict]) -> None:
        if self.written is None:
            atomic_write_text(self.path, _diag_csv(rows))
        elif len(rows) > self.written:
            with open(self.path, "a", newline="", encoding="utf-8") as fh:
                fh.write(_diag_csv(rows[self.written:], header=False))
                fh.flush()
                os.fsync(fh.fileno())
        self.written = len(rows)


def _read_diag(path: Path) -> list[dict]:
    """Rows of diagnostics.csv with the types of StepInfo's fields (int, bool, str, float). An empty
    float cell (not measured, :func:`_diag_cell`) reads as the field's non-finite default (ω NaN,
    min_gap inf), NaN for a field whose default is finite; files of older versions wrote nan / inf."""
    if not path.exists():
        return []
    proto = StepInfo(0.0, 0, 0.0, True).as_row()
    parse = {k: (int if type(v) is int else (lambda x: x == "True") if type(v) is bool else
                 str if type(v) is str else float) for k, v in proto.items()}
    empty = {k: (float("nan") if parse[k] is float and math.isfinite(v) else v) for k, v in proto.items()}
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for r in rows:
        if None in r.values() or None in r:  # a line cut short by a crash while appending
            break
        # a column this version does not write is dropped; one it adds gets the field's default
        out.append({k: v if r.get(k) is None else parse[k](r[k]) if r[k] != "" else empty[k] for k, v in proto.items()})
    return out


def _metadata(scene: Scene, save_every: int) -> dict:
    return {
        "scene": scene.config.model_dump(mode="json"),
        "scene_base_dir": str(scene.base_dir.resolve()),
        "model": scene.model.describe(),
        "dt": scene.dt,
        "save_every_steps": save_every,
        "versions": versions(),
    }


def _save_every(scene: Scene) -> int:
    """Steps between saved frames (the scene's output.fps, at least every step)."""
    return max(1, int(round(1.0 / (scene.config.output.fps * scene.dt))))


def _max_measured(rows: list[dict], key: str) -> float:
    """Largest value of ``key`` over diagnostics rows, ignoring NaN (not measured); 0 without any."""
    values = np.array([r.get(key, np.nan) for r in rows], dtype=np.float64)
    return float(np.max(values[np.isfinite(values)], initial=0.0))


RUN_FILES = ("trajectory.npz", "trajectory.part-*.npz", "metadata.json", "checkpoint.npz", "diagnostics.csv",
             "summary.json", "video.mp4", "video.gif")
"""The files of a run folder (their atomic writes' leftovers are removed when a run starts or resumes)."""


def run_scene(scene: Scene, folder: str | Path, *, progress: bool = False, render: bool | None = None,
              on_warning=None, checkpoint_wall: float | None = None, _state: State | None = None, _frames=None,
              _diag_rows=None) -> RunSummary:
    """Simulate a scene for its duration and write the run folder.

    Parameters
    ----------
    scene : Scene (from ``isocloth.scenes.load_scene``)
    folder : output directory (created)
    progress : show a tqdm progress bar on stderr
    render : write the video (default: the scene's ``output.video`` setting)
    on_warning : callable(str), optional: receives one line per saved frame whose steps warned
        (counts by kind, :class:`WarningCounts`)
    checkpoint_wall : float [s] > 0, optional: write frames and a checkpoint at least this often in wall-clock
        time for this call only (a viewer following the folder), instead of the scene's ``output.checkpoint_wall``

    Returns
    -------
    RunSummary (also written to ``summary.json``; ``extra["start"]``: :func:`start_report` of a new
    run, ``extra["step_warnings"]``: steps that warned, by kind). On KeyboardInterrupt or SIGTERM the partial
    results and a checkpoint are written and the summary has ``interrupted=True``.

    Raises
    ------
    SimulationDiverged
        If a step diverges; before it propagates, every frame up to the last good step, a
        checkpoint of that step and ``summary.json`` (``stopped`` = "diverged: ...") are written.
    StepBudgetExceeded
        If a step runs longer than ``simulation.step_budget`` (:mod:`isocloth.solvers.budget`); the same
        results are written first (``stopped`` = "step budget: ...").
    """
    with _sigterm_as_interrupt():
        return _run_scene(scene, folder, progress=progress, render=render, on_warning=on_warning, _state=_state,
                          _frames=_frames, _diag_rows=_diag_rows, checkpoint_wall=checkpoint_wall)


WARNING_KINDS = (("split into", "split into substeps"), ("grasps held back", "grasps held back"),
                 ("projection jumped", "projection jumped"), ("projection", "unconverged"),
                 ("membrane relaxation rejected", "relaxation rejected"),
                 ("mean element area error jumped", "area error jump"))
"""(prefix of a ``StepInfo.warnings`` entry, its kind in the counts)."""


class WarningCounts:
    """Steps with warnings, by kind (``WARNING_KINDS``, else "other"), since the last report and in
    total; :meth:`report` sends one line for the steps since the last one to ``sink`` (callable(str))."""

    def __init__(self, sink=None) -> None:
        from collections import Counter

        self.sink = sink
        self.total: Counter = Counter()
        self.pending: Counter = Counter()
        self.steps = 0

    def add(self, warnings: list[str]) -> None:
        """Count one step with these ``StepInfo.warnings`` (once per kind)."""
        kinds = {next((kind for prefix, kind in WARNING_KINDS if w.startswith(prefix)), "other") for w in warnings}
        for kind in kinds:
            self.total[kind] += 1
            self.pending[kind] += 1
        self.steps += bool(kinds)

    def report(self, t: float) -> None:
        """Send the line for the steps since the last report (t [s]: the time of this frame)."""
        if self.steps and self.sink is not None:
            counts = ", ".join(f"{n} {kind}" for kind, n in sorted(self.pending.items()))
            self.sink(f"t = {t:.3f} s: {self.steps} step{'s' * (self.steps > 1)} with warnings ({counts}); "
                      "see diagnostics.csv")
        self.pending.clear()
        self.steps = 0


def _previous_start(folder: Path) -> dict | None:
    """The start report of a run's summary.json (None when it has none or cannot be read)."""
    import json

    try:
        return json.loads((folder / "summary.json").read_text(encoding="utf-8")).get("start")
    except (OSError, ValueError):
        return None


START_AREA_MISMATCH = 0.05
"""Relative difference of the initial and rest areas above which :func:`start_report` warns."""


def start_report(scene: Scene) -> dict:
    """Checks of the initial state, for ``summary.json`` and the console.

    Returns a dict: ``rest_area``, ``area`` [m²] and ``area_mismatch`` (relative) of the cloth at
    rest and at t = 0 with the scene's ``rest`` source; ``grasp_offset`` [m], the largest distance
    of a grasped node from its target at t = 0; ``closest_obstacle`` [m], the smallest signed
    distance of a node to an obstacle; ``nodes_inside``, obstacle name → number of nodes starting more
    than 1 mm inside it (only a forced start has any: :func:`~isocloth.scenes.loader.build_scene`);
    ``intersecting_faces``, pairs of faces crossing at t = 0; ``self_collision_thickness`` [m] when
    self-collisions run with the thickness derived from the mesh
    (:func:`~isocloth.model.model.default_thickness`); ``warnings``, one sentence per finding that
    deserves attention (area mismatch above ``START_AREA_MISMATCH``, a rest area no cloth has
    (:func:`~isocloth.mesh.quality.unit_hint`), a grasp offset above 1 cm, a derived thickness below the
    default, intersecting faces)."""
    from isocloth.contact.intersection import face_intersections
    from isocloth.mesh.quality import unit_hint
    from isocloth.mesh.topology import element_areas, rest_element_areas

    model, x_nodes = scene.model, scene.initial_state.x
    mesh, x = model.surface_mesh, model.surface_positions(x_nodes)
    rest, now = float(rest_element_areas(mesh).sum()), float(element_areas(mesh, x).sum())
    out: dict = {"rest_area": rest, "area": now, "area_mismatch": abs(now - rest) / rest if rest > 0 else 0.0}
    ctl = model.control(0.0)
    g = model.grasp_nodes if ctl.grasp_nodes is None else ctl.grasp_nodes
    out["grasp_offset"] = float(np.linalg.norm(x_nodes[g] - ctl.grasp_targets, axis=1).max()) if g.size else 0.0
    dist = [float(obs.signed_distance(x, 0.0).min()) for obs in model.obstacles]
    out["closest_obstacle"] = min(dist) if dist else None
    inside = {name: int(nodes.size) for name, nodes, _ in nodes_inside(model, x_nodes)}
    out["nodes_inside"] = inside
    out["intersecting_faces"] = int(len(face_intersections(x, mesh.triangles, mesh.quads)))
    notes = []
    if out["area_mismatch"] > START_AREA_MISMATCH:
        source = getattr(getattr(scene.config.cloth, "mesh", None), "rest", None)
        notes.append(f"the cloth's area at t = 0 ({now:.4g} m²) differs from its rest area ({rest:.4g} m²) by "
                     f"{100 * out['area_mismatch']:.0f} %" + (f" (rest = {source!r}; another rest source, "
                                                              "'geometry' or 'vt', may fit)" if source else ""))
    for name, count in inside.items():
        notes.append(f"{count} cloth node{'s' if count > 1 else ''} started inside obstacle {name!r} (forced start): "
                     "the first step pushed them out")
    if out["grasp_offset"] > 0.01:
        notes.append(f"a grasped node starts {out['grasp_offset']:.3g} m from its target: the first step pulls it there")
    hint = unit_hint(rest)
    if hint:
        notes.append(hint)
    spec = getattr(scene.config, "self_collision", None)
    if spec is not None and spec.enabled and spec.thickness is None:
        from isocloth.model.model import DEFAULT_THICKNESS

        tau = model.self_collision.thickness
        out["self_collision_thickness"] = tau
        if tau < DEFAULT_THICKNESS:
            notes.append(f"self-collision thickness {1e3 * tau:.3g} mm, a quarter of the smallest distance between "
                         "non-adjacent primitives of the mesh (the scene gives none; self_collision.thickness sets "
                         "it)")
    if out["intersecting_faces"]:
        notes.append(f"{out['intersecting_faces']} pairs of faces intersect at t = 0 (isocloth info lists them); "
                     "self-collisions cannot separate them")
    out["warnings"] = notes
    return out


def _run_scene(scene: Scene, folder: str | Path, *, progress: bool, render: bool | None, on_warning,
               _state: State | None, _frames, _diag_rows, checkpoint_wall: float | None = None) -> RunSummary:
    """The body of :func:`run_scene` (SIGTERM already turned into KeyboardInterrupt)."""
    from tqdm import tqdm

    from isocloth.io.trajectory import TrajectoryWriter
    from isocloth.solvers.budget import StepBudgetExceeded, wall_clock_budget
    from isocloth.step.stepper import SimulationDiverged

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    remove_temporaries(folder, RUN_FILES)  # left by a run killed while writing (kill -9)
    if _state is None:  # a new run: a summary left by an earlier run in the folder is not this run's
        (folder / "summary.json").unlink(missing_ok=True)
    dt = scene.dt
    out = scene.config.output
    save_every = _save_every(scene)
    ckpt_every = max(1, int(round(out.checkpoint_every / dt)))
    total_steps = int(round(scene.duration / dt))
    mesh, surface = scene.model.surface_mesh, scene.model.surface_positions
    writer = TrajectoryWriter(folder, mesh.triangles, mesh.quads, _metadata(scene, save_every), flush_every=0)

    def write_frame(state: State) -> None:  # frames hold the cloth surface (the ghost of the nonconforming model)
        writer.append(state.t, surface(state.x), surface(state.v))

    state = scene.initial_state.copy() if _state is None else _state
    diag_rows: list[dict] = list(_diag_rows or [])
    if _frames is None:
        write_frame(state)
    else:
        for t, x, v in _frames:
            writer.append(t, x, v)

    diagnostics = _DiagnosticsFile(folder / "diagnostics.csv")

    def checkpoint(complete: bool = False, provisional: bool = False) -> None:
        if complete:
            writer.close(complete=True)  # every frame into trajectory.npz (no last part to merge at once)
        else:
            writer.flush()
        diagnostics.write(diag_rows)
        state.save(folder / "checkpoint.npz")
        if provisional:  # what the folder says if the process is killed before the next one
            provisional = RunSummary(folder=folder, interrupted=True, stopped=UNFINISHED, extra=dict(summary.extra))
            _fill_summary(provisional, scene, state, diag_rows, wall, steps_here)
            atomic_write_text(folder / "summary.json", json_text(provisional.to_dict(), sort_keys=True))

    summary = RunSummary(folder=folder)
    if _state is None:
        summary.extra["start"] = start_report(scene)
        for note in summary.extra["start"]["warnings"] if on_warning is not None else []:
            on_warning(f"at the start: {note}")
    else:  # a resumed run keeps the report of its start
        summary.extra["start"] = _previous_start(folder)
    warned = WarningCounts(on_warning)
    for row in diag_rows:  # the steps before a resume count in the totals (not reported again)
        warned.add([w for w in str(row.get("warnings") or "").split(";") if w])
    warned.pending.clear()
    warned.steps = 0
    wall = 0.0
    steps_here = 0
    bar = tqdm(total=total_steps, initial=state.step_index, disable=not progress, unit="step",
               desc=scene.config.name, leave=False)
    saved = state.step_index  # step of the last frame written
    failure = None  # SimulationDiverged or StepBudgetExceeded, raised once the results are written
    budget = getattr(scene.config.simulation, "step_budget", None)
    if checkpoint_wall is not None and not (isinstance(checkpoint_wall, (int, float)) and checkpoint_wall > 0):
        raise ValueError(f"checkpoint_wall must be a number of seconds > 0, got {checkpoint_wall!r}")
    wall_every = out.checkpoint_wall if checkpoint_wall is None else float(checkpoint_wall)
    try:
        checkpoint(provisional=True)  # the folder is a valid (resumable) run from the start
        last_checkpoint = time.perf_counter()
        while state.step_index < total_steps:
            t0 = time.perf_counter()
            with wall_clock_budget(budget):
                state, info = scene.stepper.step(state)
            step_wall = time.perf_counter() - t0
            wall += step_wall
            steps_here += 1
            diag_rows.append(info.as_row())
            warned.add(info.warnings)
            if state.step_index % save_every == 0 or state.step_index == total_steps:
                write_frame(state)
                saved = state.step_index
                warned.report(state.t)
            # slow steps (the only ones a kill can interrupt, isocloth.supervisor) and wall-clock checkpoints
            # also rewrite the provisional summary, whose totals cost O(steps)
            late = time.perf_counter() - last_checkpoint > wall_every or step_wall > SLOW_STEP
            if state.step_index % ckpt_every == 0 or late:
                checkpoint(provisional=late)
                last_checkpoint = time.perf_counter()
            bar.update(1)
            if progress and steps_here % 20 == 0:
                bar.set_postfix(rtf=f"{(steps_here * dt) / max(wall, 1e-9):.1f}x", res=f"{info.residual:.1e}")
        checkpoint(complete=True)
    except KeyboardInterrupt:
        summary.interrupted = True
        summary.stopped = "interrupted"
        with _shielded():  # a second Ctrl-C must not lose the checkpoint
            checkpoint()
    except (SimulationDiverged, StepBudgetExceeded) as exc:
        failure = exc
        summary.stopped = f"{'diverged' if isinstance(exc, SimulationDiverged) else 'step budget'}: {exc}"
        if saved != state.step_index:  # the last good step, between frames
            write_frame(state)
        checkpoint()
    finally:
        bar.close()
    warned.report(state.t)
    summary.extra["step_warnings"] = dict(warned.total)

    _fill_summary(summary, scene, state, diag_rows, wall, steps_here)
    do_render = (out.video != "none") if render is None else render
    if do_render and summary.stopped is None:
        try:
            summary.video = render_run(folder)
        except KeyboardInterrupt:
            summary.interrupted = True
            summary.stopped = f"interrupted while rendering the video (the run is complete: isocloth render {folder})"
        except (ValueError, OSError, RuntimeError, ImportError) as exc:  # the results stand without a video
            summary.extra["video_error"] = (f"the video could not be rendered ({type(exc).__name__}: {exc}); the run "
                                            f"is complete: try isocloth render {folder}")
    with _shielded():
        atomic_write_text(folder / "summary.json", json_text(summary.to_dict(), sort_keys=True))
    if failure is not None:
        raise failure
    return summary


SLOW_STEP = GRACE
"""A step that takes longer than this [s of wall time] is followed by a checkpoint. ``isocloth run`` kills
a run whose interpreter does not answer Ctrl-C within :data:`isocloth.supervisor.GRACE` (the same 0.5 s),
which only a step longer than that can cause: a run of such steps loses none when killed. The writes cost
little beside such a step."""

UNFINISHED = "unfinished: the process ended after the last checkpoint"
"""``RunSummary.stopped`` of the summary written with the first checkpoint and with those that follow a slow
step (``SLOW_STEP``) or come by wall-clock time, which a complete, interrupted or diverged run replaces: a
folder whose process was killed says so."""


def _fill_summary(summary: RunSummary, scene: Scene, state: State, diag_rows: list[dict], wall: float,
                  steps_here: int) -> None:
    """Set the totals of ``summary`` from the run's ``diag_rows`` (one per step), its current ``state``
    and the ``wall`` time [s] of the ``steps_here`` steps taken by this process."""
    res = np.array([r["residual"] for r in diag_rows]) if diag_rows else np.zeros(1)
    summary.steps = state.step_index
    summary.simulated_time = state.t
    summary.wall_time = wall
    summary.real_time_factor = (steps_here * scene.dt) / wall if wall > 0 else float("nan")
    summary.max_residual = float(res.max())
    summary.mean_iterations = float(np.mean([r["iterations"] for r in diag_rows])) if diag_rows else 0.0
    summary.unconverged_steps = int(sum(not r["converged"] for r in diag_rows))
    summary.max_area_error_total = float(max((r["area_error_total"] for r in diag_rows), default=0.0))
    summary.max_area_error_mean = float(max((r["area_error_mean"] for r in diag_rows), default=0.0))
    summary.max_area_error_element = _max_measured(diag_rows, "area_error_max")
    summary.max_edge_stretch = _max_measured(diag_rows, "edge_stretch_max")
    elastic = scene.config.cloth.model == "elastic"
    summary.extra["model"] = scene.config.cloth.model
    # the elastic model's residual is its contact solver's [m/s]; the inextensible one's a relative constraint residual
    summary.extra["tolerance"] = scene.stepper.tolerance if elastic else scene.config.simulation.tolerance
    summary.extra["hints"] = speed_hints(scene, diag_rows)
    if elastic and diag_rows:  # Li et al. 2018 Table 2: t̄_cd, t̄_m, t̄_s
        summary.extra["mean_step_split_s"] = {k: float(np.mean([r[f"{k}_time"] for r in diag_rows]))
                                              for k in ("detection", "merge", "solver")}
        summary.extra["mean_step_split_s"]["step"] = float(np.mean([r["wall_time"] for r in diag_rows]))
        if scene.model.self_collision.enabled:
            summary.extra["steps_with_intersections"] = int(sum(r["crossings"] > 0 for r in diag_rows))
            summary.extra["steps_with_intersections_after_icm"] = int(sum(r["icm_remaining"] > 0 for r in diag_rows))


@contextmanager
def _signal_handlers(handlers: dict):
    """Install ``handlers`` ({signal: handler}) inside the block, restoring the previous ones after;
    nothing in a thread other than the main one (signals cannot be set there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, h) for sig, h in handlers.items()}
    try:
        yield
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)


def _sigterm_as_interrupt():
    """SIGTERM (``timeout``, a batch system, ``kill``) ends the run like Ctrl-C: partial results,
    checkpoint and summary are written."""
    from isocloth.supervisor import interrupt

    handlers = {signal.SIGTERM: interrupt}
    if signal.getsignal(signal.SIGINT) is not None:  # restored after the run (interrupt ignores it from then on)
        handlers[signal.SIGINT] = signal.getsignal(signal.SIGINT)
    return _signal_handlers(handlers)


def _shielded():
    """Ctrl-C and SIGTERM are ignored inside (the final writes of a run)."""
    return _signal_handlers({signal.SIGINT: signal.SIG_IGN, signal.SIGTERM: signal.SIG_IGN})


def stopped_run_summary(folder: str | Path, reason: str) -> RunSummary:
    """The summary of a run whose process was stopped from outside (``isocloth.supervisor``): the one
    written with its last checkpoint, marked interrupted with ``reason``, written back to summary.json
    (a folder without one, stopped before its first checkpoint, gets a summary of zero steps).

    Raises
    ------
    OSError
        If summary.json cannot be written."""
    import json

    folder = Path(folder)
    try:
        d = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        d = {}
    summary = RunSummary.from_dict({**d, "folder": str(folder), "interrupted": True, "stopped": reason})
    atomic_write_text(folder / "summary.json", json_text(summary.to_dict(), sort_keys=True))
    return summary


def render_run(folder: str | Path, path: str | Path | None = None, *, trajectory=None, **kw) -> Path:
    """Render a saved run's video (``video.mp4``/``.gif`` per the scene's output settings); ``trajectory``:
    the run's trajectory when the caller has loaded it (else :func:`~isocloth.io.trajectory.load_trajectory`,
    which refuses an empty or non-finite one), ``kw``: options of :func:`~isocloth.viz.render.render_video`."""
    from isocloth.io.trajectory import load_trajectory
    from isocloth.viz.render import render_video

    folder = Path(folder)
    traj = load_trajectory(folder) if trajectory is None else trajectory
    out = traj.metadata.get("scene", {}).get("output", {})
    fmt = out.get("video", "mp4")
    if fmt == "none":
        fmt = "mp4"
    path = Path(path) if path else folder / f"video.{fmt}"
    # grasped surface vertices ("vertices": the nonconforming model's grasps hold edge midpoints)
    grasped = [i for g in traj.metadata.get("model", {}).get("grasps", []) for i in g.get("vertices", g["nodes"])]
    opts = {"fps": 25, "size": tuple(out.get("video_size", (640, 480))), "highlight_nodes": np.array(grasped, int),
            "elev": float(out.get("elev", 20.0)), "azim": float(out.get("azim", -60.0)),
            "obstacles": run_obstacles(traj.metadata)}
    opts.update(kw)
    if out.get("camera") and "camera" not in kw:
        from isocloth.scenes.schema import VideoCameraSpec

        opts["camera"] = VideoCameraSpec(**out["camera"]).camera(opts["size"])
    return render_video(traj, path, **opts)


def run_obstacles(meta: dict) -> list:
    """The obstacles of a saved run's scene, rebuilt from its metadata ([] when it has none or
    they cannot be rebuilt, e.g. a mesh file that moved: the video then shows the cloth only)."""
    if not meta.get("scene", {}).get("obstacles"):
        return []
    try:
        return scene_obstacles(config_from_dict(meta["scene"], "metadata.json"), Path(meta.get("scene_base_dir", ".")))
    except SceneError:
        return []


def _check_checkpoint(scene: Scene, state: State, path: Path) -> None:
    """SceneError unless ``state`` can continue ``scene``: a finite time, positions and velocities, the same
    node count, step count and time consistent with dt, not past the end (a complete run has nothing to resume)."""
    n, total = scene.model.node_count, int(round(scene.duration / scene.dt))
    if not math.isfinite(state.t) or state.step_index < 0:
        raise SceneError(f"{path}: its time t = {state.t:.6g} s at step {state.step_index} is not a time of a run: the "
                         "checkpoint is damaged; resume from an earlier copy or run the scene again")
    for name, arr in (("positions", state.x), ("velocities", state.v)):
        try:
            finite = bool(np.isfinite(np.asarray(arr, dtype=np.float64)).all())
        except (TypeError, ValueError):  # not numbers
            finite = False
        if not finite:
            raise SceneError(f"{path}: its {name} are not finite numbers (NaN or inf): the checkpoint is damaged; "
                             "resume from an earlier copy or run the scene again")
    if state.x.shape != (n, 3):
        raise SceneError(f"{path} holds {state.x.shape[0]} nodes but the run's scene has {n}: it belongs to another "
                         "run; run the scene again")
    if abs(state.t - state.step_index * scene.dt) > 1e-9 * max(1.0, state.t):
        raise SceneError(f"{path}: step {state.step_index} at t = {state.t:.6g} s does not match dt = {scene.dt:g} s "
                         "of the run's scene: it belongs to another run; run the scene again")
    if state.step_index > total:
        raise SceneError(f"{path}: t = {state.t:.6g} s is past the scene's duration {scene.duration:g} s: it belongs "
                         "to another run; run the scene again")
    if state.step_index == total:
        raise SceneError(f"the run in {path.parent} is complete ({total} steps, {scene.duration:g} s): nothing to "
                         "resume; extend it with --set simulation.duration=<longer> or run the scene again")


RESUMABLE_KEYS = ("simulation.duration", "simulation.step_budget")
"""Scene keys an override may change when a run is resumed (the others would change the run's physics)."""


def resume_run(folder: str | Path, *, progress: bool = False, render: bool | None = None,
               overrides: list[str] | None = None, on_warning=None, checkpoint_wall: float | None = None) -> RunSummary:
    """Continue an interrupted run from its checkpoint; the result is bit-identical to an
    uninterrupted run of the same scene. ``overrides`` (``key=value`` as for ``isocloth run
    --set``) may change the keys of ``RESUMABLE_KEYS`` only: ``simulation.duration=8`` extends a run
    (also a complete one). ``progress``, ``render``, ``on_warning``, ``checkpoint_wall``: as for :func:`run_scene`.

    Raises
    ------
    FileNotFoundError
        If the folder has no checkpoint or trajectory.
    SceneError
        If the run is already complete, its trajectory or metadata cannot be read, or its checkpoint cannot be
        read or does not belong to
        the run's scene (node count, time beyond the duration, step count and time disagree), or
        an override changes another key than those of ``RESUMABLE_KEYS``.
    """
    from isocloth.io.trajectory import load_trajectory

    folder = Path(folder)
    ck = folder / "checkpoint.npz"
    if not ck.exists():
        raise FileNotFoundError(f"{ck} not found: only runs with a checkpoint can be resumed")
    try:
        traj = load_trajectory(folder)
    except ValueError as exc:  # a damaged trajectory.npz, part or metadata.json
        raise SceneError(f"{exc}: the run in {folder} cannot be resumed; run the scene again into a new folder") from None
    meta = traj.metadata
    bad = [o for o in overrides or [] if o.split("=", 1)[0].strip() not in RESUMABLE_KEYS]
    if bad:
        raise SceneError(f"--set {bad[0]!r} cannot change a resumed run: only {', '.join(RESUMABLE_KEYS)} can "
                         "(run the scene again into a new folder for other changes)")
    cfg = config_from_dict(apply_overrides(meta["scene"], overrides), str(folder / "metadata.json"))
    # the start check concerns the initial state, which a resumed run does not use
    scene = build_scene(cfg, Path(meta.get("scene_base_dir", ".")), force=True)
    try:
        state = State.load(ck)
    except Exception as exc:  # noqa: BLE001 - numpy/zipfile raise several kinds on a damaged file
        raise SceneError(f"{ck} cannot be read ({type(exc).__name__}: {exc}); resume from an earlier copy "
                         "or run the scene again") from None
    _check_checkpoint(scene, state, ck)
    steps = np.rint(traj.times / scene.dt).astype(np.int64)
    save_every = _save_every(scene)
    # frames up to the checkpoint on the run's frame schedule (the last frame of a complete or a diverged
    # run may be off it: an extended run then has the frames of one run of the longer duration)
    keep = (traj.times <= state.t + 1e-12) & (steps % save_every == 0)
    vel = traj.velocities if traj.velocities is not None else np.zeros_like(traj.positions)
    frames = [(traj.times[i], traj.positions[i], vel[i]) for i in np.flatnonzero(keep)]
    rows = _read_diag(folder / "diagnostics.csv")[: state.step_index]
    return run_scene(scene, folder, progress=progress, render=render, on_warning=on_warning,
                     checkpoint_wall=checkpoint_wall, _state=state,
                     _frames=frames, _diag_rows=rows)
