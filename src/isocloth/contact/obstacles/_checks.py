"""Argument checks shared by the obstacle and collision-detection modules (internal).

Every check raises ``ValueError`` whose message starts with the parameter name, so that a
bad scene file or API call points at the offending field.
"""

from __future__ import annotations

import math

import numpy as np

UNIT_TOL = 1e-6  # accepted deviation of |n| from 1 for direction vectors


def finite_scalar(value, name: str) -> float:
    """Return ``value`` as a finite float, else raise ``ValueError`` naming ``name``."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {value!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return x


def nonnegative(value, name: str) -> float:
    """Finite scalar ≥ 0."""
    x = finite_scalar(value, name)
    if x < 0.0:
        raise ValueError(f"{name} must be >= 0, got {x}")
    return x


def positive(value, name: str) -> float:
    """Finite scalar > 0."""
    x = finite_scalar(value, name)
    if x <= 0.0:
        raise ValueError(f"{name} must be > 0, got {x}")
    return x


def positive_or_inf(value, name: str) -> float:
    """Scalar in (0, +inf]."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {value!r}") from None
    if math.isnan(x) or x <= 0.0:
        raise ValueError(f"{name} must be > 0 (inf allowed), got {value!r}")
    return x


def vector3(value, name: str) -> np.ndarray:
    """Return a finite (3,) float64 copy of ``value``."""
    try:
        v = np.array(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 3-vector of reals, got {value!r}") from None
    if v.shape != (3,):
        raise ValueError(f"{name} must have shape (3,), got {np.shape(value)}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite, got {v}")
    return v


def unit_vector3(value, name: str) -> np.ndarray:
    """Return a (3,) unit vector; zero or non-unit vectors (|‖v‖ − 1| > 1e-6) are rejected."""
    v = vector3(value, name)
    norm = float(np.linalg.norm(v))
    if norm == 0.0:
        raise ValueError(f"{name} must be a unit vector, got the zero vector")
    if abs(norm - 1.0) > UNIT_TOL:
        raise ValueError(f"{name} must be a unit vector (|{name}| = 1), got |{name}| = {norm:.6g}")
    return v / norm


def points3(points, name: str = "points") -> np.ndarray:
    """Return query points as a C-contiguous (k, 3) float64 array; a single (3,) point becomes (1, 3)."""
    p = np.asarray(points, dtype=np.float64)
    if p.ndim == 1 and p.shape[0] == 3:
        p = p[None, :]
    if p.ndim != 2 or p.shape[1] != 3:
        raise ValueError(f"{name} must have shape (k, 3), got {np.shape(points)}")
    return np.ascontiguousarray(p)


def finite_points(x, name: str, rows: int | None = None) -> np.ndarray:
    """``x`` as a contiguous (rows, 3) float64 array (any row count when ``rows`` is None).

    Raises
    ------
    ValueError
        Naming ``name`` if the shape is wrong, or the first point holding NaN or inf.
    """
    a = np.ascontiguousarray(x, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != 3 or (rows is not None and a.shape[0] != rows):
        raise ValueError(f"{name} must have shape ({'N' if rows is None else rows}, 3), got {np.shape(x)}")
    bad = ~np.isfinite(a).all(axis=1)
    if bad.any():
        raise ValueError(f"{name} must be finite: NaN or inf at point {int(np.flatnonzero(bad)[0])} "
                         "(a diverged state or a broken input)")
    return a


def any_perpendicular(axis: np.ndarray) -> np.ndarray:
    """A fixed unit vector perpendicular to the unit vector ``axis`` (3,)."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = np.cross(axis, helper)
    return u / np.linalg.norm(u)


def safe_normalize(v: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Row-normalise (k, 3) ``v``; rows of (near) zero length are replaced by ``fallback`` (3,) or (k, 3)."""
    n = np.linalg.norm(v, axis=1)
    tiny = n <= 1e-300
    out = np.empty_like(v)
    out[~tiny] = v[~tiny] / n[~tiny, None]
    if np.any(tiny):
        fb = np.broadcast_to(fallback, v.shape)
        out[tiny] = fb[tiny]
    return out
