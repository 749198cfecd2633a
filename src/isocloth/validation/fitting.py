"""Fit model parameters to a recording: grid sweep, local refinement, sensitivity analysis.

The loss is the mean absolute error ē of a replay (seed 000 eq. 16, thesis §4.2.2; see
:mod:`isocloth.validation.metrics`). The procedure follows the thesis:

1. the a-priori forecast of thesis eq. 4.6 (Table 4.6 coefficients) is evaluated as a reference
   and as a candidate start;
2. a grid sweep over the box (δ, α) ∈ [0, ρ] × [0, 4ρ] (and μ ∈ [0, 2] for contact scenes) —
   the thesis found the sweep more robust than Nelder–Mead on its noisy error surface (Fig. 4.15);
   grid values are cell-centred, so δ = 0 (no gravity) and α = 0 are never evaluated;
3. Nelder–Mead (scipy.optimize.minimize) from the best grid point, in coordinates scaled to the
   box, with an initial simplex of one grid cell; for a single parameter (μ with δ, α fixed)
   bounded Brent (scipy.optimize.minimize_scalar) between the grid neighbours of the best point;
4. a sensitivity analysis around the optimum (thesis §4.1.3: each parameter from 0 to 2× its
   optimum; Fig. 4.20 for μ).

Evaluations run in parallel: over local processes (concurrent.futures) or over a Ray cluster
(``address``; Ray is optional and imported only then). Each evaluation is cached by its
parameter values, and the cache can be persisted (a CSV written atomically after every batch)
so an interrupted fit resumes where it stopped.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from isocloth.validation.evaluators import (EvaluationCache, ProcessEvaluator, RayEvaluator, SerialEvaluator,
                                            make_evaluator, parameter_key, rows_to_csv)
from isocloth.validation.recordings import Recording
from isocloth.validation.replay import Replay, ReplayOptions

__all__ = ["ParameterSpec", "FitProblem", "FitResult", "default_parameters", "fit", "make_evaluator",
           "SerialEvaluator", "ProcessEvaluator", "RayEvaluator", "EvaluationCache", "parameter_key", "rows_to_csv"]


# ------------------------------------------------------------------ parameters
@dataclass(frozen=True)
class ParameterSpec:
    """A fitted parameter and its search interval.

    Attributes
    ----------
    name : Material field (delta, alpha, shear_stiffness, ...), "mu", or a baseline parameter
    low, high : bounds (SI units of the parameter)
    log : search in log10 space (stiffnesses); then low > 0
    """

    name: str
    low: float
    high: float
    log: bool = False

    def __post_init__(self):
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.high > self.low):
            raise ValueError(f"parameter {self.name}: need finite low < high, got [{self.low}, {self.high}]")
        if self.log and self.low <= 0:
            raise ValueError(f"parameter {self.name}: a log-scale search needs low > 0")

    def to_unit(self, x: float) -> float:
        if self.log:
            return (math.log10(x) - math.log10(self.low)) / (math.log10(self.high) - math.log10(self.low))
        return (x - self.low) / (self.high - self.low)

    def from_unit(self, u: float) -> float:
        u = min(max(float(u), 0.0), 1.0)
        if self.log:
            return 10 ** (math.log10(self.low) + u * (math.log10(self.high) - math.log10(self.low)))
        return self.low + u * (self.high - self.low)

    def grid(self, n: int) -> np.ndarray:
        """n cell-centred values (in log space when ``log``)."""
        return np.array([self.from_unit((k + 0.5) / n) for k in range(int(n))])


def default_parameters(kind: str, rho: float, *, contact: bool = False) -> list[ParameterSpec]:
    """Search box of a model kind (thesis §4.2.2: δ ∈ [0, ρ], α ∈ [0, 4ρ]; μ ∈ [0, 2] covers Table 4.7).

    Baselines add their stiffness (log scale): ``shear_stiffness`` (quasi-inextensible),
    ``stiffness`` (mass-spring, Baraff–Witkin); see :mod:`isocloth.baselines`.
    """
    specs = [ParameterSpec("delta", 0.0, rho), ParameterSpec("alpha", 0.0, 4.0 * rho)]
    if contact and kind in ("inextensible", "quasi-inextensible"):
        specs.append(ParameterSpec("mu", 0.0, 2.0))
    if kind == "quasi-inextensible":
        specs.append(ParameterSpec("shear_stiffness", 1e2, 1e8, log=True))
    elif kind in ("mass-spring", "baraff-witkin"):
        specs.append(ParameterSpec("stiffness", 1.0, 1e4, log=True))
    return specs


# ------------------------------------------------------------------ the problem
@dataclass(frozen=True)
class FitProblem:
    """What to fit, in a picklable form (sent to worker processes or Ray actors).

    Attributes
    ----------
    recording : Recording
    scene : built-in scene name or TOML path supplying material, obstacles and numerics (or None)
    overrides : scene overrides (``key.path=value``)
    options : ReplayOptions
    kind : model kind ("inextensible", "quasi-inextensible", "mass-spring", "baraff-witkin")
    fixed : parameter values held fixed in every run
    material : Material used when there is no scene
    """

    recording: Recording
    scene: str | None = None
    overrides: tuple = ()
    options: ReplayOptions = field(default_factory=ReplayOptions)
    kind: str = "inextensible"
    fixed: dict = field(default_factory=dict)
    material: object = None

    def build(self) -> Replay:
        """The Replay of this problem."""
        from isocloth.validation.replay import replay_from_scene

        if self.scene is not None:
            return replay_from_scene(self.recording, self.scene, list(self.overrides), self.options)
        return Replay(self.recording, self.material, self.options)

    def fingerprint(self) -> str:
        """Digest of the data and settings (a resumed fit must match it)."""
        h = hashlib.sha1()
        h.update(np.ascontiguousarray(self.recording.markers).tobytes())
        h.update(np.ascontiguousarray(self.recording.times).tobytes())
        h.update(json.dumps([list(self.recording.names), self.scene, list(self.overrides),
                             dataclasses.asdict(self.options), self.kind, self.fixed,
                             repr(self.material)], sort_keys=True, default=str).encode())
        return h.hexdigest()[:16]


# ------------------------------------------------------------------ the fit
@dataclass
class FitResult:
    """Outcome of :func:`fit`.

    Attributes
    ----------
    parameters : dict, best parameter values (fitted and fixed)
    metrics : dict, evaluation at the optimum (mean_error ē [m], mean_std s̄ [m], max_dispersion [m], ...)
    specs : list of ParameterSpec (the search box)
    a_priori : dict or None, forecast of thesis eq. 4.6 ({"delta", "alpha", "S", "V"} and its ē)
    evaluations : list of dict rows (stage, p:<name> values, metrics), in order
    nelder_mead : dict (method "nelder-mead" or "brent", nfev, success, message) of the refinement, or None
    sensitivity : list of dict {"names", "axes" (list of arrays), "errors" (array [m])}
    wall_time : float [s]
    workers : int
    """

    parameters: dict
    metrics: dict
    specs: list
    a_priori: dict | None
    evaluations: list
    nelder_mead: dict | None
    sensitivity: list
    wall_time: float
    workers: int = 1

    def to_json(self) -> dict:
        return {
            "parameters": self.parameters,
            "metrics": {k: v for k, v in self.metrics.items() if not k.startswith("p:") and k not in ("stage", "problem")},
            "search_box": [dataclasses.asdict(s) for s in self.specs],
            "a_priori": self.a_priori,
            "nelder_mead": self.nelder_mead,
            "evaluations": len(self.evaluations),
            "wall_time": self.wall_time,
            "workers": self.workers,
        }


def _run_batch(evaluator, cache: EvaluationCache, params_list: list[dict], stage: str) -> list[dict]:
    todo, seen = [], set()
    for p in params_list:
        key = parameter_key(p)
        if cache.get(p) is None and key not in seen:
            todo.append(p)
            seen.add(key)
    if todo:
        for p, r in zip(todo, evaluator.map(todo)):
            cache.add(p, r, stage)
        cache.save()
    return [cache.get(p) for p in params_list]


def _refine_nelder_mead(objective, u0: np.ndarray, counts: list, maxfev: int, xatol: float):
    """Bounded Nelder–Mead in unit coordinates from u0, initial simplex of one grid cell."""
    from scipy.optimize import minimize

    simplex = [u0]
    for i, n in enumerate(counts):
        st = 1.0 / max(n, 2)
        u = u0.copy()
        u[i] = u0[i] + st if u0[i] + st <= 1 else u0[i] - st
        simplex.append(u)
    opt = minimize(objective, u0, method="Nelder-Mead", bounds=[(0.0, 1.0)] * len(u0),
                   options={"initial_simplex": np.array(simplex), "maxfev": int(maxfev), "xatol": xatol,
                            "fatol": 1e-6})
    return np.asarray(opt.x), {"method": "nelder-mead", "nfev": int(opt.nfev), "success": bool(opt.success),
                               "message": str(opt.message)}


def _refine_scalar(objective, u0: float, grid_u: np.ndarray, maxfev: int, xatol: float):
    """Bounded Brent (scipy.optimize.minimize_scalar) between the grid neighbours of the best grid
    point u0 (unit coordinates). When u0 is the first or last grid value the box edge is evaluated
    first (μ = 0, frictionless, is the physical optimum of a polished table: thesis Table 4.7); if
    it is better, the bracket shrinks to [edge, u0], and if the error also rises from the edge to
    xatol inside, the edge is the optimum. Returns (best u (1,), info)."""
    from scipy.optimize import minimize_scalar

    lower = grid_u[grid_u < u0 - 1e-12]
    upper = grid_u[grid_u > u0 + 1e-12]
    lo = float(lower.max()) if lower.size else 0.0
    hi = float(upper.min()) if upper.size else 1.0
    seen: dict = {}

    def f(u):
        u = float(u)
        if u not in seen:
            seen[u] = float(objective(u))
        return seen[u]

    f0 = f(u0)
    edges = []
    if not lower.size and u0 > 0.0:
        edges.append((0.0, 1.0))
    if not upper.size and u0 < 1.0:
        edges.append((1.0, -1.0))
    at_edge = False
    for edge, inward in edges:
        if f(edge) < f0:
            lo, hi = sorted((edge, u0))
            # the error rises within xatol of the edge: for a unimodal error (Brent's assumption
            # too) the minimum lies within xatol of the edge, where golden sections would spend
            # ~log(bracket / xatol) / log(1.618) evaluations to reach it
            near = edge + inward * xatol
            if lo < near < hi and f(near) >= f(edge):
                at_edge = True
    budget = int(maxfev) - len(seen) + 1  # u0 came from the grid (cached)
    info = {"method": "brent", "nfev": len(seen) - 1, "success": True,
            "message": "minimum at the box edge" if at_edge else "", "bracket": [lo, hi]}
    if not at_edge and hi - lo > xatol and budget > 0:
        opt = minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": xatol, "maxiter": budget})
        info.update(nfev=len(seen) - 1, success=bool(opt.success), message=str(opt.message))
    u_best = min(seen, key=seen.get)
    return np.array([u_best]), info


def fit(problem: FitProblem, *, parameters: list | None = None, grid: int | dict = 6, nelder_mead: bool = True,
        maxfev: int = 40, xatol: float = 2e-3, sensitivity: int = 5, a_priori: str | None = "I", evaluator=None,
        cache_path: str | Path | None = None, progress=None) -> FitResult:
    """Fit the parameters of ``problem`` to its recording.

    Parameters
    ----------
    problem : FitProblem
    parameters : list of ParameterSpec or names (default :func:`default_parameters` of the kind,
        minus the fixed ones; names take their default box); an empty list evaluates the fixed
        parameters once
    grid : points per parameter of the sweep (int, or dict name → int or explicit values)
    nelder_mead : refine the best grid point: Nelder–Mead (several parameters) or, for a single
        parameter, bounded Brent (scipy.optimize.minimize_scalar) between the grid neighbours of
        the best grid point
    maxfev : evaluation budget of the refinement
    xatol : tolerance of the refinement in box-scaled coordinates (1 = the whole interval; 2e-3 is
        0.004 in μ ∈ [0, 2])
    sensitivity : points per axis of the sensitivity scans (0 = none): (δ, α) heat map and μ
        scan, from 2/n to 2 times the optimum (thesis §4.1.3) plus the optimum itself (over the
        whole box when the optimum is 0), others held at the optimum
    a_priori : "I"/"II" to evaluate the thesis eq. 4.6 forecast (needs δ and α fitted), None to skip
    evaluator : from :func:`make_evaluator` (default: in this process)
    cache_path : CSV file persisting the evaluations (resume)
    progress : callable(stage, done, total) or None

    Returns
    -------
    FitResult

    Raises
    ------
    ValueError
        For unknown parameter names or a parameter both fitted and fixed.
    """
    t_start = time.perf_counter()
    own = evaluator is None
    evaluator = evaluator or SerialEvaluator(problem)
    replay = evaluator.replay if isinstance(evaluator, SerialEvaluator) else problem.build()
    rho = float({**dataclasses.asdict(replay.material), **problem.fixed}.get("rho", replay.material.rho))
    defaults = {s.name: s for s in default_parameters(problem.kind, rho, contact=bool(replay.obstacles))}
    specs = []
    for p in (list(parameters) if parameters is not None else [s for s in defaults.values() if s.name not in problem.fixed]):
        if isinstance(p, ParameterSpec):
            specs.append(p)
        elif p in defaults:
            specs.append(defaults[p])
        else:
            raise ValueError(f"no default search box for parameter {p!r}; give a ParameterSpec "
                             f"(defaults for {problem.kind}: {', '.join(defaults)})")
    names = [s.name for s in specs]
    clash = sorted(set(names) & set(problem.fixed))
    if clash:
        raise ValueError(f"parameter {clash[0]!r} is both fitted and fixed; drop it from one of them")
    cache = EvaluationCache(cache_path, problem.fingerprint())

    def report(stage, done, total):
        if progress is not None:
            progress(stage, done, total)

    try:
        # 1. a-priori forecast (thesis eq. 4.6)
        apriori = None
        if a_priori and "delta" in names and "alpha" in names:
            from isocloth.validation.apriori import a_priori_parameters, normalized_area, velocity_feature

            S = normalized_area(*replay.size)
            V = velocity_feature(replay.recording.markers, replay.recording.times)
            guess = a_priori_parameters(rho, S, V, a_priori)
            boxed = {s.name: (s.from_unit(s.to_unit(guess[s.name])) if s.name in guess else s.from_unit(0.5))
                     for s in specs}
            res = _run_batch(evaluator, cache, [boxed], "a-priori")[0]
            apriori = {"repetition": a_priori, "S": S, "V": V, "delta": guess["delta"], "alpha": guess["alpha"],
                       "evaluated": boxed, "mean_error": res["mean_error"]}
        if not specs:  # everything fixed: one evaluation
            row = _run_batch(evaluator, cache, [{}], "fixed")[0]
            metrics = {k: v for k, v in row.items() if k not in ("stage", "problem")}
            return FitResult(dict(problem.fixed), metrics, [], None, list(cache.rows), None, [],
                             time.perf_counter() - t_start, getattr(evaluator, "workers", 1))
        # 2. grid sweep
        axes = []
        for s in specs:
            g = grid.get(s.name, 6) if isinstance(grid, dict) else grid
            axes.append(np.asarray(g, dtype=float) if np.ndim(g) else s.grid(int(g)))
        mesh = np.meshgrid(*axes, indexing="ij")
        points = [dict(zip(names, map(float, vals))) for vals in zip(*(m.ravel() for m in mesh))]
        report("grid", 0, len(points))
        rows = _run_batch(evaluator, cache, points, "grid")
        report("grid", len(points), len(points))
        candidates = [(r["mean_error"], p) for r, p in zip(rows, points)]
        if apriori is not None:
            candidates.append((apriori["mean_error"], apriori["evaluated"]))
        best_err, best = min(candidates, key=lambda c: c[0])
        # 3. refinement in unit coordinates: bounded Brent for one parameter, Nelder–Mead for more
        nm_info = None
        if nelder_mead and maxfev > 0:
            count = [0]
            stage = "brent" if len(specs) == 1 else "nelder-mead"

            def objective(u):
                u = np.atleast_1d(u)
                p = {s.name: s.from_unit(x) for s, x in zip(specs, u)}
                count[0] += 1
                report(stage, count[0], maxfev)
                e = _run_batch(evaluator, cache, [p], stage)[0]["mean_error"]
                return e if np.isfinite(e) else 1e3

            u0 = np.array([s.to_unit(best[s.name]) for s in specs])
            if len(specs) == 1:
                opt_u, nm_info = _refine_scalar(objective, u0[0], np.sort([specs[0].to_unit(v) for v in axes[0]]),
                                                maxfev, xatol)
            else:
                opt_u, nm_info = _refine_nelder_mead(objective, u0, [len(ax) for ax in axes], maxfev, xatol)
            p_opt = {s.name: s.from_unit(x) for s, x in zip(specs, opt_u)}
            e_opt = _run_batch(evaluator, cache, [p_opt], stage)[0]["mean_error"]
            if e_opt < best_err:
                best_err, best = e_opt, p_opt
        # 4. sensitivity around the optimum
        sens = []
        if sensitivity and sensitivity > 0:
            groups = [g for g in (("delta", "alpha"), ("mu",)) if all(n in names for n in g)]
            by_name = {s.name: s for s in specs}
            for group in groups:
                g_axes = []
                for n in group:
                    s = by_name[n]
                    x = best[n]
                    if x > 0:
                        factors = np.union1d(np.linspace(2.0 / sensitivity, 2.0, sensitivity), [1.0])
                        vals = x * factors
                    else:
                        vals = np.linspace(s.low, s.high, sensitivity)
                    g_axes.append(np.unique(np.clip(vals, s.low, s.high)))
                gm = np.meshgrid(*g_axes, indexing="ij")
                pts = [{**best, **dict(zip(group, map(float, v)))} for v in zip(*(m.ravel() for m in gm))]
                report("sensitivity", 0, len(pts))
                r = _run_batch(evaluator, cache, pts, "sensitivity")
                sens.append({"names": list(group), "axes": [a.tolist() for a in g_axes],
                             "errors": np.array([x["mean_error"] for x in r]).reshape(gm[0].shape).tolist(),
                             "optimum": [best[n] for n in group]})
        best_row = cache.get(best)
        metrics = {k: v for k, v in best_row.items() if not k.startswith("p:") and k not in ("stage", "problem")}
        params = {**problem.fixed, **best}
        return FitResult(params, metrics, specs, apriori, list(cache.rows), nm_info, sens,
                         time.perf_counter() - t_start, getattr(evaluator, "workers", 1))
    finally:
        if own:
            evaluator.close()
