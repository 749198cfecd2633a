"""Mutable simulation state (positions, velocities, time) with exact save/restore."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["State"]


@dataclass
class State:
    """The state φ^n, φ̇^n at time t_n.

    Attributes
    ----------
    x : (n, 3) float64
        Node positions [m].
    v : (n, 3) float64
        Node velocities [m/s].
    t : float
        Time [s].
    step_index : int
        Number of steps taken since the initial state.
    contact_keys : (k,) int64
        Contacts active at the end of the step (warm start of the active-set solver,
        thesis Remark 3.5.5).
    factor_point : (n, 3) float64 or None
        Positions [m] at which the projection's kept factorization was computed (the next step
        starts with chord steps on it, see ``isocloth.solvers.projection``); None: factor afresh.
        Part of the state so that a resumed run is bit-identical.
    held_edges : (h,) int64
        Element edges held at their stretch bound at the end of the step (sorted indices into
        ``model.stretch_limits``; the next step starts with them, ``isocloth.fem.stretch_limits``).
    grasp_anchors : (g, 3) float64 or None
        For schedules with grasps that start or end during the run (``ControlSchedule.timed``): the
        positions [m] each scheduled grasped node had when its grasp started (NaN before), from which
        its trajectory moves it. None otherwise.
    """

    x: np.ndarray
    v: np.ndarray
    t: float = 0.0
    step_index: int = 0
    contact_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    factor_point: np.ndarray | None = None
    held_edges: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    grasp_anchors: np.ndarray | None = None

    def copy(self) -> "State":
        fp = None if self.factor_point is None else self.factor_point.copy()
        anchors = None if self.grasp_anchors is None else self.grasp_anchors.copy()
        return State(self.x.copy(), self.v.copy(), float(self.t), int(self.step_index), self.contact_keys.copy(), fp,
                     self.held_edges.copy(), anchors)

    def validate(self) -> None:
        """Raise ValueError naming the first node with a non-finite position or velocity."""
        for name, arr in (("position", self.x), ("velocity", self.v)):
            bad = np.flatnonzero(~np.isfinite(arr).all(axis=1))
            if bad.size:
                raise ValueError(f"non-finite {name} at node {bad[0]} (t = {self.t:.6g} s)")

    def save(self, path: str | Path) -> Path:
        """Write the state exactly (float64, npz) atomically; returns the path."""
        from isocloth.io.atomic import atomic_path

        path = Path(path)
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as fh:
                extra = {} if self.factor_point is None else {"factor_point": np.asarray(self.factor_point, np.float64)}
                if self.grasp_anchors is not None:
                    extra["grasp_anchors"] = np.asarray(self.grasp_anchors, np.float64)
                np.savez(fh, x=self.x, v=self.v, t=np.float64(self.t), step_index=np.int64(self.step_index),
                         contact_keys=np.asarray(self.contact_keys, dtype=np.int64),
                         held_edges=np.asarray(self.held_edges, dtype=np.int64), **extra)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "State":
        """Read a state written by :meth:`save` (bit-identical)."""
        with np.load(Path(path)) as d:
            keys = d["contact_keys"].copy() if "contact_keys" in d.files else np.zeros(0, dtype=np.int64)
            fp = d["factor_point"].copy() if "factor_point" in d.files else None
            held = d["held_edges"].copy() if "held_edges" in d.files else np.zeros(0, dtype=np.int64)
            anchors = d["grasp_anchors"].copy() if "grasp_anchors" in d.files else None
            return cls(d["x"].copy(), d["v"].copy(), float(d["t"]), int(d["step_index"]), keys, fp, held, anchors)
