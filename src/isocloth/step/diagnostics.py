"""What happened in a step (StepInfo) and area-error measures (thesis eq. 2.23–2.25)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

__all__ = ["StepInfo", "area_errors"]


@dataclass
class StepInfo:
    """Diagnostics of one step.

    Attributes
    ----------
    t : float, time at the end of the step [s]
    iterations : int, fast-projection iterations (linearised QPs)
    residual : float, final max relative constraint residual
    converged : bool
    area_error_total : float, |A − A0| / A0 (eq. 2.23)
    area_error_mean : float, mean relative element area error (eq. 2.24)
    area_error_dispersion : float, mean + 2·std of the element errors (eq. 2.25)
    area_error_max : float, largest relative element area error
    wall_time : float, seconds spent in the step
    contact_count, active_contacts : int, contact rows detected / active at the end
    min_gap : float [m], smallest H_i (≥ −ε1 after a converged step)
    qp_iterations, constraints_added, constraints_removed, factorizations, updates : int,
        active-set statistics of the step (thesis Algorithm 2)
    warnings : list of str
    """

    t: float
    iterations: int
    residual: float
    converged: bool
    area_error_total: float = float("nan")
    area_error_mean: float = float("nan")
    area_error_dispersion: float = float("nan")
    area_error_max: float = float("nan")
    wall_time: float = 0.0
    contact_count: int = 0
    active_contacts: int = 0
    min_gap: float = float("inf")
    qp_iterations: int = 0
    constraints_added: int = 0
    constraints_removed: int = 0
    factorizations: int = 0
    updates: int = 0
    warnings: list = field(default_factory=list)

    def as_row(self) -> dict:
        d = asdict(self)
        d["warnings"] = ";".join(self.warnings)
        return d


def area_errors(areas: np.ndarray, rest_areas: np.ndarray) -> dict:
    """Area errors of thesis eq. 2.23–2.25.

    Parameters
    ----------
    areas, rest_areas : (e,) float64 [m²], current and rest element areas.

    Returns
    -------
    dict with keys total, mean, dispersion, max (dimensionless ratios).
    """
    rel = np.abs(areas - rest_areas) / rest_areas
    A, A0 = areas.sum(), rest_areas.sum()
    return {
        "total": float(abs(A - A0) / A0),
        "mean": float(rel.mean()),
        "dispersion": float(rel.mean() + 2 * rel.std()),
        "max": float(rel.max()),
    }
