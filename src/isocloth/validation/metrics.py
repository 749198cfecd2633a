"""Error metrics between a simulation and a recording (thesis §4.1.2 and §4.2.2, seed 000 §7.2).

For frame n, with R_n the markers recorded in that frame, d_j^n = ‖φ_j^n − ϕ_j^n‖ the distance
[m] between simulated and recorded marker j, and m_j the lumped area of marker j on the marker
grid (the mass matrix M of the error norm, per unit density):

- absolute error (thesis eq. 4.3, seed 000 eq. 17), normalised to a length:

      e_n = sqrt( Σ_{j∈R_n} m_j (d_j^n)² / Σ_{j∈R_n} m_j )

  i.e. the M-norm ‖φ^n − ϕ^n‖_M of the thesis divided by the (recorded) mass, so that e_n is
  an area-weighted RMS distance in metres. The thesis leaves the normalisation of M unstated
  (spec/thesis.md §2.4.1 [UNCLEAR]) but reports e in cm, which needs one; with a uniform
  marker grid the weights are 1/4 (corners), 1/2 (edges), 1 (interior) cell;
- spatial standard deviation (thesis eq. 4.5, seed 000 eq. 18): s_n = sqrt(Var_{j∈R_n} d_j^n),
  the (unweighted, population) variance over the recorded markers;
- dispersion (thesis eq. 4.4): d_n = e_n + 2 s_n;
- time means ē, s̄ and max d over a window of frames (by default frames 1..m: frame 0 is the
  initial condition φ⁰ = ϕ⁰, thesis eq. 4.2 and seed 000 eq. 16 sum from n = 1).

Missing markers (NaN) are left out of every sum (thesis Remark 4.2.3, seed 000 Remark 7.1); a
frame with no recorded marker has NaN metrics and is left out of the means.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ErrorSeries", "error_series", "marker_distances"]


def marker_distances(simulated: np.ndarray, recorded: np.ndarray) -> np.ndarray:
    """Distances d_j^n (f, m) float64 [m]; NaN where the marker was not recorded.

    Raises
    ------
    ValueError
        If the shapes differ or are not (f, m, 3), or the simulation is not finite where a marker
        was recorded.
    """
    s = np.asarray(simulated, dtype=float)
    r = np.asarray(recorded, dtype=float)
    if s.shape != r.shape or s.ndim != 3 or s.shape[2] != 3:
        raise ValueError(f"simulated and recorded must both be (frames, markers, 3); got {s.shape} and {r.shape}")
    ok = np.isfinite(r).all(axis=2)
    if not np.isfinite(s[ok]).all():
        raise ValueError("the simulated positions are not finite at recorded markers (diverged simulation?)")
    d = np.linalg.norm(s - r, axis=2)
    d[~ok] = np.nan
    return d


@dataclass(frozen=True)
class ErrorSeries:
    """Per-frame error metrics (thesis eq. 4.3–4.5).

    Attributes
    ----------
    times : (f,) float64 [s]
    e : (f,) float64 [m], absolute error e_n (NaN when no marker is recorded)
    s : (f,) float64 [m], spatial standard deviation s_n
    d : (f,) float64 [m], dispersion d_n = e_n + 2 s_n
    recorded : (f,) int64, number of recorded markers in the frame
    distances : (f, m) float64 [m], d_j^n (NaN where missing)
    window : (f,) bool, frames included in the time means
    """

    times: np.ndarray
    e: np.ndarray
    s: np.ndarray
    d: np.ndarray
    recorded: np.ndarray
    distances: np.ndarray
    window: np.ndarray

    def _mean(self, a: np.ndarray) -> float:
        v = a[self.window & np.isfinite(a)]
        return float(v.mean()) if v.size else float("nan")

    @property
    def mean_error(self) -> float:
        """ē [m], time mean of e_n over the window (the loss of seed 000 eq. 16, up to 1/m)."""
        return self._mean(self.e)

    @property
    def mean_std(self) -> float:
        """s̄ [m], time mean of s_n over the window."""
        return self._mean(self.s)

    @property
    def max_dispersion(self) -> float:
        """max d_n [m] over the window (thesis Table 4.3)."""
        v = self.d[self.window & np.isfinite(self.d)]
        return float(v.max()) if v.size else float("nan")

    @property
    def max_error(self) -> float:
        """max e_n [m] over the window."""
        v = self.e[self.window & np.isfinite(self.e)]
        return float(v.max()) if v.size else float("nan")

    def summary(self) -> dict:
        """{"mean_error", "mean_std", "max_dispersion", "max_error"} in metres, plus frame counts."""
        return {"mean_error": self.mean_error, "mean_std": self.mean_std, "max_dispersion": self.max_dispersion,
                "max_error": self.max_error, "frames": int(self.window.sum()),
                "missing_fraction": float(np.isnan(self.distances[self.window]).mean()) if self.window.any() else 0.0}

    def rows(self) -> list[dict]:
        """One dict per frame (time, e, s, d in metres, recorded markers) for CSV output."""
        return [{"time": float(t), "e": float(e), "s": float(s), "d": float(d), "recorded": int(r),
                 "in_window": bool(w)}
                for t, e, s, d, r, w in zip(self.times, self.e, self.s, self.d, self.recorded, self.window)]


def error_series(simulated: np.ndarray, recorded: np.ndarray, weights: np.ndarray, times: np.ndarray | None = None,
                 *, window: tuple[float | None, float | None] | None = None, skip_first: bool = True) -> ErrorSeries:
    """Error metrics per frame between simulated and recorded marker positions.

    Parameters
    ----------
    simulated : (f, m, 3) float64 [m], simulation at the marker nodes, frame by frame.
    recorded : (f, m, 3) float64 [m], recording (NaN = missing).
    weights : (m,) float64 [m²], lumped areas m_j of the markers (:func:`marker_weights`); only
        their ratios matter.
    times : (f,) float64 [s] or None (frame index).
    window : (t_start, t_stop) [s] of the frames entering the time means (None = open end).
    skip_first : leave frame 0 (the initial condition) out of the means.

    Returns
    -------
    ErrorSeries

    Raises
    ------
    ValueError
        For inconsistent shapes, negative weights, or a non-finite simulation at a recorded marker.
    """
    dist = marker_distances(simulated, recorded)
    f, m = dist.shape
    w = np.asarray(weights, dtype=float).reshape(-1)
    if w.size != m or np.any(w < 0) or not np.isfinite(w).all():
        raise ValueError(f"weights must be {m} non-negative numbers (lumped marker areas)")
    t = np.arange(f, dtype=float) if times is None else np.asarray(times, dtype=float)
    ok = np.isfinite(dist)
    d2 = np.where(ok, dist, 0.0) ** 2
    wsum = (ok * w).sum(axis=1)
    count = ok.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        e = np.sqrt((d2 * w).sum(axis=1) / wsum)  # eq. 4.3 / 17, M normalised by the recorded mass
        mean = np.where(ok, dist, 0.0).sum(axis=1) / count
        var = (np.where(ok, dist - mean[:, None], 0.0) ** 2).sum(axis=1) / count
    s = np.sqrt(var)  # eq. 4.5 / 18
    e[wsum <= 0] = np.nan
    s[count == 0] = np.nan
    in_window = np.ones(f, dtype=bool)
    if skip_first:
        in_window[0] = False
    if window is not None:
        lo, hi = window
        if lo is not None:
            in_window &= t >= lo - 1e-9
        if hi is not None:
            in_window &= t <= hi + 1e-9
    return ErrorSeries(t, e, s, e + 2 * s, count.astype(np.int64), dist, in_window)  # d: eq. 4.4
