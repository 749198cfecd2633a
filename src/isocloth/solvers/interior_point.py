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
    tolerance: float = 1e-11

    def solve_qp(self, w, f, A_E, c_E, A_I, h, working=None) -> QPResult:
        """Same signature and result as :meth:`SolverActiveSet.solve_qp` (``working`` is ignored).

        Raises
        ------
        RuntimeError if the backend reports no solution (message names the solver).
        ImportError if qpsolvers or the backend is not installed.
        """
        import qpsolvers

        free = np.flatnonzero(w > 0)
        A_E = sp.csr_matrix(A_E)[:, free]
        A_I = sp.csr_matrix(A_I)[:, free]
        # Non-dimensionalise: cloth QPs have masses ~1e-3 kg, multipliers ~1e-7 and, late in a
        # step, increments of ~1e-6 m, far below the absolute tolerances of interior-point codes.
        # Scale every constraint row to unit norm, the unknown by a length L (the size of the
        # step the QP asks for: unconstrained step, equality residual, worst violation) and the
        # objective by p·L² with p the typical mass; multipliers are scaled back below.
        p = float(np.median(1.0 / w[free])) if free.size else 1.0
        rE = np.sqrt(np.asarray(A_E.multiply(A_E).sum(axis=1)).ravel()) if A_E.shape[0] else np.zeros(0)
        rI = np.sqrt(np.asarray(A_I.multiply(A_I).sum(axis=1)).ravel()) if A_I.shape[0] else np.zeros(0)
        rE[rE == 0] = 1.0
        rI[rI == 0] = 1.0
        L = max(float(np.abs(w[free] * f[free]).max()) if free.size else 0.0,
                float(np.abs(c_E / rE).max()) if c_E.size else 0.0,
                float(np.max(-h / rI, initial=0.0)))
        L = L if L > 0 else 1.0
        A_Es = (sp.diags(1.0 / rE) @ A_E).tocsc()
        A_Is = (sp.diags(1.0 / rI) @ A_I).tocsc()
        P = sp.diags(1.0 / (p * w[free])).tocsc()
        kw = {}
        if self.solver == "clarabel":
            kw = {"tol_feas": self.tolerance, "tol_gap_abs": self.tolerance, "tol_gap_rel": self.tolerance}
        mI, mE = A_Is.shape[0], A_Es.shape[0]
        problem = qpsolvers.Problem(P, -f[free] / (p * L), G=-A_Is if mI else None, h=h / (rI * L) if mI else None,
                                    A=A_Es if mE else None, b=-c_E / (rE * L) if mE else None)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "AlmostSolved" notes; handled below
            sol = qpsolvers.solve_problem(problem, solver=self.solver, **kw)
            if not sol.found and kw:  # nearly dependent equality rows (flat sheets): relax once
                kw = {k: 100 * v for k, v in kw.items()}
                sol = qpsolvers.solve_problem(problem, solver=self.solver, **kw)
        if not sol.found:
            raise RuntimeError(f"interior-point solver {self.solver!r} found no solution")
        dx = np.zeros(w.size)
        dx[free] = L * sol.x
        # qpsolvers: P y + q + Gᵀ z + Aᵀ ν = 0 with G = −A_I/rI, A = A_E/rE, Δφ = L y (objective / p L²)
        gamma = p * L * np.asarray(sol.z) / rI if mI else np.zeros(0)
        zeta = -p * L * np.asarray(sol.y) / rE if mE else np.zeros(0)
        # working set: the contacts that push (multipliers above the solver's tolerance level)
        g_tol = 1e-7 * float(np.abs(gamma).max()) if gamma.size else 0.0
        return QPResult(dx, zeta, gamma, np.flatnonzero(gamma > g_tol), iterations=0, factorizations=0)
