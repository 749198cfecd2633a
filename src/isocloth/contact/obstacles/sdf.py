"""Obstacle from any user-supplied signed distance function."""

from __future__ import annotations

from typing import Callable

import numpy as np

from isocloth.contact.obstacles._checks import positive, safe_normalize
from isocloth.contact.obstacles.base import Obstacle

__all__ = ["ObstacleSDF"]

_UP = np.array([0.0, 0.0, 1.0])


class ObstacleSDF(Obstacle):
    """Obstacle defined by a callable φ(points) → (k,), positive outside, in reference coordinates.

    φ should be a signed distance (or at least have the right sign and zero set and a non-vanishing
    gradient near the surface: the solver linearises H = φ − thickness). The normal is ∇φ/‖∇φ‖,
    from ``gradient`` if given, else by central differences with step ``fd_step`` (one batched call
    of φ on 6k points); where ∇φ vanishes, +z is returned.

    Parameters
    ----------
    function : callable
        ``function(q) -> (k,)`` for reference points q (k, 3) [m]; must be vectorised.
    gradient : callable, optional
        ``gradient(q) -> (k, 3)``; it need not be normalised.
    fd_step : float
        Central-difference step [m], > 0 (default 1e-6).
    **kwargs
        ``mu``, ``thickness``, ``motion``, ``name`` (see :class:`Obstacle`).

    Raises
    ------
    ValueError
        ``function``/``gradient`` not callable, ``fd_step`` ≤ 0, or a callable returning the wrong
        shape (raised at query time).

    Notes
    -----
    Continuous collision detection (:meth:`Obstacle.swept_passage`) needs a distance: sphere tracing
    steps by φ and passes the surface of a function steeper than a distance. A path is swept when
    ‖∇φ‖ at both of its ends lies within ``SWEEP_SLOPE_TOLERANCE`` of 1 (φ is a distance there to
    that accuracy), with the marching step divided by 1 + ``SWEEP_SLOPE_TOLERANCE`` (``SWEEP_SLOPE``);
    this is a check at the ends, not a proof: φ must not be steeper than that between them. Paths of
    a function that is not a distance there (a height field, a polynomial implicit surface) are not
    swept: nodes crossing a thin part of such an obstacle within one step are not detected.

    Examples
    --------
    A torus of radii 0.3 and 0.1 lying in the xy plane::

        ObstacleSDF(lambda q: np.hypot(np.hypot(q[:, 0], q[:, 1]) - 0.3, q[:, 2]) - 0.1)
    """

    kind = "sdf"

    SWEEP_SLOPE_TOLERANCE = 0.01
    """Largest |‖∇φ‖ − 1| at a path's ends for which φ is taken as a distance along it and the path
    is swept (the central-difference gradient of an exact distance is within ~1e-6 of unit away from
    its kinks)."""

    SWEEP_SLOPE = 1.0 + SWEEP_SLOPE_TOLERANCE

    def __init__(self, function: Callable[[np.ndarray], np.ndarray],
                 gradient: Callable[[np.ndarray], np.ndarray] | None = None, *, fd_step: float = 1e-6,
                 **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise ValueError(f"function must be callable, got {type(function).__name__}")
        if gradient is not None and not callable(gradient):
            raise ValueError(f"gradient must be callable or None, got {type(gradient).__name__}")
        self.function = function
        self.gradient_function = gradient
        self.fd_step = positive(fd_step, "fd_step")

    def _phi(self, q: np.ndarray) -> np.ndarray:
        v = np.asarray(self.function(q), dtype=np.float64)
        if v.shape != (q.shape[0],):
            raise ValueError(f"function must return shape ({q.shape[0]},), got {v.shape}")
        return v

    def _sdf_local(self, q: np.ndarray) -> np.ndarray:
        return self._phi(q)

    def _grad_local(self, q: np.ndarray) -> np.ndarray:
        return safe_normalize(self._raw_gradient(q), _UP)

    def _contact_slope(self, q: np.ndarray) -> np.ndarray:
        """‖∇φ‖ (k,) (contact rows use φ/‖∇φ‖ when φ is not a true distance)."""
        n = np.linalg.norm(self._raw_gradient(q), axis=1)
        return np.where(n > 1e-12, n, 1.0)

    def _sweepable(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        """(k,) bool: paths q0 → q1 (k, 3) whose ends both have |‖∇φ‖ − 1| ≤ ``SWEEP_SLOPE_TOLERANCE``
        (φ a distance there; see the class notes)."""
        k = q0.shape[0]
        slope = np.linalg.norm(self._raw_gradient(np.concatenate([q0, q1])), axis=1)
        ok = np.abs(slope - 1.0) <= self.SWEEP_SLOPE_TOLERANCE
        return ok[:k] & ok[k:]

    def _raw_gradient(self, q: np.ndarray) -> np.ndarray:
        k = q.shape[0]
        if self.gradient_function is not None:
            g = np.asarray(self.gradient_function(q), dtype=np.float64)
            if g.shape != (k, 3):
                raise ValueError(f"gradient must return shape ({k}, 3), got {g.shape}")
        else:
            h = self.fd_step
            offsets = np.concatenate([h * np.eye(3), -h * np.eye(3)])  # (6, 3)
            v = self._phi((q[None, :, :] + offsets[:, None, :]).reshape(-1, 3)).reshape(6, k)
            g = ((v[:3] - v[3:]) / (2.0 * h)).T
        return g
