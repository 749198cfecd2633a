"""Solver outcomes as data (library code never prints)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

__all__ = ["SolveStatus", "IterLog", "SolveResult"]


class SolveStatus(enum.Enum):
    CONVERGED = "converged"
    MAX_ITERATIONS = "max_iterations"
    STALLED = "stalled"


@dataclass
class IterLog:
    """Per-iteration residuals (max relative constraint violation) and step lengths."""

    residuals: list = field(default_factory=list)
    step_lengths: list = field(default_factory=list)


@dataclass
class SolveResult:
    """Outcome of one constrained projection.

    Attributes
    ----------
    x : (n, 3) float64, projected positions [m]
    lam : (m,) float64, accumulated multipliers Σ Δλ (scaled by dt², eq. 2.20)
    status : SolveStatus
    iterations : int, number of linearised QPs solved
    residual : float, final max relative residual
    log : IterLog
    factorizations : int, numeric factorizations done (0 when every step reused an earlier one)
    factor_point : (n, 3) float64 or None, positions [m] of the factorization the solver kept
        (pass it to the next solve to reuse it; None when it keeps none)
    contact_impulse : (n, 3) float64 or None, impulse times Δt [kg m] of the contact and collision
        rows and their friction on each node over the projection (forces from outside the cloth;
        None: no contact rows)
    """

    x: np.ndarray
    lam: np.ndarray
    status: SolveStatus
    iterations: int
    residual: float
    log: IterLog
    factorizations: int = 0
    factor_point: np.ndarray | None = None
    contact_impulse: np.ndarray | None = None
