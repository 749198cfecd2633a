"""Grasp trajectories from recorded markers: gap filling, low-pass filtering, rigid grippers, feasibility.

The replay (:mod:`isocloth.validation.replay`) drives the grasped nodes with the recorded
trajectories of their markers. Marker noise on these driving nodes is injected into the whole
cloth, so the trajectories are optionally smoothed (a smoothing spline through the recorded
samples, which also bridges the dropouts, or a zero-phase Butterworth low-pass) and, for a hanger
or a gripper, replaced by the best rigid motion of the grasped set. Grasped points are never let
farther apart than their distance on the flat rest shape, which an inextensible textile cannot
exceed. All arrays are (f, g, 3) float64 [m]: frames × grasped markers × xyz.
"""

from __future__ import annotations

import numpy as np

__all__ = ["feasible_tracks", "lowpass", "smooth_tracks", "is_rigid", "rigid_tracks", "grasp_distance", "fill_stick"]


def feasible_tracks(tracks: np.ndarray, rest: np.ndarray, slack: float = 0.0, sweeps: int = 10) -> np.ndarray:
    """Move grasped points (f, g, 3) pairwise towards each other where they are farther apart than
    their rest distance ‖rest_a − rest_b‖ (1 − slack): an inextensible textile cannot do that."""
    x = np.array(tracks, dtype=float, copy=True)
    g = x.shape[1]
    for _ in range(sweeps):
        moved = False
        for a in range(g):
            for b in range(a + 1, g):
                limit = np.linalg.norm(rest[a] - rest[b]) * (1 - slack)
                d = x[:, a] - x[:, b]
                n = np.linalg.norm(d, axis=1)
                over = n > limit
                if over.any():
                    moved = True
                    shift = 0.5 * ((n[over] - limit) / n[over])[:, None] * d[over]
                    x[over, a] -= shift
                    x[over, b] += shift
        if not moved:
            break
    return x


def lowpass(tracks: np.ndarray, rate: float, cutoff: float | None) -> np.ndarray:
    """Zero-phase 4th-order Butterworth low-pass of (f, g, 3) samples along time (filtfilt)."""
    if cutoff is None or cutoff >= 0.5 * rate:
        return tracks
    from scipy.signal import butter, filtfilt

    b, a = butter(4, cutoff / (0.5 * rate))
    pad = min(3 * max(len(a), len(b)), tracks.shape[0] - 1)
    if pad < 1:
        return tracks
    return filtfilt(b, a, tracks, axis=0, padlen=pad)


def smooth_tracks(tracks: np.ndarray, rate: float, cutoff: float | None, *, rest_start: bool = True) -> np.ndarray:
    """Fill the gaps (NaN) of (f, g, 3) samples and smooth them: a cubic smoothing spline per
    marker and coordinate through the recorded samples (scipy.interpolate.make_smoothing_spline).

    The spline minimises Σ (y_i − s(t_i))² + λ ∫ s''² dt; for samples at ``rate`` its transfer
    function is 1 / (1 + (f / f_c)⁴) with λ = rate / (2π f_c)⁴, so ``cutoff`` f_c [Hz] means what
    it means for :func:`lowpass` (half amplitude at f_c). Unlike linear interpolation followed by a
    low-pass, a gap during an acceleration is bridged by the smooth curve through the samples on
    both sides (a 0.2 s gap of a hand accelerating at 1 m/s² was off by ~3 mm with linear filling).
    With ``cutoff`` None (or ≥ the Nyquist frequency) gaps are filled linearly and samples kept.

    ``rest_start``: the recording starts at rest (the replay's initial velocity is zero), so the
    samples are mirrored about t = 0 before smoothing (zero velocity there, the acceleration
    continuous). Without it the spline's free end (s'' = 0) rounds off a hand that starts to
    accelerate at t = 0: a lift at ~4 m/s² was off by 1 mm and moved the cloth by 3 mm.

    Raises
    ------
    ValueError
        If a marker has no recorded sample.
    """
    x = np.array(tracks, dtype=float, copy=True)
    f = x.shape[0]
    t = np.arange(f) / float(rate)
    smooth = cutoff is not None and cutoff < 0.5 * rate
    for j in range(x.shape[1]):
        ok = np.isfinite(x[:, j]).all(axis=1)
        if not ok.any():
            raise ValueError(f"grasped marker {j} is never recorded; it cannot drive the cloth")
        if smooth and ok.sum() >= 5:
            from scipy.interpolate import make_smoothing_spline

            lam = rate / (2.0 * np.pi * cutoff) ** 4
            tj, yj = t[ok], x[ok, j]
            if rest_start:
                m = tj > 0
                tj, yj = np.concatenate([-tj[m][::-1], tj]), np.concatenate([yj[m][::-1], yj])
            for d in range(3):
                x[:, j, d] = make_smoothing_spline(tj, yj[:, d], lam=lam)(t)
        elif not ok.all():
            for d in range(3):
                x[~ok, j, d] = np.interp(t[~ok], t[ok], x[ok, j, d])
    return x


def grasp_distance(raw: np.ndarray, rest_length: float, *, taut_sigmas: float = 3.0,
                   taut_slack: float = 2.5e-5) -> float:
    """Distance [m] at which a rigid gripper holds two grasped points, from their raw samples (f, 2, 3).

    The median of the distances in the frames where both are recorded, never more than
    ``rest_length``; when it is within ``taut_sigmas`` standard errors of ``rest_length`` (the data
    cannot tell it from a taut textile) the taut distance ``rest_length · (1 − taut_slack)``. A flat
    sheet held a fraction of a millimetre short of taut buckles by millimetres (the sag of an
    inextensible strip grows like the square root of its shortening): on the synthetic tablecloth
    drag a 0.11 mm underestimate bulged the initial state by 3.7 mm. The slack (10 µm on an A2
    edge) keeps the projection away from the exactly stretched, rank-deficient configuration
    (twice the iterations per step there) and changed ē by < 0.01 mm.
    """
    both = np.isfinite(raw).all(axis=(1, 2))
    d = np.linalg.norm(raw[both, 1] - raw[both, 0], axis=1)
    if d.size == 0:
        d = np.linalg.norm(raw[:, 1] - raw[:, 0], axis=1)
        d = d[np.isfinite(d)]
    if d.size == 0:
        return float(rest_length)
    est = float(np.median(d))
    se = 1.2533 * float(d.std()) / np.sqrt(d.size)  # standard error of the median (normal samples)
    taut = float(rest_length) * (1.0 - taut_slack)
    if est >= rest_length - taut_sigmas * se:
        return taut
    return min(est, taut)


def is_rigid(tracks: np.ndarray, tolerance: float = 0.01) -> bool:
    """True when every pairwise distance of the grasped points varies by < tolerance (relative std)."""
    g = tracks.shape[1]
    for a in range(g):
        for b in range(a + 1, g):
            d = np.linalg.norm(tracks[:, a] - tracks[:, b], axis=1)
            if d.std() > tolerance * d.mean():
                return False
    return g > 1


def rigid_tracks(tracks: np.ndarray, rest: np.ndarray, length: float | None = None) -> np.ndarray:
    """Best rigid motion of the grasped set, frame by frame (Kabsch), of a reference configuration:
    for two points ``length`` apart (default their mean distance; see :func:`grasp_distance`), for
    more the first frame; never wider than the rest shape."""
    f, g = tracks.shape[:2]
    if g == 1:
        return tracks
    if g == 2:
        d = tracks[:, 1] - tracks[:, 0]
        n = np.linalg.norm(d, axis=1)
        length = float(n.mean()) if length is None else float(length)
        length = min(length, float(np.linalg.norm(rest[1] - rest[0])))
        mid = tracks.mean(axis=1)
        u = d / n[:, None]
        return np.stack([mid - 0.5 * length * u, mid + 0.5 * length * u], axis=1)
    ref = feasible_tracks(tracks[:1], rest)[0]
    ref = ref - ref.mean(axis=0)
    out = np.empty_like(tracks)
    for k in range(f):
        c = tracks[k].mean(axis=0)
        H = ref.T @ (tracks[k] - c)
        U, _, Vt = np.linalg.svd(H)
        D = np.diag([1.0, 1.0, np.sign(np.linalg.det(Vt.T @ U.T))])
        out[k] = ref @ (Vt.T @ D @ U.T).T + c
    return out


def fill_stick(raw: np.ndarray, times: np.ndarray, mode: str = "rigid") -> np.ndarray:
    """Fill the missing samples (NaN) of the two end markers of a rigid stick, (f, 2, 3) [m].

    ``"linear"``: each end separately, linearly in time between its recorded samples (held
    before the first and after the last one), as seed 000 Remark 7.3.

    ``"rigid"`` (the stick is one rigid body): in a frame where one end is seen, the other is
    put at the stick length L (median distance of the frames with both ends) along the stick
    direction, interpolated linearly between the frames with both ends and normalised; frames
    where both ends are missing are then filled linearly as above. A gap of one end is exact for
    a stick that translates, however it moves: on the synthetic hit-a2 one end was lost for the
    16 frames of the first hit (it turns back inside the gap), and the linear chord left that end
    8 cm behind (replay ē 15.8 mm against 5.0 mm with the true stick; docs/design/validation.md).
    Without any frame with both ends, ``"rigid"`` falls back to ``"linear"``.

    Parameters
    ----------
    raw : (f, 2, 3) float64 [m], NaN where a marker was not seen
    times : (f,) float64 [s], increasing
    mode : "rigid" or "linear"

    Returns
    -------
    (f, 2, 3) float64 [m], finite.

    Raises
    ------
    ValueError
        For another mode, a wrong shape, or an end that is never recorded.
    """
    x = np.array(raw, dtype=float, copy=True)
    t = np.asarray(times, dtype=float)
    if x.ndim != 3 or x.shape[1:] != (2, 3) or t.shape != (x.shape[0],):
        raise ValueError(f"stick tracks must have shape (f, 2, 3) with times (f,), got {x.shape} and {t.shape}")
    if mode not in ("rigid", "linear"):
        raise ValueError(f"stick_fill must be 'rigid' or 'linear', got {mode!r}")
    seen = np.isfinite(x).all(axis=2)
    for k in range(2):
        if not seen[:, k].any():
            raise ValueError(f"stick end {k} is never recorded; it cannot be interpolated")
    both = seen.all(axis=1)
    if mode == "rigid" and both.any() and not both.all():
        d = x[both, 1] - x[both, 0]
        n = np.linalg.norm(d, axis=1)
        length = float(np.median(n))
        u = np.stack([np.interp(t, t[both], (d / n[:, None])[:, c]) for c in range(3)], axis=1)
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        only_a = seen[:, 0] & ~seen[:, 1]
        only_b = seen[:, 1] & ~seen[:, 0]
        x[only_a, 1] = x[only_a, 0] + length * u[only_a]
        x[only_b, 0] = x[only_b, 1] - length * u[only_b]
    for k in range(2):
        ok = np.isfinite(x[:, k]).all(axis=1)
        if not ok.all():
            for c in range(3):
                x[~ok, k, c] = np.interp(t[~ok], t[ok], x[ok, k, c])
    return x
