"""A-priori forecast of δ and α from the textile's size, speed and density (thesis §4.2.3).

Thesis eq. 4.6 (and 4.10–4.11 for the hitting experiment):

    δ = δ0 + δ1 S + δ2 V + δ3 ρ,        α = α0 + α1 S + α2 V + α3 ρ,

with S the area normalised by DIN A3 (1 for A3, 2 for A2), V [m²/s²] "the average (in time and
over all the nodes) of 50 % of the highest squared velocities", and ρ [kg/m²] the density. The
coefficients (Table 4.6) were fitted on the 32 recordings of each repetition. Used as the starting
guess of a fit and reported next to the fitted values.
"""

from __future__ import annotations

import numpy as np

__all__ = ["A_PRIORI_COEFFICIENTS", "A3_AREA", "normalized_area", "velocity_feature", "a_priori_parameters"]

#: Thesis Table 4.6: (c0, c1, c2, c3) for δ and α, repetitions I and II.
A_PRIORI_COEFFICIENTS = {
    "I": {"delta": (-0.0223, -0.0178, 0.0714, 0.7664), "alpha": (0.2082, -0.1481, 1.1804, 1.7440)},
    "II": {"delta": (-0.0359, -0.0117, 0.0780, 0.7890), "alpha": (0.2155, -0.1711, 1.4410, 1.9387)},
}
A3_AREA = 0.297 * 0.420  #: m², the unit of S


def normalized_area(width: float, height: float) -> float:
    """S = (width · height) / A3 area (thesis §4.2.3: 1 for A3, 2 for A2)."""
    return float(width * height / A3_AREA)


def velocity_feature(markers: np.ndarray, times: np.ndarray) -> float:
    """V [m²/s²]: mean of the highest half of the squared marker speeds.

    Speeds are central differences of the recorded markers (samples next to a gap are skipped);
    all (frame, marker) squared speeds are pooled before taking the highest 50 % — the thesis does
    not say whether per node or per frame (spec/thesis.md §2.4.2 [UNCLEAR]).

    Parameters
    ----------
    markers : (f, m, 3) float64 [m] (NaN = missing)
    times : (f,) float64 [s]

    Raises
    ------
    ValueError
        With fewer than three frames or no usable speed sample.
    """
    x = np.asarray(markers, dtype=float)
    t = np.asarray(times, dtype=float)
    if x.shape[0] < 3:
        raise ValueError("the velocity feature needs at least three frames")
    dt = (t[2:] - t[:-2])[:, None, None]
    v = (x[2:] - x[:-2]) / dt
    v2 = (v ** 2).sum(axis=2).ravel()
    v2 = v2[np.isfinite(v2)]
    if v2.size == 0:
        raise ValueError("no marker is recorded in three consecutive frames")
    v2 = np.sort(v2)
    return float(v2[v2.size // 2:].mean())


def a_priori_parameters(rho: float, S: float, V: float, repetition: str = "I") -> dict:
    """δ̂ and α̂ of thesis eq. 4.6 with the Table 4.6 coefficients.

    Parameters
    ----------
    rho : density ρ [kg/m²]; S : normalised area; V : velocity feature [m²/s²];
    repetition : "I" (hanger, default; used by the thesis for the hitting scenario) or "II".

    Returns
    -------
    {"delta": δ̂ [kg/m²], "alpha": α̂ [kg/(m²·s)]} (not clipped: may be < 0 far outside the data).

    Raises
    ------
    KeyError
        For an unknown repetition.
    """
    if repetition not in A_PRIORI_COEFFICIENTS:
        raise KeyError(f"repetition must be one of {list(A_PRIORI_COEFFICIENTS)}, got {repetition!r}")
    c = A_PRIORI_COEFFICIENTS[repetition]
    feats = np.array([1.0, S, V, rho])
    return {"delta": float(np.dot(c["delta"], feats)), "alpha": float(np.dot(c["alpha"], feats))}
