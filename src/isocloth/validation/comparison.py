"""Model comparison on one recording (thesis §4.1.4, Table 4.3; paper 002 §9.4, Table 4).

Each model's parameters are fitted with the same procedure (:func:`isocloth.validation.fitting.fit`),
then each is replayed once more at its optimum, in this process, to time it. The table lists the
mean absolute error ē, the largest dispersion max d (both over the metric window), the total
simulation time and the mean number of fast-projection iterations per step (none for the elastic
models, which have no constraints).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isocloth.validation.fitting import FitProblem, fit, make_evaluator
from isocloth.validation.replay import MODEL_KINDS, ReplayOptions, ReplayResult
from isocloth.validation.recordings import Recording

__all__ = ["ModelComparison", "compare_models"]


@dataclass
class ModelComparison:
    """Result of :func:`compare_models`.

    Attributes
    ----------
    rows : list of dict (model, mean_error [m], max_dispersion [m], total_time [s], iterations,
        evaluations, and the fitted parameters)
    fits : {model: FitResult}
    runs : {model: ReplayResult} at the optimum (with all node positions)
    """

    rows: list
    fits: dict
    runs: dict

    def table(self) -> str:
        """Markdown table in the layout of thesis Table 4.3 (errors in cm)."""
        lines = ["| Model | ē | max(d) | Total time | Iterations | Parameters |", "|---|---|---|---|---|---|"]
        for r in self.rows:
            it = "–" if not np.isfinite(r["iterations"]) else f"{r['iterations']:.2f}"
            params = ", ".join(f"{k} = {v:.4g}" for k, v in r["parameters"].items())
            lines.append(f"| {r['model']} | {100 * r['mean_error']:.2f} cm | {100 * r['max_dispersion']:.2f} cm | "
                         f"{r['total_time']:.2f} s | {it} | {params} |")
        return "\n".join(lines)


def compare_models(recording: Recording, scene: str | None = None, overrides=(), options: ReplayOptions | None = None,
                   kinds=MODEL_KINDS, *, grid: int | dict = 4, maxfev: int = 30, workers: int | None = 1,
                   address: str | None = None, material=None, fixed: dict | None = None,
                   parameters: dict | None = None, progress=None) -> ModelComparison:
    """Fit every model kind to ``recording`` and tabulate them (thesis Table 4.3).

    Parameters
    ----------
    recording, scene, overrides, options, material : as for :class:`~isocloth.validation.fitting.FitProblem`
    kinds : model kinds to compare (default all four)
    grid, maxfev : fit settings (per parameter / Nelder–Mead budget)
    workers, address : evaluation backend (:func:`~isocloth.validation.fitting.make_evaluator`)
    fixed : parameter values held fixed for every model (e.g. δ and α, to compare stiffnesses only)
    parameters : {kind: list of parameter names or ParameterSpec} to fit (default: the kind's box
        minus the fixed ones)
    progress : callable(model, stage, done, total) or None

    Returns
    -------
    ModelComparison, rows sorted by ē.
    """
    rows, fits, runs = [], {}, {}
    for kind in kinds:
        fixed = dict(fixed or {})
        problem = FitProblem(recording, scene, tuple(overrides), options or ReplayOptions(), kind, fixed, material)
        names = (parameters or {}).get(kind)
        if names is None:
            from isocloth.validation.fitting import default_parameters

            replay = problem.build()
            names = [s for s in default_parameters(kind, replay.material.rho, contact=bool(replay.obstacles))
                     if s.name not in fixed]
        ev = make_evaluator(problem, workers=workers, address=address)
        try:
            cb = (lambda stage, done, total, k=kind: progress(k, stage, done, total)) if progress else None
            res = fit(problem, parameters=names, grid=grid, maxfev=maxfev, sensitivity=0, a_priori=None, evaluator=ev,
                      progress=cb)
        finally:
            ev.close()
        replay = problem.build()
        run: ReplayResult = replay.run(res.parameters, kind=kind, keep_positions=True)
        fits[kind], runs[kind] = res, run
        rows.append({"model": kind, "mean_error": run.loss, "max_dispersion": run.errors.max_dispersion,
                     "mean_std": run.errors.mean_std, "total_time": run.wall_time, "iterations": run.mean_iterations,
                     "evaluations": len(res.evaluations), "parameters": dict(res.parameters)})
    rows.sort(key=lambda r: r["mean_error"])
    return ModelComparison(rows, fits, runs)
