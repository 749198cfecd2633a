"""Command-line interface: a thin typer layer over the library."""

from __future__ import annotations

import os

# One BLAS thread: the solver's dense factorizations are small, and multithreaded BLAS on a busy
# 2-core machine made steps up to 15x slower (benchmarks/RESULTS.md). Set before numpy loads.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import json  # noqa: E402
import sys
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=False,
                  help="isocloth: inextensible cloth simulation for robotic manipulation.")

DEFAULT_SCENE = "shorts-hang"


def _fail(msg: str, code: int = 2) -> None:
    typer.secho(f"error: {msg}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


@app.command()
def scenes() -> None:
    """List the built-in scenes."""
    from isocloth.scenes.loader import builtin_scene_names, load_scene_config

    for name in builtin_scene_names():
        cfg, _ = load_scene_config(name)
        mark = " (default)" if name == DEFAULT_SCENE else ""
        typer.echo(f"{name:<22}{cfg.description}{mark}")


@app.command()
def info(mesh: Path = typer.Argument(..., help="mesh file (OBJ incl. Garment Library extras, PLY, ...)"),
         merge_tolerance: Optional[float] = typer.Option(None, "--merge-tolerance", help="sew vertices closer than this [m]")) -> None:
    """Print vertices, faces, boundary loops, Euler characteristic, corners, rest area and defects."""
    from isocloth.mesh.io import read_mesh
    from isocloth.mesh.mesh import MeshError
    from isocloth.mesh.quality import validate_mesh

    try:
        m = read_mesh(mesh, merge_tolerance=merge_tolerance)
    except (MeshError, OSError, ValueError) as exc:
        _fail(str(exc))
    report = validate_mesh(m)
    typer.echo(report.to_text())
    if not report.ok:
        raise typer.Exit(1)


@app.command()
def run(scene: str = typer.Argument(DEFAULT_SCENE, help="built-in scene name or TOML file"),
        out: Optional[Path] = typer.Option(None, "--out", "-o", help="run folder (default runs/<scene>)"),
        set_: list[str] = typer.Option([], "--set", help="override a scene key: --set simulation.dt=0.005"),
        video: bool = typer.Option(True, "--video/--no-video", help="render a video at the end"),
        resume: Optional[Path] = typer.Option(None, "--resume", help="continue the run in this folder"),
        progress: bool = typer.Option(True, "--progress/--no-progress")) -> None:
    """Simulate a scene and write trajectory, diagnostics, checkpoint and video to a run folder."""
    from isocloth.mesh.mesh import MeshError
    from isocloth.runner import resume_run, run_scene
    from isocloth.scenes.loader import SceneError, load_scene
    from isocloth.step.stepper import SimulationDiverged

    try:
        if resume is not None:
            summary = resume_run(resume, progress=progress, render=None if video else False)
        else:
            sc = load_scene(scene, set_)
            folder = out or Path("runs") / sc.config.name
            typer.echo(f"running {sc.config.name}: {sc.model.node_count} nodes, {sc.model.constraint_count} "
                       f"constraints, dt = {sc.dt} s, {sc.duration} s -> {folder}", err=True)
            summary = run_scene(sc, folder, progress=progress and sys.stderr.isatty(),
                                render=None if video else False)
    except (SceneError, MeshError, FileNotFoundError) as exc:
        _fail(str(exc))
    except SimulationDiverged as exc:
        _fail(f"simulation diverged: {exc}", 3)
    tol = summary.extra.get("tolerance", float("nan"))
    typer.echo(f"{'interrupted' if summary.interrupted else 'done'}: {summary.simulated_time:.3f} s simulated "
               f"in {summary.wall_time:.2f} s -> real-time factor {summary.real_time_factor:.1f}x")
    typer.echo(f"  max constraint residual {summary.max_residual:.2e} (tolerance {tol:.0e}), "
               f"mean iterations {summary.mean_iterations:.2f}, unconverged steps {summary.unconverged_steps}")
    typer.echo(f"  area error: total max {100 * summary.max_area_error_total:.3f} %, "
               f"per-element mean max {100 * summary.max_area_error_mean:.2f} %")
    typer.echo(f"  results in {summary.folder}" + (f", video {summary.video}" if summary.video else ""))
    if summary.interrupted:
        typer.echo(f"  resume with: isocloth run --resume {summary.folder}")
        raise typer.Exit(130)


@app.command()
def render(run_folder: Path = typer.Argument(..., help="a run folder written by 'isocloth run'"),
           export: Optional[str] = typer.Option(None, "--export", help="write one mesh per frame: obj or ply"),
           out: Optional[Path] = typer.Option(None, "--out", "-o", help="video path or export folder"),
           every: int = typer.Option(1, "--every", min=1, help="export every k-th frame")) -> None:
    """Re-render a saved run's video, or export its frames as meshes."""
    from isocloth.io.trajectory import load_trajectory

    if not (run_folder / "trajectory.npz").exists():
        _fail(f"{run_folder} has no trajectory.npz: is it a run folder?")
    if export is not None:
        from isocloth.io.export import export_frames

        try:
            paths = export_frames(load_trajectory(run_folder), out or run_folder / f"frames_{export}", fmt=export,
                                  every=every)
        except ValueError as exc:
            _fail(str(exc))
        typer.echo(f"wrote {len(paths)} {export.upper()} files to {paths[0].parent if paths else out}")
        return
    from isocloth.runner import render_run

    path = render_run(run_folder, out)
    typer.echo(f"wrote {path}")


@app.command()
def summary(run_folder: Path) -> None:
    """Print a run's summary.json."""
    p = run_folder / "summary.json"
    if not p.exists():
        _fail(f"{p} not found")
    typer.echo(json.dumps(json.loads(p.read_text()), indent=2))


if __name__ == "__main__":  # pragma: no cover
    app()
