"""Write the results of a fit or a model comparison to a folder (every file atomically).

A fit folder holds:

- ``fit.json``: fitted parameters, metrics at the optimum (metres and cm), the a-priori forecast,
  the search box, Nelder–Mead status, the settings, the true parameters of a synthetic recording;
- ``evaluations.csv``: every evaluation (stage, parameters, ē, s̄, max d, time), also the resume cache;
- ``error_series.csv``: e_n, s_n, d_n per frame at the optimum;
- ``sensitivity.json`` and ``sensitivity_<names>.png``: the scans around the optimum;
- ``error.png``: error curves (contact intervals shaded); ``replay.mp4`` on request.

Non-finite numbers are written as JSON null.
"""

from __future__ import annotations

from pathlib import Path

from isocloth.io.atomic import atomic_write_text
from isocloth.io.jsontext import json_text

__all__ = ["write_fit_report", "write_comparison_report", "json_text"]


def _series_csv(es) -> str:
    from isocloth.validation.fitting import rows_to_csv

    return rows_to_csv(es.rows())


def write_fit_report(folder, result, run, replay, *, settings: dict | None = None, video: bool = False,
                     fps: float = 25.0) -> dict:
    """Write a fit's results (see the module docstring).

    Parameters
    ----------
    folder : output folder (created)
    result : FitResult
    run : ReplayResult at the optimum (with positions when ``video``)
    replay : the Replay (grid, mesh, marker nodes)
    settings : extra settings to record (command-line options, scene, ...)
    video : also write replay.mp4 (needs ``run.positions``)

    Returns
    -------
    {name: Path} of the files written.
    """
    from isocloth.validation.fitting import rows_to_csv
    from isocloth.validation.plots import contact_intervals, plot_error_curves, plot_sensitivity

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    metrics = dict(result.metrics)
    for k in ("mean_error", "mean_std", "max_dispersion"):
        if k in metrics and metrics[k] is not None:
            metrics[f"{k}_cm"] = 100 * metrics[k]
    data = result.to_json()
    data["metrics"] = metrics
    data["recording"] = {"source": replay.recording.source, "frames": replay.recording.frame_count,
                         "rate": replay.recording.rate, "markers": list(replay.grid.names),
                         "grid": list(replay.grid.shape), "missing_fraction": replay.recording.missing_fraction(),
                         "grasped": [replay.grid.names[i] for i in replay.grasp_markers],
                         "grasp_mode": replay.grasp_mode, "size": list(replay.size)}
    truth = replay.recording.metadata.get("truth")
    if truth:
        data["truth"] = truth
    data["settings"] = settings or {}
    from isocloth.runner import versions

    data["versions"] = versions()
    paths["fit.json"] = atomic_write_text(out / "fit.json", json_text(data))
    paths["evaluations.csv"] = atomic_write_text(out / "evaluations.csv", rows_to_csv(result.evaluations))
    paths["error_series.csv"] = atomic_write_text(out / "error_series.csv", _series_csv(run.errors))
    intervals = contact_intervals(run.errors.times, run.contact) if run.contact.size else []
    paths["error.png"] = plot_error_curves({run.kind: run.errors}, out / "error.png", contact=intervals,
                                           title=f"{replay.recording.source}: fitted {run.kind} model")
    if result.sensitivity:
        paths["sensitivity.json"] = atomic_write_text(out / "sensitivity.json", json_text({"scans": result.sensitivity}))
        for scan in result.sensitivity:
            name = "sensitivity_" + "_".join(scan["names"]) + ".png"
            paths[name] = plot_sensitivity(scan, out / name, title="ē around the optimum")
    if video and run.positions is not None:
        from isocloth.validation.plots import render_replay_video

        faces = replay.mesh.quads if replay.mesh.quads.size else replay.mesh.triangles
        paths["video"] = render_replay_video(replay.recording.markers, run.positions, faces, replay.marker_nodes,
                                             replay.grid.shape, replay.recording.times, out / "replay.mp4", fps=fps,
                                             errors=run.errors.e, stick=getattr(replay, "stick_tracks", None))
    return paths


def write_comparison_report(folder, comparison, replay, *, settings: dict | None = None) -> dict:
    """Write a model comparison: ``comparison.csv``, ``comparison.md`` (thesis Table 4.3 layout),
    ``comparison.json`` and ``comparison.png`` (error curves of all models)."""
    from isocloth.validation.fitting import rows_to_csv
    from isocloth.validation.plots import plot_error_curves

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    flat = []
    for r in comparison.rows:
        row = {k: v for k, v in r.items() if k != "parameters"}
        row.update({f"p:{k}": v for k, v in r["parameters"].items()})
        flat.append(row)
    paths = {"comparison.csv": atomic_write_text(out / "comparison.csv", rows_to_csv(flat)),
             "comparison.md": atomic_write_text(out / "comparison.md", comparison.table() + "\n"),
             "comparison.json": atomic_write_text(out / "comparison.json",
                                                  json_text({"rows": comparison.rows, "settings": settings or {}}))}
    curves = {k: comparison.runs[k].errors for k in [r["model"] for r in comparison.rows]}
    paths["comparison.png"] = plot_error_curves(curves, out / "comparison.png",
                                                title=f"{replay.recording.source}: model comparison")
    return paths
