"""Command-line interface: a thin typer layer over the library."""

from __future__ import annotations

import os

# One BLAS thread: the solver's dense factorizations are small, and multithreaded BLAS on a busy
# 2-core machine made steps up to 15x slower (benchmarks/RESULTS.md). Set before numpy loads.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import json  # noqa: E402
import math
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=False,
                  help="isocloth: inextensible cloth simulation for robotic manipulation.")

DEFAULT_SCENE = "shorts-hang"
LARGE_ELEMENT_ERROR = 0.10
"""A run whose largest element area error exceeds this fraction gets a warning line."""


def _version(value: bool) -> None:
    if value:
        from isocloth import __version__

        typer.echo(f"isocloth {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="print the version and exit")) -> None:
    """isocloth: inextensible cloth simulation for robotic manipulation."""


def _rtf(v: float) -> str:
    """A real-time factor with three significant digits (0.0123x, 16.9x, 1235x); "n/a" without stepping."""
    if not v == v:  # NaN: no step in this invocation
        return "n/a"
    return f"{v:.0f}x" if v >= 1000 else f"{v:.3g}x"


def _fail(msg: str, code: int = 2) -> None:
    typer.secho(f"error: {msg}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


def _out_option(value: Optional[str], what: str, default: str) -> Optional[Path]:
    """The path of an --out option (None when not given); an empty or blank one is refused: it would
    mean the current folder."""
    if value is None:
        return None
    if not value.strip():
        _fail(f"--out is empty: give {what} (e.g. --out {default}), or drop --out for the default")
    return Path(value)


@app.command()
def scenes() -> None:
    """List the built-in scenes."""
    from isocloth.scenes.loader import builtin_scene_names, load_scene_config

    names = builtin_scene_names()
    width = max(map(len, names)) + 2
    for name in names:
        cfg, _ = load_scene_config(name)
        mark = " (default)" if name == DEFAULT_SCENE else ""
        typer.echo(f"{name:<{width}}{cfg.description}{mark}")


@app.command()
def info(mesh: Path = typer.Argument(..., help="mesh file (OBJ incl. Garment Library extras, PLY, ...)"),
         merge_tolerance: Optional[float] = typer.Option(None, "--merge-tolerance", help="sew vertices closer than this [m]"),
         rest: str = typer.Option("auto", "--rest", help="rest shape: auto, vt, m or geometry (as cloth.mesh.rest)")) -> None:
    """Print vertices, faces, boundary loops, Euler characteristic, corners, rest area and defects."""
    from isocloth.mesh.io import read_mesh
    from isocloth.mesh.mesh import MeshError
    from isocloth.mesh.quality import unit_hint, validate_mesh
    from isocloth.runner import START_AREA_MISMATCH

    try:
        m = read_mesh(mesh, merge_tolerance=merge_tolerance, rest=rest)
    except (MeshError, OSError, ValueError) as exc:
        _fail(str(exc))
    import numpy as np

    from isocloth.contact.intersection import face_intersections

    report = validate_mesh(m)
    crossing = face_intersections(m.vertices, m.triangles, m.quads) if report.ok else []
    extra = []  # listed with the report's defects: a mesh that passes through itself is not "defects: none"
    if len(crossing):
        listed = ", ".join(f"({a}, {b})" for a, b in np.asarray(crossing)[:5].tolist())
        extra.append(f"intersecting faces: {len(crossing)} pairs, e.g. {listed}: the mesh passes through itself "
                     "(a fold-over also when the faces share a node); self-collisions cannot separate them, fix "
                     "the file")
    typer.echo(report.to_text(extra))
    typer.echo(f"rest shape: {m.rest_source}")
    mismatch = abs(report.current_area - report.rest_area) / report.rest_area if report.rest_area > 0 else 0.0
    if mismatch > START_AREA_MISMATCH:
        typer.echo(f"warning: the geometry's area differs from the rest area by {100 * mismatch:.0f} %: the cloth "
                   "would start stretched or compressed; try another --rest (the same as cloth.mesh.rest)")
    hint = unit_hint(report.rest_area)
    if hint:
        typer.echo(f"warning: {hint}")
    if not report.ok or len(crossing):
        raise typer.Exit(1)


class _Progress:
    """tqdm bars on stderr, only on a terminal: ``bar(done, total)`` for one stage, or
    ``bar.stage(name)(done, total)`` for a new bar per stage."""

    def __init__(self, desc: str, enabled: bool = True) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.desc = desc
        self.bar = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=self.desc, leave=False, file=sys.stderr)
        self.bar.total = total
        self.bar.update(done - self.bar.n)

    def stage(self, name: str):
        if name != self.desc:
            self.close()
            self.desc = name
        return self

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _warn_line(line: str) -> None:
    """One warning line on stderr, above a running progress bar."""
    from tqdm import tqdm

    tqdm.write(f"  warning: {line}", file=sys.stderr)


def _compiling_notice() -> None:
    """Say so when the numerical kernels have not been compiled yet (numba caches them on disk)."""
    import isocloth

    root = Path(isocloth.__file__).parent
    if not any(root.rglob("*.nbi")):
        typer.echo("compiling the numerical kernels (first run only; about a minute) ...", err=True)


def _stopped(folder, reason: str):
    """:func:`isocloth.runner.stopped_run_summary` of a run stopped from outside, or a named error when the
    folder cannot be written."""
    from isocloth.runner import stopped_run_summary

    try:
        return stopped_run_summary(folder, reason)
    except OSError as exc:
        _fail(_write_error(exc, folder))


def _write_error(exc: OSError, folder, resumed: bool = False) -> str:
    """The message for an OSError of ``isocloth run``: a write error in the run ``folder`` (or one of its
    parents) names the folder and the fix by its cause (full disk, not writable, cannot be created); another
    path (a missing input) is named as it is."""
    import errno

    where = exc.filename
    if folder is not None and where is not None:
        path, target = Path(os.path.abspath(where)), Path(os.path.abspath(folder))
        ours = path == target or path in target.parents or target in path.parents  # the folder, in it, a parent
    else:
        ours = folder is not None and not isinstance(exc, FileNotFoundError)
    if not ours:  # a missing input named by the message (a resume folder without a checkpoint), another path
        return str(exc) if where is None else f"{where}: {exc.strerror or exc}"
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        fix = ("the disk is full: free disk space" + ("" if resumed else ", or choose another folder (on another disk) "
                                                       "with --out,") + " and run again")
        if (Path(folder) / "checkpoint.npz").is_file():
            fix += f"; or free space and continue with: isocloth run --resume {folder}"
    elif resumed:  # --resume writes into the run's own folder
        fix = "make the run folder writable (or copy it elsewhere and resume the copy)"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        fix = "the folder is not writable: choose another folder with --out, or make this one writable"
    elif exc.errno == errno.ENOENT:
        fix = ("the folder cannot be created there: choose another folder with --out (missing parent folders of an "
               "ordinary path are created)")
    else:
        fix = "choose another folder with --out (a writable folder; missing parent folders are created)"
    detail = f" ({where})" if where is not None and Path(where) != Path(folder) else ""
    return f"cannot write the run folder {folder}: {exc.strerror or exc}{detail}; {fix}"


@app.command()
def run(scene: Optional[str] = typer.Argument(None, help=f"built-in scene name or TOML file (default {DEFAULT_SCENE}; "
                                                         "not with --resume)", show_default=False),
        out: Optional[str] = typer.Option(None, "--out", "-o", help="run folder (default runs/<scene>)"),
        set_: list[str] = typer.Option([], "--set", help="override a scene key: --set simulation.dt=0.005"),
        video: bool = typer.Option(True, "--video/--no-video", help="render a video at the end"),
        resume: Optional[Path] = typer.Option(None, "--resume", help="continue the run in this folder"),
        force: bool = typer.Option(False, "--force", help="start even if cloth nodes begin inside an obstacle "
                                                          "(the first step pushes them out)"),
        progress: bool = typer.Option(True, "--progress/--no-progress"),
        view: bool = typer.Option(False, "--view", help="show the run live in the browser while it runs (frames "
                                  "arrive every second; the viewer stays until Ctrl-C)"),
        view_port: int = typer.Option(8080, "--view-port", min=0, max=65535, help="port of --view")) -> None:
    """Simulate a scene and write trajectory, diagnostics, checkpoint and video to a run folder."""
    from isocloth.mesh.mesh import MeshError
    from isocloth.runner import resume_run, run_scene
    from isocloth.scenes.loader import SceneError, load_scene
    from isocloth.solvers.budget import StepBudgetExceeded
    from isocloth.step.stepper import SimulationDiverged
    from isocloth.supervisor import ChildDied, Unresponsive, supervised

    if resume is not None and scene is not None:
        _fail(f"--resume continues the folder's own scene; drop the scene argument {scene!r}")
    if resume is not None and out is not None:
        _fail("--resume continues the run in its own folder; drop --out")
    scene = DEFAULT_SCENE if scene is None else scene
    out = _out_option(out, "a run folder", "runs/mine")
    folder = resume
    _compiling_notice()
    live = None
    every = LIVE_FRAMES_EVERY if view else None  # frames reach the viewer every second
    try:
        if resume is not None:
            live = _LiveView(resume, view_port) if view else None
            summary = supervised(resume_run, resume, progress=progress, render=None if video else False,
                                 overrides=set_, on_warning=_warn_line, checkpoint_wall=every)
        else:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", UserWarning)
                sc = load_scene(scene, set_, force=force)
            for w in caught:
                typer.echo(f"warning: {w.message}", err=True)
            folder = out or Path("runs") / sc.config.name
            what = (f"elastic model ({sc.stepper.forces.material.name})" if sc.config.cloth.model == "elastic"
                    else f"{sc.model.constraint_count} constraints")
            nc = getattr(sc.model, "nonconforming", None)
            nodes = (f"{sc.model.node_count} nodes" if nc is None else
                     f"{nc.vertex_count} vertices ({nc.unknown_count} edge midpoints)")
            typer.echo(f"running {sc.config.name}: {nodes}, {what}, dt = {sc.dt} s, "
                       f"{sc.duration} s -> {folder}", err=True)
            live = _LiveView(folder, view_port) if view else None
            summary = supervised(run_scene, sc, folder, progress=progress and sys.stderr.isatty(),
                                 render=None if video else False, on_warning=_warn_line, checkpoint_wall=every)
    except Unresponsive as exc:
        summary = _stopped(folder, f"interrupted: {exc}; the folder holds the last checkpoint")
    except ChildDied as exc:
        _stopped(folder, f"stopped: {exc}")
        _fail(f"{exc}; the frames up to its last checkpoint are in {folder}: continue with isocloth run --resume "
              f"{folder}", 3)
    except (SceneError, MeshError) as exc:
        _fail(str(exc))
    except SimulationDiverged as exc:
        _fail(f"simulation diverged: {exc}\n  the frames before it, a checkpoint and summary.json are in {folder}", 3)
    except StepBudgetExceeded as exc:
        _fail(f"a step ran past simulation.step_budget ({exc}); the frames before it, a checkpoint and summary.json "
              f"are in {folder}: continue with isocloth run --resume {folder} --set simulation.step_budget=<more seconds>", 3)
    except OSError as exc:  # read-only or full disk, a path through a file, a folder that cannot be created
        _fail(_write_error(exc, folder, resumed=resume is not None))
    tol = summary.extra.get("tolerance", float("nan"))
    typer.echo(f"{'interrupted' if summary.interrupted else 'done'}: {summary.simulated_time:.3f} s simulated "
               f"in {summary.wall_time:.2f} s -> real-time factor {_rtf(summary.real_time_factor)}")
    if summary.extra.get("model") == "elastic":
        typer.echo(f"  max contact residual {summary.max_residual:.2e} m/s (tolerance {tol:.0e} m/s), mean "
                   f"Gauss-Seidel sweeps {summary.mean_iterations:.2f}, unconverged steps {summary.unconverged_steps}")
        split = summary.extra.get("mean_step_split_s")
        if split:
            typer.echo(f"  per step: contact detection {1e3 * split['detection']:.2f} ms, merging "
                       f"{1e3 * split['merge']:.2f} ms, contact solver {1e3 * split['solver']:.2f} ms, whole step "
                       f"{1e3 * split['step']:.2f} ms")
        if "steps_with_intersections" in summary.extra:
            typer.echo(f"  steps with intersecting faces after the contact solver: "
                       f"{summary.extra['steps_with_intersections']}, after intersection contour minimization: "
                       f"{summary.extra['steps_with_intersections_after_icm']}")
    else:
        typer.echo(f"  max constraint residual {summary.max_residual:.2e} (tolerance {tol:.0e}), "
                   f"mean iterations {summary.mean_iterations:.2f}, unconverged steps {summary.unconverged_steps}")
    typer.echo(f"  area error: total max {100 * summary.max_area_error_total:.3f} %, "
               f"per-element mean max {100 * summary.max_area_error_mean:.2f} %, "
               f"largest element {100 * summary.max_area_error_element:.1f} %; "
               f"peak edge stretch {100 * summary.max_edge_stretch:.2f} %")
    if summary.max_area_error_element > LARGE_ELEMENT_ERROR:
        typer.echo(f"  warning: an element's area was {100 * summary.max_area_error_element:.0f} % off its rest "
                   f"area (above {100 * LARGE_ELEMENT_ERROR:.0f} %): look at diagnostics.csv (area_error_max) and "
                   "the mesh's smallest angles (slivers)")
    typer.echo(f"  results in {summary.folder}" + (f", video {summary.video}" if summary.video else ""))
    if summary.extra.get("video_error"):
        typer.echo(f"  warning: {summary.extra['video_error']}")
    warned = summary.extra.get("step_warnings") or {}
    if warned:
        typer.echo("  steps with warnings: " + ", ".join(f"{n} {kind}" for kind, n in sorted(warned.items())))
    for hint in summary.extra.get("hints", []):
        typer.echo(f"  hint: {hint}")
    if live is not None:
        if summary.interrupted:  # Ctrl-C stopped the run: stop the viewer too
            live.stop()
        else:
            live.serve_until_interrupted()
    if summary.interrupted:
        typer.echo(f"  resume with: isocloth run --resume {summary.folder}")
        raise typer.Exit(130)


LIVE_FRAMES_EVERY = 1.0
"""Wall-clock seconds between the checkpoints of a run shown with ``--view`` (``run_scene(checkpoint_wall=)``)."""



class _LiveView:
    """The browser viewer of a run folder that a run is writing (``isocloth run --view``): ``isocloth view FOLDER
    --wait`` in a process of its own (the run itself is forked by :func:`isocloth.supervisor.supervised`, which a
    process with the viewer's server threads must not be), following the folder as frames arrive."""

    def __init__(self, folder: Path, port: int) -> None:
        import subprocess

        self.proc = subprocess.Popen([sys.executable, "-m", "isocloth", "view", str(folder), "--port", str(port),
                                      "--wait", "600"], stdin=subprocess.DEVNULL)

    def stop(self) -> None:
        """Stop the viewer."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - a viewer that does not stop is killed
            self.proc.kill()

    def serve_until_interrupted(self) -> None:
        """After the run: keep the viewer until Ctrl-C (or SIGTERM), then stop it."""
        if self.proc.poll() is not None:
            return
        typer.echo("the viewer goes on showing the run: Ctrl-C to stop")
        try:
            _wait_for_interrupt()
        finally:
            self.stop()


def _wait_for_interrupt() -> None:
    """Block until Ctrl-C (SIGINT) or SIGTERM."""
    import signal

    def _term(*_):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, _term) if threading.current_thread() is threading.main_thread() else None
    try:
        while True:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


@app.command()
def view(run_folder: Path = typer.Argument(..., help="a run folder written by 'isocloth run' (finished or running)"),
         host: str = typer.Option("127.0.0.1", "--host", help="address to listen on (0.0.0.0: every interface)"),
         port: int = typer.Option(8080, "--port", min=0, max=65535, help="port to listen on (0: any free port)"),
         follow: bool = typer.Option(True, "--follow/--no-follow", help="show new frames while a run writes the "
                                     "folder"),
         wait: float = typer.Option(0.0, "--wait", min=0.0, help="seconds to wait for the folder's first frames (a "
                                    "run that is starting)")) -> None:
    """Play a run in the browser: cloth, obstacles and grasped nodes, with a time slider and play / pause."""
    from isocloth.viz.viewer import RunViewer

    if wait <= 0:
        _load_run(run_folder)  # a named error for a missing, damaged or empty run folder
    try:
        viewer = RunViewer(run_folder, host=host, port=port, follow=follow, wait=wait)
    except (FileNotFoundError, ValueError) as exc:
        _fail(f"{run_folder} holds no run to show ({exc}): give the folder of an 'isocloth run'")
    except OSError as exc:
        _fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}; choose another port with --port, or an "
              "address of this machine with --host")
    typer.echo(f"viewer at {viewer.url}: open it in a browser; Ctrl-C to stop")
    try:
        _wait_for_interrupt()
    finally:
        viewer.stop()


@app.command()
def render(run_folder: Path = typer.Argument(..., help="a run folder written by 'isocloth run'"),
           export: Optional[str] = typer.Option(None, "--export", help="obj or ply: one mesh file per frame; usd: one "
                                                "time-sampled stage of the cloth and the obstacles"),
           out: Optional[str] = typer.Option(None, "--out", "-o", help="video path, export folder, or USD file "
                                             "(.usd, .usda, .usdc)"),
           every: int = typer.Option(1, "--every", min=1, help="export every k-th frame")) -> None:
    """Re-render a saved run's video, or export its frames as meshes or as a USD stage."""
    out = _out_option(out, "a video path or, with --export, a folder (a .usd file for usd)",
                      "runs/mine/video.mp4" if export is None else "runs/mine/frames")
    traj = _load_run(run_folder)
    if export is not None and export.lower().lstrip(".") == "usd":
        _export_usd(run_folder, traj, out, every)
        return
    if export is not None:
        from isocloth.io.export import EXPORT_FORMATS, export_frames

        if export.lower().lstrip(".") not in EXPORT_FORMATS:
            _fail(f"unknown export format {export!r}; allowed: {', '.join(EXPORT_FORMATS)}, usd")
        target = out or run_folder / f"frames_{export}"
        if target.exists() and not target.is_dir():
            _fail(f"{target} is a file: --export writes one file per frame into a folder; give a folder with --out")
        paths = _exporting("exporting frames", f"the frames to {target}", "choose another folder with --out",
                           lambda bar: export_frames(traj, target, fmt=export, every=every, progress=bar))
        typer.echo(f"wrote {len(paths)} {export.upper()} files to {target}")
        return
    from isocloth.runner import render_run

    bar = _Progress("rendering frames")
    try:
        path = render_run(run_folder, out, progress=bar, trajectory=traj)
    except (ValueError, OSError, RuntimeError) as exc:
        _fail(f"the video could not be rendered ({type(exc).__name__}: {exc})")
    finally:
        bar.close()
    typer.echo(f"wrote {path}")


def _load_run(run_folder: Path):
    """The trajectory of a run folder, or a named error (not a run folder, a damaged or missing file, no
    frame, a non-finite position: :func:`~isocloth.io.trajectory.load_trajectory`)."""
    from isocloth.io.trajectory import load_trajectory

    if not (run_folder / "trajectory.npz").exists():
        _fail(f"{run_folder} has no trajectory.npz: is it a run folder?")
    try:
        return load_trajectory(run_folder)
    except (OSError, ValueError) as exc:
        _fail(str(exc))


def _shown(value):
    """A summary.json value as printed: the file's JSON, with NaN / inf of an older file as null."""
    if isinstance(value, dict):
        return {k: _shown(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shown(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value



def _export_usd(run_folder: Path, traj, out: Optional[Path], every: int) -> None:
    """``isocloth render RUN --export usd``: the run as one USD stage (default RUN/cloth.usd)."""
    from isocloth.io.trajectory import Trajectory
    from isocloth.io.usd import USD_SUFFIXES, export_usd
    from isocloth.runner import run_obstacles

    target = out or run_folder / "cloth.usd"
    if target.suffix.lower() not in USD_SUFFIXES:
        _fail(f"{target}: a USD stage is one file with the suffix .usd, .usda or .usdc; e.g. --out {run_folder / 'cloth.usd'}")
    if every > 1:
        traj = Trajectory(traj.times[::every], traj.positions[::every], traj.triangles, traj.quads, traj.metadata)
    path = _exporting("exporting USD", str(target), "choose another path with --out",
                      lambda bar: export_usd(traj, target, run_obstacles(traj.metadata), progress=bar))
    typer.echo(f"wrote {path} ({traj.frame_count} frames)")


def _exporting(label: str, what: str, fix: str, write):
    """``write(progress)`` under a progress bar ``label``; a ValueError or OSError becomes a named error
    ("cannot write ``what``: ...; ``fix``")."""
    bar = _Progress(label)
    try:
        return write(bar)
    except ValueError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"cannot write {what}: {exc.strerror or exc}; {fix}")
    finally:
        bar.close()

@app.command()
def summary(run_folder: Path) -> None:
    """Print a run's summary.json."""
    p = run_folder / "summary.json"
    if not p.is_file():
        _fail(f"{p} not found: is {run_folder} a run folder written by 'isocloth run'?")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        _fail(f"{p} cannot be read ({exc}): the run folder is damaged; run the scene again (a run that is not "
              f"complete writes a new summary when resumed: isocloth run --resume {run_folder})")
    if not isinstance(data, dict):
        _fail(f"{p} must hold a JSON object, got {type(data).__name__}: the run folder is damaged; run the scene "
              f"again (a run that is not complete writes a new summary when resumed: isocloth run --resume "
              f"{run_folder})")
    typer.echo(json.dumps(_shown(data), indent=2))


@app.command()
def check(run_folder: Path = typer.Argument(..., help="a run folder written by 'isocloth run'"),
          every: int = typer.Option(1, "--every", min=1, help="check every k-th saved frame"),
          show: int = typer.Option(5, "--show", min=0, help="face pairs listed per frame"),
          json_out: Optional[Path] = typer.Option(None, "--json", help="also write the report as JSON")) -> None:
    """Report intersecting face pairs (exact triangle-triangle tests) of every saved frame; exit code 1 if any."""
    from isocloth.contact.intersection import check_trajectory

    traj = _load_run(run_folder)
    _compiling_notice()
    bar = _Progress("checking frames")
    try:
        report = check_trajectory(traj, every=every, progress=bar)
    except (OSError, ValueError) as exc:
        _fail(str(exc))
    finally:
        bar.close()
    nt = report.face_count
    for f, t, pairs in zip(report.frames, report.times, report.pairs):
        if len(pairs):
            listed = ", ".join(f"({a}, {b})" for a, b in pairs[:show].tolist())
            more = f", ... (+{len(pairs) - show})" if len(pairs) > show else ""
            typer.echo(f"frame {f} (t = {t:.4f} s): {len(pairs)} intersecting face pairs: {listed}{more}")
    if json_out is not None:
        from isocloth.io.atomic import atomic_write_text
        from isocloth.io.jsontext import json_text

        atomic_write_text(json_out, json_text(report.to_dict()))
    bad = int((report.counts > 0).sum())
    typer.echo(f"{len(report.frames)} frames checked ({nt} faces): "
               + ("no intersections" if bad == 0 else f"{bad} frames with intersections, "
                  f"{int(report.counts.sum())} face pairs in total"))
    if bad:
        raise typer.Exit(1)


# ------------------------------------------------------------------ validation: synth, fit, compare
@app.command()
def dgli(run_folder: Optional[Path] = typer.Argument(None, help="a run folder written by 'isocloth run' (a rectangular sheet)"),
         out: Optional[str] = typer.Option(None, "--out", "-o", help="output folder (default: the run folder)"),
         database: Optional[Path] = typer.Option(None, "--database", help="build (or complete) the folding database "
                                                 "of thesis §7.4.2 and its three sequences in this folder and print "
                                                 "the comparison of representations of Table 7.1"),
         samples: int = typer.Option(10, "--samples", min=1, help="samples per class of the database"),
         workers: int = typer.Option(1, "--workers", min=1, help="processes that simulate database samples"),
         nodes: int = typer.Option(20, "--nodes", min=6, help="nodes per side of the simulated sheet (thesis: 20)")) -> None:
    """dGLI cloth coordinates of every saved frame of a run (Coltraro et al., thesis §7.3) and the frames x
    frames Spearman distance matrix (§7.4.1): dgli.csv, dgli.npz and dgli_distances.png. With --database:
    the simulated folding database and sequences (§7.4.1-7.4.2) and the Davies-Bouldin index of five
    shape representations on them (§7.4.3, Table 7.1), with their distance matrices as images."""
    if (run_folder is None) == (database is None):
        _fail("give a run folder, or --database DIR (not both)")
    out = _out_option(out, "an output folder", "runs/mine-dgli")
    if database is not None:
        return _dgli_database(database, samples, workers, nodes)
    from isocloth.perception.sequence import write_run_coordinates

    try:
        paths = write_run_coordinates(run_folder, out)
    except (FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"cannot write the results: {exc}; choose another folder with --out")
    import numpy as np

    with np.load(paths["npz"]) as d:
        frames, D = d["times"].size, d["distances"]
    far = float(D.max()) if D.size else 0.0
    typer.echo(f"{frames} frames, 28 coordinates each; largest Spearman distance between two frames {far:.2f}")
    typer.echo(f"  results: {paths['csv']}, {paths['npz']}, {paths['png']}")


def _dgli_database(folder: Path, samples: int, workers: int, nodes: int) -> None:
    from isocloth.perception.comparison import THESIS_TABLE, compare_folder

    try:
        table, written = compare_folder(folder, samples=samples, workers=workers, nodes=nodes, progress=True)
    except ValueError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"cannot write the database: {exc}; choose another folder")
    sets = list(next(iter(table.values())))
    typer.echo("Davies-Bouldin index (smaller is better; thesis Table 7.1 in brackets)")
    typer.echo(f"{'':<10}" + "".join(f"{s:>26}" for s in sets))
    for rep, row in table.items():
        cells = []
        for s in sets:
            ref = THESIS_TABLE.get(rep, {}).get(s)
            cells.append(f"{row[s]:.2f}" + (f" ({ref:.2f})" if ref is not None else ""))
        typer.echo(f"{rep:<10}" + "".join(f"{c:>26}" for c in cells))
    typer.echo(f"  results: {written['table']}, {written['classes']}; distance matrices in {written['matrices']}")


def _parse_pair(text: str, what: str, sep: str = "x") -> tuple:
    try:
        a, b = text.lower().split(sep)
        return a, b
    except ValueError:
        _fail(f"{what} must look like A{sep}B, got {text!r}")


def _load_recording(path: Path, units, up_axis, origin, window):
    """Read a recording (and trim it to --window t0:t1)."""
    from isocloth.validation.recordings import read_recording

    org = None
    if origin:
        try:
            org = [float(v) for v in origin.split(",")]
            assert len(org) == 3
        except (ValueError, AssertionError):
            _fail(f"--origin must be three numbers x,y,z in metres, got {origin!r}")
    rec = read_recording(path, units=units, up_axis=up_axis, origin=org)
    if window:
        a, b = _parse_pair(window, "--window", ":")
        rec = rec.window(float(a) if a else None, float(b) if b else None)
    return rec


def _replay_options(marker_grid, order, grasp, grasp_mode, grasp_filter, error_window, stick=None):
    from isocloth.validation.replay import ReplayOptions

    kw = {"grasp_mode": grasp_mode, "grasp_filter": grasp_filter if grasp_filter and grasp_filter > 0 else None}
    if marker_grid:
        a, b = _parse_pair(marker_grid, "--marker-grid")
        kw["grid"] = (int(a), int(b))
    if order:
        kw["order"] = tuple(n.strip() for n in order.split(",") if n.strip())
    if grasp:
        kw["grasp"] = tuple(n.strip() for n in grasp.split(",") if n.strip())
    if error_window:
        a, b = _parse_pair(error_window, "--error-window", ":")
        kw["window"] = (float(a) if a else None, float(b) if b else None)
    if stick:
        ends = tuple(n.strip() for n in stick.split(",") if n.strip())
        if len(ends) != 2:
            _fail(f"--stick needs the two stick end markers as A,B, got {stick!r}")
        kw["stick"] = ends
    return ReplayOptions(**kw)


def _parse_fixed(items: list[str]) -> dict:
    out = {}
    for item in items:
        if "=" not in item:
            _fail(f"--fix needs name=value, got {item!r}")
        k, v = item.split("=", 1)
        try:
            out[k.strip()] = float(v)
        except ValueError:
            _fail(f"--fix {k}: {v!r} is not a number")
    return out


def _validation_errors():
    from isocloth.mesh.mesh import MeshError
    from isocloth.scenes.loader import SceneError
    from isocloth.validation.recordings import RecordingError

    return (RecordingError, SceneError, MeshError, FileNotFoundError, ImportError, KeyError, ValueError)


@app.command()
def synth(scene: str = typer.Argument(..., help="built-in scene name or TOML file (rectangle cloth)"),
          out: Path = typer.Option(..., "--out", "-o", help="recording file: .csv (Motive), .c3d or .npz"),
          set_: list[str] = typer.Option([], "--set", help="scene override, e.g. --set cloth.delta=0.09"),
          duration: Optional[float] = typer.Option(None, "--duration", help="simulated time [s]"),
          noise: float = typer.Option(0.5e-3, "--noise", help="marker noise σ per coordinate [m]"),
          dropout: float = typer.Option(0.05, "--dropout", help="fraction of missing samples"),
          gap: float = typer.Option(5.0, "--gap", help="mean dropout length [frames]"),
          seed: int = typer.Option(0, "--seed"),
          refine: int = typer.Option(2, "--refine", help="mesh intervals per marker interval"),
          every: int = typer.Option(1, "--every", min=1, help="record every k-th step"),
          shuffle: bool = typer.Option(False, "--shuffle/--no-shuffle", help="write markers in random order"),
          units: str = typer.Option("mm", "--units", help="length unit written: m, cm, mm"),
          up_axis: str = typer.Option("z", "--up-axis", help="vertical axis written: z or y (Motive default)")) -> None:
    """Simulate a scene with known parameters and write a synthetic motion-capture recording."""
    from isocloth.step.stepper import SimulationDiverged
    from isocloth.validation.recordings import write_recording
    from isocloth.validation.synth import synthesize

    try:
        rec = synthesize(scene, set_, duration=duration, refine=refine, noise=noise, dropout=dropout, mean_gap=gap,
                         seed=seed, every=every, shuffle=shuffle)
        opts = {"units": units, "up_axis": up_axis}
        if out.suffix.lower() == ".csv":
            opts["notes"] = "isocloth-synth " + json.dumps(rec.metadata["truth"], separators=(",", ":"))
        elif out.suffix.lower() == ".npz":
            opts = {}
        out.parent.mkdir(parents=True, exist_ok=True)
        write_recording(out, rec, **opts)
    except SimulationDiverged as exc:
        _fail(f"simulation diverged: {exc}", 3)
    except _validation_errors() as exc:
        _fail(str(exc))
    tr = rec.metadata["truth"]
    typer.echo(f"wrote {out}: {rec.frame_count} frames at {rec.rate:g} Hz, {rec.marker_count} markers "
               f"({tr['grid'][0]}x{tr['grid'][1]}), {100 * rec.missing_fraction():.1f} % missing, noise {noise:g} m")
    typer.echo(f"  true parameters: delta = {tr['delta']:.6g}, alpha = {tr['alpha']:.6g}, rho = {tr['rho']:.6g}"
               + (f", mu = {tr['mu']}" if tr["mu"] else ""))


@app.command()
def fit(recording: Path = typer.Argument(..., help="recording: Motive .csv, .c3d, .npz or plain .csv"),
        scene: str = typer.Option(..., "--scene", help="scene (TOML or built-in) giving fabric, obstacles, numerics"),
        set_: list[str] = typer.Option([], "--set", help="scene override, e.g. --set cloth.kappa=1e-3"),
        out: Optional[Path] = typer.Option(None, "--out", "-o", help="output folder (default runs/fit-<name>)"),
        params: str = typer.Option("auto", "--fit", help="parameters to fit: auto (delta,alpha[,mu]) or a list"),
        fix: list[str] = typer.Option([], "--fix", help="hold a parameter: --fix mu=0.5"),
        model: str = typer.Option("inextensible", "--model",
                                  help="inextensible, quasi-inextensible, mass-spring or baraff-witkin"),
        grid: int = typer.Option(6, "--grid", min=1, help="grid points per parameter"),
        maxfev: int = typer.Option(40, "--maxfev", min=0, help="Nelder-Mead evaluations (0 = grid only)"),
        sensitivity: int = typer.Option(5, "--sensitivity", min=0, help="points per axis of the sensitivity scan"),
        a_priori: str = typer.Option("I", "--a-priori", help="thesis eq. 4.6 coefficients: I, II or none"),
        workers: Optional[int] = typer.Option(None, "--workers", "-j", help="local processes (default: CPU count)"),
        address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (needs ray)"),
        units: Optional[str] = typer.Option(None, "--units", help="length unit if the file does not say"),
        up_axis: str = typer.Option("z", "--up-axis", help="the file's vertical axis: z, y or x"),
        origin: Optional[str] = typer.Option(None, "--origin", help="x,y,z [m] subtracted (table top at z = 0)"),
        window: Optional[str] = typer.Option(None, "--window", help="use only t0:t1 [s] of the recording"),
        error_window: Optional[str] = typer.Option(None, "--error-window", help="t0:t1 [s] of the error mean"),
        marker_grid: Optional[str] = typer.Option(None, "--marker-grid", help="markers NXxNY, e.g. 4x5"),
        order: Optional[str] = typer.Option(None, "--order", help="cloth marker names in grid order"),
        grasp: Optional[str] = typer.Option(None, "--grasp", help="grasped marker names (default top corners)"),
        grasp_mode: str = typer.Option("auto", "--grasp-mode", help="auto, rigid or independent"),
        grasp_filter: float = typer.Option(10.0, "--grasp-filter", help="grasp low-pass cut-off [Hz], 0 = off"),
        stick: Optional[str] = typer.Option(None, "--stick", help="stick end markers A,B: replayed as a moving "
                                            "stick (Coltraro et al. 2024, §7.4; replaces the scene's scripted sticks)"),
        video: bool = typer.Option(False, "--video/--no-video", help="write replay.mp4 at the optimum"),
        progress: bool = typer.Option(True, "--progress/--no-progress")) -> None:
    """Fit (delta, alpha[, mu]) to a recording: grid sweep, Nelder-Mead, sensitivity, report."""
    from isocloth.validation.fitting import FitProblem, fit as run_fit, make_evaluator
    from isocloth.validation.report import write_fit_report

    try:
        rec = _load_recording(recording, units, up_axis, origin, window)
        opts = _replay_options(marker_grid, order, grasp, grasp_mode, grasp_filter, error_window, stick)
        fixed = _parse_fixed(fix)
        problem = FitProblem(rec, scene, tuple(set_), opts, model, fixed)
        replay = problem.build()
        names = None if params == "auto" else [p.strip() for p in params.split(",") if p.strip()]
        folder = out or Path("runs") / f"fit-{recording.stem}"
        folder.mkdir(parents=True, exist_ok=True)
        typer.echo(f"fitting {model} model to {recording.name}: {rec.frame_count} frames, {replay.grid.shape[0]}x"
                   f"{replay.grid.shape[1]} markers -> {replay.mesh_shape[0]}x{replay.mesh_shape[1]} mesh, grasped "
                   f"{[replay.grid.names[i] for i in replay.grasp_markers]} ({replay.grasp_mode})", err=True)
        ev = make_evaluator(problem, workers=workers, address=address)

        bar = _Progress("fit", enabled=progress)

        def report(stage, done, total):
            bar.stage(stage)(done, total)

        try:
            result = run_fit(problem, parameters=names, grid=grid, maxfev=maxfev, sensitivity=sensitivity,
                             a_priori=None if a_priori.lower() == "none" else a_priori, evaluator=ev,
                             cache_path=folder / "evaluations.csv", progress=report)
        finally:
            ev.close()
            bar.close()
        best = replay.run(result.parameters, kind=model, keep_positions=video)
        settings = {"scene": scene, "overrides": list(set_), "model": model, "grid": grid, "maxfev": maxfev,
                    "sensitivity": sensitivity, "workers": getattr(ev, "workers", 1), "address": address,
                    "options": {k: v for k, v in vars(opts).items()}}
        paths = write_fit_report(folder, result, best, replay, settings=settings, video=video)
    except _validation_errors() as exc:
        _fail(str(exc))
    p = ", ".join(f"{k} = {v:.5g}" for k, v in result.parameters.items())
    m = result.metrics
    typer.echo(f"fitted {p}")
    typer.echo(f"  mean error {100 * m['mean_error']:.3f} cm, mean std {100 * m['mean_std']:.3f} cm, max dispersion "
               f"{100 * m['max_dispersion']:.3f} cm ({len(result.evaluations)} evaluations in {result.wall_time:.1f} s "
               f"on {result.workers} worker(s))")
    if result.a_priori:
        a = result.a_priori
        typer.echo(f"  a-priori (thesis eq. 4.6, S = {a['S']:.2f}, V = {a['V']:.3f} m2/s2): delta = {a['delta']:.4g}, "
                   f"alpha = {a['alpha']:.4g}, mean error {100 * a['mean_error']:.3f} cm")
    truth = rec.metadata.get("truth")
    if truth:
        typer.echo(f"  true (synthetic): delta = {truth['delta']:.5g}, alpha = {truth['alpha']:.5g}"
                   + (f", mu = {truth['mu']}" if truth.get("mu") else ""))
    typer.echo(f"  results in {folder}: " + ", ".join(sorted(paths)))


@app.command()
def compare(recording: Path = typer.Argument(..., help="recording file"),
            scene: str = typer.Option(..., "--scene", help="scene giving fabric and numerics"),
            set_: list[str] = typer.Option([], "--set", help="scene override"),
            out: Optional[Path] = typer.Option(None, "--out", "-o", help="output folder (default runs/compare-<name>)"),
            models: str = typer.Option("inextensible,quasi-inextensible,baraff-witkin,mass-spring", "--models"),
            fix: list[str] = typer.Option([], "--fix", help="hold a parameter for every model: --fix delta=0.09"),
            grid: int = typer.Option(4, "--grid", min=1),
            maxfev: int = typer.Option(30, "--maxfev", min=0),
            workers: Optional[int] = typer.Option(None, "--workers", "-j"),
            address: Optional[str] = typer.Option(None, "--address"),
            units: Optional[str] = typer.Option(None, "--units"),
            up_axis: str = typer.Option("z", "--up-axis"),
            window: Optional[str] = typer.Option(None, "--window", help="use only t0:t1 [s] of the recording"),
            error_window: Optional[str] = typer.Option(None, "--error-window", help="t0:t1 [s] of the error mean"),
            marker_grid: Optional[str] = typer.Option(None, "--marker-grid"),
            grasp_mode: str = typer.Option("auto", "--grasp-mode"),
            grasp_filter: float = typer.Option(10.0, "--grasp-filter")) -> None:
    """Fit several cloth models to one recording and tabulate them (thesis Table 4.3)."""
    from isocloth.validation.comparison import compare_models
    from isocloth.validation.report import write_comparison_report

    try:
        rec = _load_recording(recording, units, up_axis, None, window)
        opts = _replay_options(marker_grid, None, None, grasp_mode, grasp_filter, error_window)
        kinds = [k.strip() for k in models.split(",") if k.strip()]
        bar = _Progress("compare")
        try:
            comp = compare_models(rec, scene, tuple(set_), opts, kinds, grid=grid, maxfev=maxfev, workers=workers,
                                  address=address, fixed=_parse_fixed(fix),
                                  progress=lambda model, stage, done, total: bar.stage(f"{model}: {stage}")(done, total))
        finally:
            bar.close()
        folder = out or Path("runs") / f"compare-{recording.stem}"
        from isocloth.validation.fitting import FitProblem

        replay = FitProblem(rec, scene, tuple(set_), opts).build()
        paths = write_comparison_report(folder, comp, replay, settings={"scene": scene, "overrides": list(set_),
                                                                        "grid": grid, "maxfev": maxfev})
    except _validation_errors() as exc:
        _fail(str(exc))
    typer.echo(comp.table())
    typer.echo(f"results in {folder}: " + ", ".join(sorted(paths)))


def _numbers(text: str, what: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        _fail(f"{what} must be a comma-separated list of numbers, got {text!r}")


@app.command()
def study(kind: str = typer.Argument(..., help="cusick (drape coefficient vs mesh) or locking (thesis §2.7.1)"),
          out: Optional[Path] = typer.Option(None, "--out", "-o", help="study folder (default runs/study-<kind>)"),
          meshes: str = typer.Option("5x50,7x70,9x90,12x120,16x160", "--meshes",
                                     help="cusick: node rings x nodes per ring, comma-separated (250-2560 nodes)"),
          kappa: str = typer.Option("5e-5", "--kappa", help="cusick: bending stiffnesses [N·m], comma-separated"),
          seeds: str = typer.Option("4", "--seeds", help="locking: noise seeds, comma-separated"),
          duration: Optional[float] = typer.Option(None, "--duration", help="simulated time per case [s]"),
          set_: list[str] = typer.Option([], "--set", help="scene override for every case, e.g. "
                                         "--set cloth.constraint_model=stretch-limited")) -> None:
    """Run a mesh-convergence study: one scene per mesh, a table, the settled shapes and a plot.

    cusick: the drape coefficient (Coltraro et al., thesis §2.7.2) on a sequence of rings, with the
    Richardson extrapolation of the three finest. locking: the free corner of the four meshes of
    thesis §2.7.1 (Table 2.2). A re-run of the same folder skips the cases already done."""
    from isocloth.mesh.mesh import MeshError
    from isocloth.scenes.loader import SceneError
    from isocloth.step.stepper import SimulationDiverged
    from isocloth.validation.study import (cusick_cases, locking_cases, pairwise_corner_distances, plot_study,
                                           richardson, run_study)

    if kind not in ("cusick", "locking"):
        _fail(f"study must be 'cusick' or 'locking', got {kind!r}")
    folder = out or Path("runs") / f"study-{kind}"
    try:
        if kind == "cusick":
            pairs = []
            for item in meshes.split(","):
                parts = item.strip().lower().split("x")
                if len(parts) != 2 or not all(p.isdigit() for p in parts):
                    _fail(f"--meshes takes rings x nodes per ring, e.g. 5x50,7x70; got {item!r}")
                pairs.append((int(parts[0]), int(parts[1])))
            cases = cusick_cases(pairs, _numbers(kappa, "--kappa"))
        else:
            cases = locking_cases([int(v) for v in _numbers(seeds, "--seeds")])
        rows = run_study(kind, cases, folder, overrides=set_, duration=duration,
                         report=lambda msg: typer.echo(msg, err=True))
        plot = plot_study(kind, rows, folder / "convergence.png")
    except (SceneError, MeshError, ValueError, FileNotFoundError) as exc:
        _fail(str(exc))
    except SimulationDiverged as exc:
        _fail(f"simulation diverged: {exc} (the cases before it are in {folder / 'table.csv'})", 3)
    for group in sorted({r["group"] for r in rows}):
        sub = sorted((r for r in rows if r["group"] == group), key=lambda r: r["nodes"])
        if kind == "cusick":
            typer.echo(f"kappa = {group:g} N·m: " + ", ".join(f"{int(r['nodes'])} nodes {r['value']:.1f} %" for r in sub))
            f_inf, p = richardson([r["nodes"] for r in sub], [r["value"] for r in sub])
            typer.echo(f"  Richardson extrapolation: {f_inf:.1f} % (order {p:.2f})" if f_inf == f_inf else
                       "  Richardson extrapolation: none (the differences do not shrink: not yet converging)")
        else:
            dists = pairwise_corner_distances(sub)[group]
            typer.echo(f"seed {int(group)}: " + ", ".join(f"{r['case']} corner z {r['corner_z']:.3f} m, "
                                                          f"com z {r['com_z']:.3f} m" for r in sub))
            typer.echo("  pairwise corner distances [cm]: " + ", ".join(f"{a}-{b} {100 * d:.2f}"
                                                                      for (a, b), d in dists.items()))
    typer.echo(f"results in {folder}: table.csv, shapes/, {plot.name}")


if __name__ == "__main__":  # pragma: no cover
    app()
