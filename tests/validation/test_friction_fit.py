"""Fitting the friction coefficient μ on synthetic tablecloth recordings (issue 5; seed 000 §7.3, thesis Table 4.7).

The scenario is tests/validation/data/tablecloth-drag.toml: the A2 wool sheet and the table of the
built-in tablecloth scene, the sheet dragged by two corners so that the part still on the table
slides against friction. The built-in laying motion cannot identify μ: the lying part is pushed and
sticks for every μ ≳ 0.3, and the replay error was 24–33 mm for every μ in [0, 2] on both the
μ = 0 and the μ = 2 recordings (docs/design/validation.md, "Friction").

Slow (~1–2 min on 2 cores): the two fits run side by side in two processes (the Brent refinement
is sequential).
"""

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest

SCENE = str(Path(__file__).parent / "data" / "tablecloth-drag.toml")
NOISE = 0.5e-3
NOISE_LEVEL = np.sqrt(3) * NOISE  # ē of a perfect model: RMS length of the 3-D marker noise


def _fit_mu(mu_true: float, seed: int = 1):
    from isocloth.validation.fitting import FitProblem, ParameterSpec, fit
    from isocloth.validation.replay import ReplayOptions
    from isocloth.validation.synth import synthesize

    rec = synthesize(SCENE, [f"obstacles.0.mu={mu_true!r}"], noise=NOISE, dropout=0.05, seed=seed)
    truth = rec.metadata["truth"]
    assert truth["mu"] == [mu_true] and len(truth["grasped"]) == 2
    # the sheet lies flat: its grasped corners are not the two highest markers, so they are named
    problem = FitProblem(rec, SCENE, options=ReplayOptions(grasp=tuple(truth["grasped"])),
                         fixed={"delta": truth["delta"], "alpha": truth["alpha"]})
    # 4 cell-centred grid values (0.25, 0.75, 1.25, 1.75: the truth is on none of them), then bounded
    # Brent between the grid neighbours of the best one, to 0.04 in μ (xatol is in box units); the box
    # edge μ = 0 is tried when the first grid value wins
    return fit(problem, parameters=[ParameterSpec("mu", 0.0, 2.0)], grid=4, maxfev=8, xatol=0.02, sensitivity=0,
               a_priori=None)


@pytest.mark.slow
def test_fit_recovers_friction_low_and_high():
    """Issue 5 acceptance: μ of a synthetic tablecloth recording with 0.5 mm noise and 5 % dropouts,
    low (μ = 0, a polished table) and high (μ = 1) friction, recovered within 10 % (for μ = 0: an
    absolute 0.05; the thesis' low-friction optima were all < 1e-3), ē within 2× the noise level."""
    if "fork" in multiprocessing.get_all_start_methods():
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
            low, high = pool.map(_fit_mu, [0.0, 1.0])
    else:  # a spawned child could not import this test module: one after the other
        low, high = map(_fit_mu, [0.0, 1.0])
    assert low.parameters["mu"] < 0.05
    assert high.parameters["mu"] == pytest.approx(1.0, rel=0.1)
    for res in (low, high):
        assert res.metrics["mean_error"] < 2 * NOISE_LEVEL
        assert res.nelder_mead["method"] == "brent"
        # identifiable: every grid value is clearly worse than the optimum (a sticking sheet would
        # give a flat error over μ)
        grid = [r["mean_error"] for r in res.evaluations if r["stage"] == "grid"]
        assert len(grid) == 4 and min(grid) > res.metrics["mean_error"] + 1e-3
