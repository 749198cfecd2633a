"""Moving polyline obstacle: a stick subdivided into small edges (seed 000 §7.4).

The hitting experiment of seed 000 §7.4 strikes a hanging A2 sheet with a 75 cm stick of 1.5 cm
diameter whose two ends are tracked by motion capture. The stick is subdivided into small edges
and handled with edge–edge constraints against the cloth edges,
H = ⟨π_α'(a1, a2) − π_β'(p1, p2), ν⟩ ≥ τ0 with τ0 = 0.75 cm the stick radius (Remark 7.2); its
two tips are also checked against the cloth faces (node–face). Friction with the polished stick is
neglected in the paper (μ = 0, the default).
"""

from __future__ import annotations

import numpy as np

from isocloth.contact.obstacles._checks import positive
from isocloth.contact.obstacles.codim import ObstacleCodim

__all__ = ["ObstaclePolyline", "STICK_RADIUS", "STICK_LENGTH"]

STICK_RADIUS = 0.0075  # m, seed 000 §7.4 / Remark 7.2 (diameter 1.5 cm)
STICK_LENGTH = 0.75  # m, seed 000 §7.4


def _chain(k: int, closed: bool) -> np.ndarray:
    s = np.column_stack([np.arange(k - 1), np.arange(1, k)]).astype(np.int64)
    if closed and k > 2:
        s = np.vstack([s, [[k - 1, 0]]])
    return s


class ObstaclePolyline(ObstacleCodim):
    """A chain of vertices (open or closed) moving in time; see :class:`ObstacleCodim`.

    Parameters
    ----------
    vertices : (k, 3) array_like [m], k ≥ 2, reference chain (moved by ``motion``); None with
        ``times``/``trajectory``
    closed : bool, join the last vertex to the first
    radius : float [m], default the stick radius 0.0075
    mu, motion, times, trajectory, name : see :class:`ObstacleCodim`

    The free ends of an open chain are point obstacles against cloth faces.
    """

    kind = "polyline"

    def __init__(self, vertices=None, *, closed: bool = False, radius: float = STICK_RADIUS, **kwargs):
        if kwargs.get("trajectory") is not None:
            k = np.shape(kwargs["trajectory"])[1]
        else:
            k = np.shape(vertices)[0] if np.ndim(vertices) == 2 else 0
        if k < 2:
            raise ValueError(f"a polyline needs at least 2 vertices, got {k}")
        super().__init__(vertices, _chain(k, bool(closed)), None, radius=radius, **kwargs)
        self.closed = bool(closed)

    @classmethod
    def stick(cls, times, end_a, end_b, *, radius: float = STICK_RADIUS, segments: int = 8,
              **kwargs) -> "ObstaclePolyline":
        """A straight stick given by the trajectories of its two ends, subdivided into equal edges.

        Parameters
        ----------
        times : (F,) array_like [s], strictly increasing
        end_a, end_b : (F, 3) array_like [m], end positions at those times (a single (3,) position
            for a stick at rest)
        radius : float [m], default 0.0075 (seed 000 Remark 7.2)
        segments : int ≥ 1, number of edges

        Raises
        ------
        ValueError
            Shapes differ, ``segments`` < 1, or coincident ends.
        """
        segments = int(segments)
        if segments < 1:
            raise ValueError(f"segments must be >= 1, got {segments}")
        ts = np.atleast_1d(np.asarray(times, dtype=np.float64))
        a = np.asarray(end_a, dtype=np.float64).reshape(-1, 3)
        b = np.asarray(end_b, dtype=np.float64).reshape(-1, 3)
        if a.shape != b.shape or a.shape[0] != ts.shape[0]:
            raise ValueError(f"end_a and end_b must have shape ({ts.shape[0]}, 3) like times, "
                             f"got {a.shape} and {b.shape}")
        if np.any(np.linalg.norm(b - a, axis=1) <= 0.0):
            raise ValueError("the stick ends coincide at some time")
        f = np.linspace(0.0, 1.0, segments + 1)
        traj = a[:, None, :] + f[None, :, None] * (b - a)[:, None, :]
        return cls(None, radius=positive(radius, "radius"), times=ts, trajectory=traj, **kwargs)
