"""Error metrics of thesis eq. 4.3–4.5 (seed 000 eq. 17–18): analytic values and missing markers."""

import numpy as np
import pytest

from isocloth.validation.markers import marker_weights
from isocloth.validation.metrics import error_series

W = marker_weights((4, 5), (0.42, 0.594))


def _data(seed=0, frames=6):
    rng = np.random.default_rng(seed)
    rec = rng.normal(0, 0.2, (frames, 20, 3))
    sim = rec + rng.normal(0, 0.01, rec.shape)
    return sim, rec


def test_uniform_offset_gives_its_length():
    _, rec = _data()
    sim = rec + np.array([0.003, -0.004, 0.0])  # 5 mm everywhere
    es = error_series(sim, rec, W)
    assert np.allclose(es.e, 0.005) and np.allclose(es.s, 0.0) and np.allclose(es.d, 0.005)
    assert es.mean_error == pytest.approx(0.005) and es.max_dispersion == pytest.approx(0.005)


def test_mass_weighting_and_spatial_std():
    _, rec = _data()
    sim = rec.copy()
    sim[:, 0, 0] += 0.01  # a corner marker off by 1 cm
    es = error_series(sim, rec, W)
    assert np.allclose(es.e, 0.01 * np.sqrt(W[0] / W.sum()))  # corner weighs 1/4 cell
    sim2 = rec.copy()
    sim2[:, 5, 0] += 0.01  # an interior marker: weight 1 cell
    assert np.allclose(error_series(sim2, rec, W).e, 0.01 * np.sqrt(W[5] / W.sum()))
    dist = np.r_[0.01, np.zeros(19)]
    assert np.allclose(es.s, dist.std())  # population std over the markers (eq. 4.5)
    assert np.allclose(es.d, es.e + 2 * es.s)  # eq. 4.4


def test_missing_marker_changes_e_only_by_its_contribution():
    sim, rec = _data(1)
    full = error_series(sim, rec, W)
    k = 7
    cut = rec.copy()
    cut[:, k] = np.nan  # delete all samples of marker k
    part = error_series(sim, cut, W)
    d_k = np.linalg.norm(sim[:, k] - rec[:, k], axis=1)
    # e² · Σ recorded weights loses exactly w_k d_k²; the other markers are untouched
    lhs = part.e ** 2 * (W.sum() - W[k])
    assert np.allclose(lhs, full.e ** 2 * W.sum() - W[k] * d_k ** 2, rtol=1e-12)
    assert np.array_equal(part.recorded, np.full(rec.shape[0], 19))
    assert np.isnan(part.distances[:, k]).all() and np.allclose(part.distances[:, :k], full.distances[:, :k])
    # one frame with every marker missing is left out of the means
    gone = rec.copy()
    gone[3] = np.nan
    es = error_series(sim, gone, W)
    assert np.isnan(es.e[3]) and es.mean_error == pytest.approx(np.mean(full.e[[1, 2, 4, 5]]))


def test_window_and_errors():
    sim, rec = _data(2, frames=10)
    es = error_series(sim, rec, W, times=np.arange(10) * 0.1, window=(0.45, None))
    assert es.mean_error == pytest.approx(es.e[5:].mean())
    assert error_series(sim, rec, W).mean_error == pytest.approx(es.e[1:].mean())  # frame 0 skipped
    with pytest.raises(ValueError, match="frames, markers, 3"):
        error_series(sim[:, :5], rec, W)
    bad = sim.copy()
    bad[4, 2] = np.nan
    with pytest.raises(ValueError, match="not finite"):
        error_series(bad, rec, W)
    with pytest.raises(ValueError, match="weights"):
        error_series(sim, rec, W[:5])
