"""Fast projection onto the inextensibility constraints (Goldenthal et al. 2007; thesis §2.6.1).

Problem (thesis eq. 2.21): min_φ (φ − φ0)ᵀ M (φ − φ0)  s.t.  C(φ) = 0.
Sequence of linearised QPs: min Δφᵀ M Δφ s.t. C(φ_j) + ∇C(φ_j) Δφ = 0, whose solution is

    (∇C M⁻¹ ∇Cᵀ) Δλ = C(φ_j),    Δφ = −M⁻¹ ∇Cᵀ Δλ.

Prescribed (grasped) nodes have zero inverse mass, i.e. their positional constraints are
eliminated exactly. At flat configurations ∇C M⁻¹ ∇Cᵀ is singular (out-of-plane columns of
∇C vanish); a relative diagonal shift ε keeps it factorable, and components of C in its null
space produce no motion because Δφ = −M⁻¹∇CᵀΔλ. A backtracking step (halving while the scaled
residual grows, at most 3 times) keeps large, fast folds from oscillating.

Stopping rule: max_r |C_r| / scale_r ≤ tolerance (default 1e-3, the thesis' "relative tolerance
of 0.1 %"), where scale_r is the rest metric magnitude ½(E0+G0) of metric rows and l² of edge
rows (so 1e-3 bounds the relative squared-length error of boundary edges by 0.1 %).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isocloth.solvers.schur import SchurSystem
from isocloth.solvers.result import IterLog, SolveResult, SolveStatus

__all__ = ["SolverProjection"]


@dataclass
class SolverProjection:
    """Fast projection solver (equality constraints only).

    Parameters (numerics only; physics lives in Material)
    ----------
    tolerance : float
        Relative residual at which to stop (default 1e-3).
    max_iterations : int
        Cap on linearised QPs per step.
    regularization : float
        Relative diagonal shift of the Schur complement.
    backend : str
        Linear solver backend for :func:`isocloth.solvers.linalg.spd_factor`.
    """

    tolerance: float = 1e-3
    max_iterations: int = 50
    regularization: float = 1e-9
    backend: str = "auto"

    def __post_init__(self):
        if not (self.tolerance > 0):
            raise ValueError(f"tolerance must be > 0, got {self.tolerance}")
        if self.max_iterations < 1:
            raise ValueError(f"max_iterations must be ≥ 1, got {self.max_iterations}")

    def _schur(self, constraints, rows, inv_mass) -> SchurSystem:
        key = (id(constraints), id(rows), id(inv_mass), rows.size)
        cache = self.__dict__.setdefault("_cache", {})
        if key not in cache:
            cache.clear()
            cache[key] = SchurSystem(constraints.pair_row, constraints.pair_node, rows, inv_mass,
                                     constraints.row_count)
        return cache[key]

    def solve(self, x0: np.ndarray, inv_mass: np.ndarray, constraints, rows: np.ndarray) -> SolveResult:
        """Project x0 onto C = 0.

        Parameters
        ----------
        x0 : (n, 3) float64
            Unconstrained positions φ0^{n+1} [m] (grasped nodes already at their targets).
        inv_mass : (n,) float64
            Inverse lumped masses [1/kg]; 0 for prescribed nodes.
        constraints : InextensibilityConstraints
            Provides ``value_and_jacobian(x)``, ``value(x)`` and ``scale``.
        rows : (k,) int64
            Rows to enforce (rows touching at least one free node).

        Returns
        -------
        SolveResult
        """
        x = np.array(x0, dtype=np.float64, copy=True)
        schur = self._schur(constraints, rows, inv_mass)
        scale = constraints.scale[rows]
        lam = np.zeros(constraints.row_count)
        log = IterLog()
        AX = constraints.A @ x
        c = constraints.value_from(AX, x)[rows]
        res = float(np.max(np.abs(c) / scale)) if rows.size else 0.0
        log.residuals.append(res)
        it = 0
        status = SolveStatus.CONVERGED
        while res > self.tolerance:
            if it >= self.max_iterations:
                status = SolveStatus.MAX_ITERATIONS
                break
            dl = schur.solve(AX, c, self.regularization, self.backend)
            dx = schur.displacement(AX, dl)
            merit = float(np.linalg.norm(c / scale))
            step = 1.0
            for _ in range(4):
                x_try = x + step * dx
                AX_try = constraints.A @ x_try
                c_try = constraints.value_from(AX_try, x_try)[rows]
                if float(np.linalg.norm(c_try / scale)) <= merit or step < 0.2:
                    break
                step *= 0.5
            x, AX, c = x_try, AX_try, c_try
            lam[rows] += step * dl
            it += 1
            res = float(np.max(np.abs(c) / scale))
            log.residuals.append(res)
            log.step_lengths.append(step)
        if not np.isfinite(res):
            status = SolveStatus.STALLED
        return SolveResult(x=x, lam=lam, status=status, iterations=it, residual=res, log=log)
