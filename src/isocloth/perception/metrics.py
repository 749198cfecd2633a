"""Distances between cloth representations, cluster quality and classification (thesis §7.3–7.4).

Spearman's distance (eq. 7.9) d(x, y) = 1 − ρ(R(x), R(y)), ρ the Pearson correlation of the ranks
(scipy.stats.spearmanr), in [0, 2] and blind to scale; the Davies–Bouldin index (eq. 7.10); the
nearest-representative classifier of §7.4.4.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from scipy import stats

__all__ = ["classify", "davies_bouldin", "distance_matrix", "spearman_distance", "spearman_distance_matrix"]


def spearman_distance(x, y) -> float:
    """1 − Spearman's rank correlation of two vectors (eq. 7.9), in [0, 2]; 1 when either is
    constant (no ranking).

    Raises
    ------
    ValueError
        If x and y differ in length or have fewer than two entries.
    """
    x, y = np.ravel(np.asarray(x, dtype=np.float64)), np.ravel(np.asarray(y, dtype=np.float64))
    if x.size != y.size or x.size < 2:
        raise ValueError(f"need two vectors of one length ≥ 2, got {x.size} and {y.size}")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return 1.0
    return float(1.0 - stats.spearmanr(x, y).statistic)


def spearman_distance_matrix(samples) -> np.ndarray:
    """:func:`spearman_distance` between every two rows of samples (s, d ≥ 2) as one (s, s) float64
    matrix (zero diagonal): the rows ranked once (average ranks of ties, as scipy.stats.spearmanr),
    their Pearson correlations in one matrix product. Rows without a ranking (constant) are at
    distance 1 from every other row.

    Raises
    ------
    ValueError
        If samples is not two-dimensional with at least two columns.
    """
    X = np.asarray(samples, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] < 2:
        raise ValueError(f"samples must be (s, d ≥ 2), got shape {X.shape}")
    R = stats.rankdata(X, axis=1)
    R -= R.mean(axis=1, keepdims=True)
    norm = np.linalg.norm(R, axis=1)
    ranked = np.ptp(X, axis=1) > 0
    U = np.zeros_like(R)
    U[ranked] = R[ranked] / norm[ranked, None]
    D = 1.0 - np.clip(U @ U.T, -1.0, 1.0)
    D[~ranked, :] = 1.0
    D[:, ~ranked] = 1.0
    np.fill_diagonal(D, 0.0)
    return D


def distance_matrix(samples, distance: Callable = spearman_distance) -> np.ndarray:
    """The symmetric (s, s) float64 matrix of ``distance`` between the rows of samples (s, d)
    (the thesis' confusion matrices, §7.4.1); Spearman's distance through
    :func:`spearman_distance_matrix`."""
    X = np.asarray(samples, dtype=np.float64)
    if distance is spearman_distance:
        return spearman_distance_matrix(X)
    s = X.shape[0]
    out = np.zeros((s, s))
    for i in range(s):
        for j in range(i + 1, s):
            out[i, j] = out[j, i] = distance(X[i], X[j])
    return out


def davies_bouldin(samples, labels, distance: Callable = spearman_distance) -> float:
    """Davies–Bouldin index (eq. 7.10): (1/n) Σ_i max_{j≠i} (σ_i + σ_j) / d(c_i, c_j), c_i the mean of
    class i, σ_i the mean distance of its members to c_i; smaller is better.

    Raises
    ------
    ValueError
        If there are fewer than two classes, samples and labels differ in length, or two class
        centres are at distance 0.
    """
    X = np.asarray(samples, dtype=np.float64)
    labels = np.asarray(labels)
    if X.shape[0] != labels.size:
        raise ValueError(f"{X.shape[0]} samples but {labels.size} labels")
    classes = np.unique(labels)
    if classes.size < 2:
        raise ValueError("the Davies–Bouldin index needs at least two classes")
    centres = np.array([X[labels == c].mean(axis=0) for c in classes])
    sigma = np.array([np.mean([distance(p, centres[k]) for p in X[labels == c]]) for k, c in enumerate(classes)])
    apart = np.array([[distance(centres[i], centres[j]) if i != j else np.inf for j in range(classes.size)]
                      for i in range(classes.size)])
    if not (apart > 0).all():
        i, j = np.argwhere(~(apart > 0))[0]
        raise ValueError(f"classes {classes[i]!r} and {classes[j]!r} have centres at distance 0: the index is "
                         "undefined (merge them, or use a distance that separates them)")
    worst = [max((sigma[i] + sigma[j]) / apart[i, j] for j in range(classes.size) if j != i)
             for i in range(classes.size)]
    return float(np.mean(worst))


def classify(coordinates, representatives: Mapping, distance: Callable = spearman_distance):
    """The label of the nearest representative (§7.4.4).

    Parameters
    ----------
    coordinates : (d,) float64, e.g. dGLI cloth coordinates
    representatives : mapping label → (d,) or (r, d) array (one or several representatives)
    distance : callable(x, y) -> float

    Returns
    -------
    (label, {label: distance to its nearest representative})

    Raises
    ------
    ValueError
        If there is no representative.
    """
    if not representatives:
        raise ValueError("no representatives to classify against")
    dist = {label: min(distance(coordinates, r) for r in np.atleast_2d(np.asarray(reps, dtype=np.float64)))
            for label, reps in representatives.items()}
    return min(dist, key=dist.get), dist
