"""Interior-point baseline for the contact QPs: the same QP (thesis eq. 3.4) through qpsolvers.

Library baseline for users and benchmarks (default solver: Clarabel). Prescribed coordinates
(w = 0) are eliminated: Δφ is 0 there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from isocloth.solvers.active_set import QPResult

__all__ = ["SolverInteriorPoint"]


@dataclass
class SolverInteriorPoint:
    """min ½ Δφᵀ M Δφ − fᵀΔφ s.t. A_E Δφ + c_E = 0, A_I Δφ + h ≥ 0 via qpsolvers.

    Parameters
    ----------
    solver : str, a qpsolvers backend name ("clarabel", "piqp", ...)
    tolerance : float, the backend's feasibility/optimality tolerance where it accepts one
    """

    solver: str = "clarabel"
    tolerance: float = 1e-10

    def solve_qp(self, w, f, A_E, c_E, A_I, h, working=None) -> QPResult:
        """Same signature and result as :meth:`SolverActiveSet.solve_qp` (``working`` is ignored).

        Raises
        ------
        RuntimeError if the backend reports no solution (message names the solver).
        ImportError if qpsolvers or the backend is not installed.
        """
        import qpsolvers

        free = np.flatnonzero(w > 0)
        A_E = sp.csc_matrix(A_E)[:, free]
        A_I = sp.csc_matrix(A_I)[:, free]
        P = sp.diags(1.0 / w[free]).tocsc()
        kw = {}
        if self.solver == "clarabel":
            kw = {"tol_feas": self.tolerance, "tol_gap_abs": self.tolerance, "tol_gap_rel": self.tolerance}
        problem = qpsolvers.Problem(P, -f[free], G=-A_I if A_I.shape[0] else None, h=h if A_I.shape[0] else None,
                                    A=A_E if A_E.shape[0] else None, b=-c_E if A_E.shape[0] else None)
        sol = qpsolvers.solve_problem(problem, solver=self.solver, **kw)
        if not sol.found:
            raise RuntimeError(f"interior-point solver {self.solver!r} found no solution")
        dx = np.zeros(w.size)
        dx[free] = sol.x
        # qpsolvers: P x + q + Gᵀ z + Aᵀ y = 0 with G = −A_I, A = A_E  =>  γ = z, ζ_E = −y
        gamma = np.asarray(sol.z) if A_I.shape[0] else np.zeros(0)
        zeta = -np.asarray(sol.y) if A_E.shape[0] else np.zeros(0)
        return QPResult(dx, zeta, gamma, np.flatnonzero(gamma > 1e-9), iterations=0, factorizations=0)
