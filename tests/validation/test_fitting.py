"""Fitting (δ, α) to synthetic recordings: recovery, a-priori formula, parallel evaluation, resume."""

import importlib.util

import numpy as np
import pytest

from isocloth.validation.apriori import a_priori_parameters, normalized_area, velocity_feature
from isocloth.validation.fitting import (FitProblem, ParameterSpec, ProcessEvaluator, SerialEvaluator, fit,
                                         make_evaluator)


def test_a_priori_formula_reproduces_thesis_table_4_9():
    # Table 4.9 (hitting, A2, repetition-I coefficients): V is not printed; inverting eq. 4.10
    # for polyester and stiff cotton gives V ≈ 0.14 and 0.385 m²/s² (spec/thesis.md §2.4.3).
    assert normalized_area(0.42, 0.594) == pytest.approx(2.0, abs=1e-3)
    poly = a_priori_parameters(0.1042, 2.0, 0.14)
    assert poly["delta"] == pytest.approx(0.032, abs=1e-3) and poly["alpha"] == pytest.approx(0.26, abs=5e-3)
    stiff = a_priori_parameters(0.3046, 2.0, 0.385)
    assert stiff["delta"] == pytest.approx(0.203, abs=1e-3) and stiff["alpha"] == pytest.approx(0.90, abs=5e-3)
    assert a_priori_parameters(0.3046, 2.0, 0.385, "II")["delta"] != stiff["delta"]


def test_velocity_feature_is_the_mean_of_the_fastest_half():
    t = np.arange(5) * 0.1
    fast = np.stack([2.0 * t, 0 * t, 0 * t], axis=1)  # 2 m/s
    x = np.stack([fast, fast, np.zeros_like(fast), np.zeros_like(fast)], axis=1)
    assert velocity_feature(x, t) == pytest.approx(4.0)
    x[2, 2] = np.nan  # speeds next to a gap are skipped (a still marker here)
    assert velocity_feature(x, t) == pytest.approx(4.0)


def test_parameter_spec():
    s = ParameterSpec("delta", 0.0, 0.2)
    assert np.allclose(s.grid(4), [0.025, 0.075, 0.125, 0.175])  # cell-centred: never 0
    k = ParameterSpec("stiffness", 1.0, 1e4, log=True)
    assert np.allclose(k.grid(2), [10.0, 1000.0]) and k.from_unit(k.to_unit(37.0)) == pytest.approx(37.0)
    with pytest.raises(ValueError):
        ParameterSpec("x", 1.0, 1.0)


def test_fit_recovers_delta_and_alpha_fast(hang_recording, hang):
    """Round trip, small: 1.5 s of hang-a2 at (0.5ρ, 2ρ), 0.5 mm noise, 5 % dropouts."""
    res = fit(FitProblem(hang_recording, "hang-a2", tuple(hang.scene_set)), grid=4, maxfev=25, sensitivity=0,
              a_priori=None)
    for k in ("delta", "alpha"):
        assert res.parameters[k] == pytest.approx(hang.true[k], rel=0.1)
    # noise level: RMS length of the 3-D marker noise, √3 σ = 0.87 mm (the ē of a perfect model)
    assert res.metrics["mean_error"] < 2 * np.sqrt(3) * hang.noise
    assert [r["stage"] for r in res.evaluations][:16] == ["grid"] * 16


@pytest.mark.slow
def test_fit_round_trip_through_a_motive_file(tmp_path, hang):
    """Issue 5 acceptance: 3 s synthetic Motive CSV, read back, δ and α within 10 %, ē within 2× noise."""
    from isocloth.validation.recordings import read_recording, write_recording
    from isocloth.validation.synth import synthesize

    rec = synthesize("hang-a2", hang.truth_set, duration=3.0, noise=hang.noise, dropout=0.05, seed=7, shuffle=True)
    path = write_recording(tmp_path / "shake.csv", rec, units="mm")
    back = read_recording(path)
    assert back.missing_fraction() == pytest.approx(0.05, abs=0.005)
    ev = make_evaluator(FitProblem(back, "hang-a2", tuple(hang.scene_set)), workers=2)
    res = fit(FitProblem(back, "hang-a2", tuple(hang.scene_set)), grid=6, maxfev=40, sensitivity=4, evaluator=ev)
    ev.close()
    for k in ("delta", "alpha"):
        assert res.parameters[k] == pytest.approx(hang.true[k], rel=0.1)
    assert res.metrics["mean_error"] < 2 * np.sqrt(3) * hang.noise
    # the optimum is the minimum of the sensitivity scan (thesis §4.1.3)
    scan = res.sensitivity[0]
    assert np.nanmin(scan["errors"]) >= res.metrics["mean_error"] - 1e-12
    assert res.a_priori is not None and res.a_priori["mean_error"] > res.metrics["mean_error"]


def test_parallel_evaluation_matches_serial_and_fit_resumes(tmp_path, hang_recording, hang):
    problem = FitProblem(hang_recording.window(0.0, 0.5), "hang-a2", tuple(hang.scene_set))
    pts = [hang.true, {"delta": 0.06, "alpha": 0.5}, {"delta": 0.12, "alpha": 0.2}]
    serial = SerialEvaluator(problem).map(pts)
    pool = ProcessEvaluator(problem, 2)
    try:
        parallel = pool.map(pts)
    finally:
        pool.close()
    assert [r["mean_error"] for r in parallel] == [r["mean_error"] for r in serial]
    # a persisted cache makes a second fit evaluate nothing new
    cache = tmp_path / "evaluations.csv"
    first = fit(problem, grid=2, maxfev=4, sensitivity=0, a_priori=None, cache_path=cache)

    class Counting(SerialEvaluator):
        calls = 0

        def map(self, params_list):
            Counting.calls += len(params_list)
            return super().map(params_list)

    second = fit(problem, grid=2, maxfev=4, sensitivity=0, a_priori=None, evaluator=Counting(problem),
                 cache_path=cache)
    assert Counting.calls == 0 and second.parameters == first.parameters
    # another problem does not reuse that cache
    other = FitProblem(hang_recording.window(0.0, 0.4), "hang-a2", tuple(hang.scene_set))
    third = fit(other, grid=2, maxfev=0, sensitivity=0, a_priori=None, evaluator=Counting(other), cache_path=cache)
    assert Counting.calls == 4 and len(third.evaluations) == 4


def test_fit_argument_errors(hang_recording, hang):
    problem = FitProblem(hang_recording.window(0.0, 0.2), "hang-a2", tuple(hang.scene_set), fixed={"delta": 0.09})
    with pytest.raises(ValueError, match="both fitted and fixed"):
        fit(problem, parameters=["delta"], grid=1, maxfev=0, sensitivity=0)
    with pytest.raises(ValueError, match="no default search box"):
        fit(problem, parameters=["colour"], grid=1, maxfev=0, sensitivity=0)
    only = fit(problem, parameters=[], grid=1, maxfev=0, sensitivity=0)
    assert only.parameters == {"delta": 0.09} and len(only.evaluations) == 1


@pytest.mark.skipif(importlib.util.find_spec("ray") is not None, reason="ray is installed")
def test_ray_address_without_ray_is_a_clear_error(hang_recording):
    with pytest.raises(ImportError, match="pip install ray"):
        make_evaluator(FitProblem(hang_recording, "hang-a2"), address="auto")


def test_ray_evaluator_wiring_with_a_stub(monkeypatch, hang_recording, hang):
    """RayEvaluator's use of the Ray API (init, remote actors, ActorPool), checked against an in-process
    stand-in: results must equal the serial evaluator's. (A live cluster is not available here.)"""
    import sys
    import types

    calls = {}

    class _Method:
        def __init__(self, f):
            self.f = f

        def remote(self, *a):
            return self.f(*a)

    class _Handle:
        def __init__(self, obj):
            self.evaluate = _Method(obj.evaluate)

    def remote(**opts):
        calls["remote"] = opts
        return lambda cls: types.SimpleNamespace(remote=lambda *a: _Handle(cls(*a)))

    class ActorPool:
        def __init__(self, actors):
            self.actors = actors

        def map(self, fn, values):
            return [fn(self.actors[i % len(self.actors)], v) for i, v in enumerate(values)]

    ray = types.ModuleType("ray")
    ray.init = lambda **kw: calls.setdefault("init", kw)
    ray.cluster_resources = lambda: {"CPU": 3.0}
    ray.remote = remote
    ray.kill = lambda actor: calls.setdefault("killed", []).append(actor)
    util = types.ModuleType("ray.util")
    util.ActorPool = ActorPool
    ray.util = util
    monkeypatch.setitem(sys.modules, "ray", ray)
    monkeypatch.setitem(sys.modules, "ray.util", util)
    problem = FitProblem(hang_recording.window(0.0, 0.3), "hang-a2", tuple(hang.scene_set))
    ev = make_evaluator(problem, address="ray://head:10001")
    pts = [hang.true, {"delta": 0.05, "alpha": 0.5}, {"delta": 0.12, "alpha": 0.2}, {"delta": 0.1, "alpha": 0.1}]
    got = ev.map(pts)
    ev.close()
    assert calls["init"]["address"] == "ray://head:10001" and calls["remote"] == {"num_cpus": 1}
    assert ev.workers == 3 and len(calls["killed"]) == 3
    assert [r["mean_error"] for r in got] == [r["mean_error"] for r in SerialEvaluator(problem).map(pts)]


def test_ray_evaluator_on_a_local_ray_instance_matches_the_serial_evaluator(ray_local, hang_recording, hang):
    """RayEvaluator on a real (local) Ray instance: the same results as the serial evaluator, in order."""
    problem = FitProblem(hang_recording.window(0.0, 0.3), "hang-a2", tuple(hang.scene_set))
    pts = [hang.true, {"delta": 0.05, "alpha": 0.5}, {"delta": 0.12, "alpha": 0.2}, {"delta": 0.1, "alpha": 0.1}]
    ev = make_evaluator(problem, address=ray_local, workers=2)
    try:
        got = ev.map(pts)
    finally:
        ev.close()
    want = SerialEvaluator(problem).map(pts)
    assert ev.workers == 2
    for g, w in zip(got, want):
        assert (g["delta"], g["alpha"], g["mean_error"], g["max_dispersion"]) == \
            (w["delta"], w["alpha"], w["mean_error"], w["max_dispersion"])


class _Analytic:
    """An evaluator with a known error curve ē(μ) (no simulation): tests the search, not the model."""

    workers = 1

    def __init__(self, loss):
        self.loss, self.calls = loss, []

    def map(self, params_list):
        self.calls += [p["mu"] for p in params_list]
        return [{"mu": p["mu"], "mean_error": self.loss(p["mu"]), "mean_std": 0.0, "max_dispersion": 0.0,
                 "wall_time": 0.0, "mean_iterations": 1.0, "diverged": False} for p in params_list]

    def close(self):
        pass


@pytest.mark.parametrize("mu_star", [0.93, 0.0, 2.0, 1.62])
def test_one_parameter_fit_uses_bounded_brent_and_the_box_edges(hang_recording, hang, mu_star):
    """A single fitted parameter is refined by bounded Brent between the grid neighbours of the best
    grid value (here a V-shaped ē like the friction scans); an optimum on the box edge (μ = 0, a
    polished table) is found by evaluating the edge and one point xatol inside."""
    problem = FitProblem(hang_recording.window(0.0, 0.2), "hang-a2", tuple(hang.scene_set))
    ev = _Analytic(lambda mu: 1e-3 + 5e-3 * abs(mu - mu_star))
    res = fit(problem, parameters=[ParameterSpec("mu", 0.0, 2.0)], grid=4, maxfev=12, xatol=0.01, sensitivity=0,
              a_priori=None, evaluator=ev)
    assert res.nelder_mead["method"] == "brent"
    assert res.parameters["mu"] == pytest.approx(mu_star, abs=0.02)
    assert ev.calls[:4] == [0.25, 0.75, 1.25, 1.75]  # cell-centred grid first
    lo, hi = res.nelder_mead["bracket"]
    assert lo <= mu_star / 2.0 <= hi and hi - lo <= 0.5 + 1e-12  # one grid cell on each side at most
    if mu_star in (0.0, 2.0):  # edge + one point xatol inside, no golden sections towards the edge
        assert res.nelder_mead["message"] == "minimum at the box edge" and len(ev.calls) == 6
        assert res.parameters["mu"] == mu_star
    else:
        assert len(ev.calls) <= 4 + 12
