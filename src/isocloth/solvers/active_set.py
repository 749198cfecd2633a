"""Active-set solver for the contact QPs of Coltraro et al. (thesis §3.5, Algorithm 2; seed 000 Alg. 1).

One linearised QP (thesis eq. 3.4):

    min_Δφ ½ Δφᵀ M Δφ − Δφᵀ f      s.t.   A_E Δφ + c_E = 0   (inextensibility, always in W)
                                            A_I Δφ + h   ≥ 0   (contacts, Signorini)

with M diagonal (inverse masses w; w = 0 marks prescribed coordinates). For the working set W the
KKT system is solved in multiplier form (thesis §3.5.1):

    (G W Gᵀ) ζ = −g − G W f,    Δφ = W (Gᵀ ζ + f),     G = [A_E; A_I[W]], g = [c_E; h[W]],

where the contact multipliers ζ_I = Δγ must be ≥ 0. The method starts from an infeasible point
and a warm-started working set, moves the contact with the most negative multiplier to the
observation set O and the most violated constraint of O to W, one at a time (Remark 3.5.1;
no cycling by Proposition 1).

Factorization updates ("Schur-complement update on a sparse factorization"): the matrix
A0 = G0 W G0ᵀ of the initial working set is factorized once (dense LAPACK or sparse CHOLMOD, see
``linalg.spd_factor``). Constraints added later enter through their coupling block
B = G0 W A_kᵀ, and constraints removed from G0 through artificial multipliers (thesis eq. 3.15):

    [A0  B  Sᵀ] [x0]   [b0]
    [Bᵀ  D  0 ] [xK] = [bK]          S selects the removed rows (x0[R] = 0).
    [S   0  0 ] [y ]   [0 ]

Eliminating x0 leaves a small dense system in (xK, y) of size |K| + |R|; each change costs one
solve with the base factor. A constraint whose gradient is linearly dependent on W (tiny pivot,
Remark 3.5.3) is swapped with the working contact of largest |α| in ∇G = Σ α_i ∇H_i (Remark 3.5.2);
a dependent constraint of the equality rows alone is skipped (Lemma 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from isocloth.solvers.linalg import spd_factor

__all__ = ["QPResult", "SolverActiveSet", "qp_kkt_residuals"]


@dataclass
class QPResult:
    """Solution of one QP.

    Attributes
    ----------
    dx : (N,) float64, the minimiser Δφ
    zeta_E : (m_E,) float64, equality multipliers (sign: M Δφ = A_Eᵀ ζ_E + A_Iᵀ γ + f)
    gamma : (m_I,) float64, contact multipliers (≥ 0, zero outside W)
    working : (k,) int64, inequality rows in the final working set
    iterations : int, systems solved
    added, removed, dependent_swaps : int
    factorizations : int, full factorizations; updates : int, Schur-complement updates
    """

    dx: np.ndarray
    zeta_E: np.ndarray
    gamma: np.ndarray
    working: np.ndarray
    iterations: int = 0
    added: int = 0
    removed: int = 0
    dependent_swaps: int = 0
    factorizations: int = 0
    updates: int = 0
    converged: bool = True


class _UpdatedFactor:
    """Solves with G W Gᵀ for a working set that changes by single rows, via a base factor."""

    def __init__(self, G0: sp.csr_matrix, w: np.ndarray, regularization: float, backend: str):
        self.G0 = G0.tocsr()
        self.w = w
        self.m0 = G0.shape[0]
        A0 = (self.G0.multiply(w[None, :]) @ self.G0.T).tocsc() if self.m0 else sp.csc_matrix((0, 0))
        self.factor = spd_factor(A0, regularization=regularization, backend=backend) if self.m0 else None
        self.added: list[sp.csr_matrix] = []  # rows a_k (1, N)
        self.removed: list[int] = []  # indices into G0
        self.Z = np.zeros((self.m0, 0))  # A0⁻¹ [B, Sᵀ] columns, in the order [added..., removed...]
        self._cols_added: list[np.ndarray] = []
        self._cols_removed: list[np.ndarray] = []

    def _base_solve(self, b):
        return self.factor.solve(b) if self.m0 else np.zeros(0)

    def add(self, a: sp.csr_matrix) -> None:
        self.added.append(a)
        col = self._base_solve(np.asarray((self.G0.multiply(self.w[None, :]) @ a.T).todense()).ravel()) \
            if self.m0 else np.zeros(0)
        self._cols_added.append(col)

    def remove_base(self, i: int) -> None:
        self.removed.append(i)
        e = np.zeros(self.m0)
        e[i] = 1.0
        self._cols_removed.append(self._base_solve(e))

    def remove_added(self, j: int) -> None:
        del self.added[j]
        del self._cols_added[j]

    def rows(self) -> sp.csr_matrix:
        """Current G rows in the order [G0 (all, removed ones pinned to 0), added...]."""
        parts = [self.G0] + self.added
        return sp.vstack(parts, format="csr") if self.added else self.G0

    def solve(self, b0: np.ndarray, bK: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Solve with the current set; returns (x0 (m0,), xK (|K|,)); x0[removed] = 0."""
        k, r = len(self.added), len(self.removed)
        u = self._base_solve(b0)
        if k + r == 0:
            return u, np.zeros(0)
        Zk = np.column_stack(self._cols_added) if k else np.zeros((self.m0, 0))
        Zr = np.column_stack(self._cols_removed) if r else np.zeros((self.m0, 0))
        if k:
            AK = sp.vstack(self.added, format="csr")
            D = (AK.multiply(self.w[None, :]) @ AK.T).toarray()
            Bt = (AK.multiply(self.w[None, :]) @ self.G0.T).toarray()  # Bᵀ (k, m0)
        else:
            D, Bt = np.zeros((0, 0)), np.zeros((0, self.m0))
        Sel = np.zeros((r, self.m0))
        Sel[np.arange(r), self.removed] = 1.0
        top = np.hstack([D - Bt @ Zk, -Bt @ Zr])
        bot = np.hstack([-Sel @ Zk, -Sel @ Zr])
        K = np.vstack([top, bot])
        rhs = np.concatenate([bK - Bt @ u, -Sel @ u])
        sol = np.linalg.lstsq(K, rhs, rcond=None)[0] if K.size else np.zeros(0)
        xK, y = sol[:k], sol[k:]
        x0 = u - Zk @ xK - Zr @ y
        if r:
            x0[self.removed] = 0.0
        return x0, xK

    def pivot(self, a: sp.csr_matrix) -> tuple[float, float]:
        """(a W aᵀ, a W Gᵀ A⁻¹ G W aᵀ) for a candidate row: their difference is λ² of thesis eq. 3.13."""
        d = float((a.multiply(self.w[None, :]) @ a.T).toarray()[0, 0])
        Gc = self.rows()
        rhs = np.asarray((Gc.multiply(self.w[None, :]) @ a.T).todense()).ravel()
        x0, xK = self.solve(rhs[: self.m0], rhs[self.m0:])
        return d, float(rhs @ np.concatenate([x0, xK]))


@dataclass
class SolverActiveSet:
    """Active-set QP solver with warm start and factorization updates (thesis Algorithm 2).

    Parameters (numerics only)
    ----------
    multiplier_tolerance : float
        A working contact leaves W when its multiplier is below −tol·|γ|∞.
    feasibility_tolerance : float [m]
        ε1: an observed constraint enters W when A_I Δφ + h < −ε1.
    dependence_tolerance : float
        Relative pivot λ²/(a W aᵀ) below which a constraint is linearly dependent (Remark 3.5.3).
    max_changes : int
        Cap on working-set changes per QP.
    regularization, backend : passed to the base factorization.
    """

    multiplier_tolerance: float = 1e-10
    feasibility_tolerance: float = 1e-6
    dependence_tolerance: float = 1e-10
    max_changes: int = 500
    regularization: float = 1e-12
    backend: str = "auto"
    _stats: dict = field(default_factory=dict, repr=False)

    def solve_qp(self, w, f, A_E, c_E, A_I, h, working=None) -> QPResult:
        """Solve one QP (see module docstring).

        Parameters
        ----------
        w : (N,) float64, inverse masses per coordinate (0 = prescribed)
        f : (N,) float64, linear term (lagged friction force, thesis eq. 3.4)
        A_E : (m_E, N) sparse, c_E : (m_E,) — equality rows
        A_I : (m_I, N) sparse, h : (m_I,) — inequality rows (A_I Δφ + h ≥ 0)
        working : int array, warm-start working set (inequality rows), optional

        Returns
        -------
        QPResult
        """
        A_E = sp.csr_matrix(A_E)
        A_I = sp.csr_matrix(A_I)
        mE, mI = A_E.shape[0], A_I.shape[0]
        W0 = np.unique(np.asarray(working if working is not None else [], dtype=np.int64))
        W0 = W0[(W0 >= 0) & (W0 < mI)]
        G0 = sp.vstack([A_E, A_I[W0]], format="csr") if W0.size else A_E
        fac = _UpdatedFactor(G0, w, self.regularization, self.backend)
        res = QPResult(np.zeros(w.size), np.zeros(mE), np.zeros(mI), W0, factorizations=1)
        base_ineq = list(W0)  # inequality row of each base row after mE
        added_ineq: list[int] = []
        skipped: set[int] = set()
        g_all = np.concatenate([c_E, h[W0]])
        Wf = w * f
        for it in range(self.max_changes + 1):
            Gc = fac.rows()
            rhs = -np.concatenate([g_all, h[added_ineq]]) - Gc @ Wf
            x0, xK = fac.solve(rhs[: fac.m0], rhs[fac.m0:])
            zeta = np.concatenate([x0, xK])
            res.iterations += 1
            dx = w * (Gc.T @ zeta + f)
            # contact multipliers of the working set
            active_base = [i for i in range(len(base_ineq)) if (mE + i) not in fac.removed]
            gam_rows = [base_ineq[i] for i in active_base] + added_ineq
            gam_vals = np.concatenate([x0[[mE + i for i in active_base]], xK]) if gam_rows else np.zeros(0)
            # relative to the multipliers' own size: cloth QPs have multipliers of order 1e-9
            scale = float(np.abs(gam_vals).max()) if gam_vals.size else 1.0
            if gam_vals.size and gam_vals.min() < -self.multiplier_tolerance * scale:
                # most negative multiplier leaves W
                _drop_working(fac, int(np.argmin(gam_vals)), active_base, added_ineq, mE)
                res.removed += 1
                res.updates += 1
                continue
            # most violated observed constraint enters W
            in_W = np.zeros(mI, dtype=bool)
            in_W[gam_rows] = True
            if skipped:
                in_W[list(skipped)] = True
            viol = A_I @ dx + h
            viol[in_W] = np.inf
            if mI == 0 or viol.min() >= -self.feasibility_tolerance:
                res.dx = dx
                res.zeta_E = x0[:mE].copy()
                res.gamma = np.zeros(mI)
                res.gamma[gam_rows] = gam_vals
                res.working = np.array(sorted(gam_rows), dtype=np.int64)
                return res
            k = int(np.argmin(viol))
            a = A_I[k]
            d, proj = fac.pivot(a)
            if d - proj <= self.dependence_tolerance * max(d, 1e-300):
                # ∇H_k = Σ α_i ∇G_i: swap with the working contact of largest |α| (Remark 3.5.2)
                rhs_a = np.asarray((Gc.multiply(w[None, :]) @ a.T).todense()).ravel()
                a0, aK = fac.solve(rhs_a[: fac.m0], rhs_a[fac.m0:])
                alpha = np.concatenate([a0[[mE + i for i in active_base]], aK]) if gam_rows else np.zeros(0)
                if alpha.size == 0 or np.abs(alpha).max() < 1e-12:
                    skipped.add(k)  # dependent on the equality rows alone (Lemma 1)
                    continue
                _drop_working(fac, int(np.argmax(np.abs(alpha))), active_base, added_ineq, mE)
                res.dependent_swaps += 1
            fac.add(a)
            added_ineq.append(k)
            res.added += 1
            res.updates += 1
        res.converged = False
        res.dx = dx
        return res


def _drop_working(fac: _UpdatedFactor, j: int, active_base: list, added_ineq: list, mE: int) -> None:
    """Move working contact j (numbered base contacts first, then added ones) to the observation set."""
    if j < len(active_base):
        fac.remove_base(mE + active_base[j])
    else:
        fac.remove_added(j - len(active_base))
        del added_ineq[j - len(active_base)]


def qp_kkt_residuals(w, f, A_E, c_E, A_I, h, res: QPResult) -> dict:
    """KKT residuals of a QP solution (thesis eq. 3.6): stationarity, feasibility, sign, complementarity.

    Stationarity is measured on free coordinates (w > 0) as ‖Δφ/w − (A_Eᵀζ + A_Iᵀγ + f)‖∞.
    """
    free = w > 0
    force = A_E.T @ res.zeta_E + A_I.T @ res.gamma + f
    stat = np.abs(res.dx[free] / w[free] - force[free]).max() if free.any() else 0.0
    slack = A_I @ res.dx + h
    return {
        "stationarity": float(stat),
        "equality": float(np.abs(A_E @ res.dx + c_E).max()) if A_E.shape[0] else 0.0,
        "inequality": float(max(0.0, -slack.min())) if slack.size else 0.0,
        "dual_sign": float(max(0.0, -res.gamma.min())) if res.gamma.size else 0.0,
        "complementarity": float(np.abs(res.gamma * slack).max()) if slack.size else 0.0,
    }
