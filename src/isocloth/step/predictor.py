"""Unconstrained implicit-Euler step φ0^{n+1} (thesis eq. 2.20, §2.6).

With lumped M, bending K and Rayleigh damping D = αM + βK, implicit Euler for
ρMφ̈ = f_δ − κKφ − Dφ̇ reads

    (ρM + dt·D + dt²·κK) v* = ρM φ̇^n + dt (f_δ − κK φ^n),     φ0 = φ^n + dt v*.

The nonconforming model adds its fixed jump energy ½ k yᵀJy to κK the same way
(``ClothModel.conformity``, :func:`isocloth.fem.nonconforming.conformity_matrix`).

The matrix depends only on dt and the material: it is factorized once and reused. With
κ = β = 0 it is diagonal and v* = (ρ v^n − dt δ g e_z)/(ρ + dt α) node by node. The optional
shear energy (thesis eq. 2.17) and the membrane stabilisation (``isocloth.fem.membrane``) add their
forces and Gauss–Newton Hessians dt²·H(φ^n), which change every step (CHOLMOD keeps the symbolic
analysis of the fixed pattern).

Prescribed (grasped) nodes are eliminated: their velocity over the step is given, v_g =
(φ_g^{n+1} − φ_g^n)/dt, and only the free block is solved, A_ff v_f = b_f − A_fg v_g. Solving the
whole system and then overwriting the grasped nodes would let the bending force move the grasped
nodes instead of the free ones next to them: a clamped strip would then hinge at the clamp with
no bending moment (its fixed point is not an equilibrium).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from isocloth.solvers.block_assembly import BlockAssembly
from isocloth.solvers.linalg import SPDFactorCache
from isocloth.step.forces import gravity_force, shear_force_and_hessian

__all__ = ["Predictor"]


class Predictor:
    """Implicit-Euler predictor for one model; caches its factorization per dt.

    ``membrane=False`` leaves the membrane stabilisation out (the stepper then applies it after the
    projection, ``isocloth.step.membrane_relaxation``)."""

    def __init__(self, model, *, membrane: bool = True) -> None:
        self.model = model
        n = model.node_count
        self._prescribed = np.asarray(model.grasp_nodes, dtype=np.int64)
        mask = np.ones(n, dtype=bool)
        mask[self._prescribed] = False
        self._free = np.flatnonzero(mask)
        self._dt = None
        self._diag = None
        self._lu = None
        self._metric, self._dt_metric = None, None
        self._nonlinear_base = None
        self._nonlinear_factor = SPDFactorCache()
        mat = model.material
        # energies with a state-dependent Hessian: the shear energy (thesis eq. 2.17–2.18) gives
        # (force, Gauss–Newton Hessian as a sparse matrix), the membrane stabilisation
        # (isocloth.fem.membrane) (force, per-point Hessian blocks) for a fixed-pattern assembly
        self._shear = None
        if mat.shear_stiffness > 0 and model.shear_rows is not None:
            self._shear = lambda x: shear_force_and_hessian(model.shear_rows, model.area_mass,
                                                            mat.shear_stiffness, x)
        self._membrane = None
        if mat.membrane_stiffness > 0 and membrane:
            self._membrane = lambda x: model.membrane.force_and_hessian_blocks(x, mat.membrane_stiffness)
        self._energies = self._shear is not None or self._membrane is not None
        self._gravity = gravity_force(model.area_mass, mat.virtual_density, mat.gravity)

    @property
    def gravity(self) -> np.ndarray:
        """(n, 3) float64 [N], gravity with the virtual density δ (thesis eq. 2.19)."""
        return self._gravity

    def _matrix(self, dt: float, jumps: bool = True):
        """Diagonal (n,) [kg] and bending part (n, n) csr [kg] (or None) of the predictor matrix:
        (ρ + dt α) M and (dt β + dt² κ) K, plus dt² k J with ``jumps`` (the nonconforming model's
        jump energy, ``ClothModel.conformity``)."""
        mat, m = self.model.material, self.model.area_mass
        diag = (mat.rho + dt * mat.alpha) * m
        stiff = dt * mat.beta + dt * dt * mat.kappa
        S = stiff * self.model.bending if stiff > 0 and self.model.bending.nnz else None
        J = self.model.conformity if jumps else None
        if J is not None:
            S = dt * dt * J if S is None else (S + dt * dt * J).tocsr()
        return diag, S

    def _base(self, dt: float):
        """(diagonal (n,) [kg], (n, n) csr matrix (ρ + dt α) M + (dt β + dt² κ) K [kg], or None when
        it is diagonal)."""
        diag, S = self._matrix(dt)
        return diag, (None if S is None else (sp.diags(diag) + S).tocsr())

    def _ensure(self, dt: float) -> None:
        if self._dt == dt:
            return
        diag, A = self._base(dt)
        self._diag, self._lu, self._nonlinear_base = diag, None, None
        f, g = self._free, self._prescribed
        if self._energies:
            A3 = sp.kron(sp.diags(diag) if A is None else A, sp.identity(3)).tocsr()
            f3 = (3 * f[:, None] + np.arange(3)).ravel()
            free3 = np.zeros(A3.shape[0], dtype=bool)
            free3[f3] = True
            if self._shear is None:
                self._nonlinear_base = (f3, BlockAssembly(A3, self.model.membrane.block_dofs, free3))
            else:
                g3 = (3 * g[:, None] + np.arange(3)).ravel()
                self._nonlinear_base = (f3, g3, A3[f3][:, f3].tocsc(), A3[f3][:, g3].tocsr())
        elif A is not None:
            self._lu = splu(A[f][:, f].tocsc())
            self._coupling = A[f][:, g].tocsr()
        self._dt = dt

    def metric(self, dt: float):
        """The implicit-Euler matrix W = (ρ + dt α) M + (dt β + dt² κ) K as (n, n) csc [kg].

        The same object is returned while dt is unchanged (solvers cache on its identity).
        """
        if self._dt_metric != dt:
            diag, A = self._base(dt)
            self._metric, self._dt_metric = sp.csc_matrix(sp.diags(diag) if A is None else A), dt
        return self._metric

    def stiffness_ratio(self, dt: float) -> float:
        """max_i (dt β + dt² κ) K_ii / ((ρ + dt α) m_i): how far W is from the mass metric.

        About 20 dt² κ / (ρ h⁴) on a uniform grid of spacing h; above ~2 a mass-metric projection
        makes the nodes jitter (docs/design/bending.md).
        """
        # bending and Rayleigh β only: the jump energy needs no implicit metric (docs/design/nonconforming.md)
        diag, S = self._matrix(dt, jumps=False)
        if S is None:
            return 0.0
        d = np.asarray(S.diagonal())
        ok = diag > 0
        return float(np.max(d[ok] / diag[ok])) if ok.any() else 0.0

    def velocity(self, x: np.ndarray, v: np.ndarray, dt: float, prescribed: np.ndarray | None = None) -> np.ndarray:
        """v* of the unconstrained step, (n, 3) float64 [m/s].

        Parameters
        ----------
        x, v : (n, 3) float64, positions [m] and velocities [m/s] at t_n
        dt : float [s]
        prescribed : (g, 3) float64 [m], optional
            Positions of the grasped nodes (``model.grasp_nodes``) at t_{n+1}; their velocity is
            then fixed to (prescribed − x_g)/dt and eliminated from the solve (default: they keep v).
        """
        self._ensure(dt)
        mat, m = self.model.material, self.model.area_mass
        f, g = self._free, self._prescribed
        rhs = mat.rho * m[:, None] * v + dt * self._gravity
        if mat.kappa > 0:
            rhs -= dt * mat.kappa * (self.model.bending @ x)
        if self.model.conformity is not None:
            rhs -= dt * (self.model.conformity @ x)
        out = np.array(v, dtype=np.float64, copy=True)
        if g.size and prescribed is not None:
            out[g] = (np.asarray(prescribed, dtype=np.float64) - x[g]) / dt
        if self._nonlinear_base is not None:
            out[f] = self._nonlinear_velocity(x, rhs, out, dt)
            return out
        if self._lu is not None:
            b = rhs[f] - (self._coupling @ out[g] if g.size else 0.0)
            out[f] = self._lu.solve(np.ascontiguousarray(b))
            return out
        safe = np.where(self._diag > 0, self._diag, 1.0)
        out[f] = rhs[f] / safe[f, None]
        return out

    def _nonlinear_velocity(self, x: np.ndarray, rhs: np.ndarray, out: np.ndarray, dt: float) -> np.ndarray:
        """v* of the free nodes (n_f, 3) [m/s] with the state-dependent energies: one linearised
        implicit step (A + dt² H(φⁿ)) v* = rhs + dt f(φⁿ), H the Gauss–Newton Hessian; ``out``
        holds the prescribed nodes' velocities."""
        g = self._prescribed
        if self._shear is None:
            f3, assembly = self._nonlinear_base
            fe, blocks = self._membrane(x)
            b = (rhs + dt * fe).ravel()[f3] - assembly.prescribed_coupling(blocks, dt * dt, out.ravel())
            factor = self._nonlinear_factor.factor(assembly.matrix(blocks, dt * dt))
            return factor.solve(b).reshape(-1, 3)
        f3, g3, A_ff, A_fg = self._nonlinear_base
        fe, H = self._shear(x)
        rhs = rhs + dt * fe
        if self._membrane is not None:
            fm, blocks = self._membrane(x)
            rhs = rhs + dt * fm
            H = H + self.model.membrane.assemble(blocks)
        H = H.tocsr()
        vg = out[g].ravel()
        b = rhs.ravel()[f3] - A_fg @ vg - dt * dt * (H[f3][:, g3] @ vg)
        factor = self._nonlinear_factor.factor(A_ff + dt * dt * H[f3][:, f3].tocsc())
        return factor.solve(b).reshape(-1, 3)

    def positions(self, x: np.ndarray, v: np.ndarray, dt: float,
                  prescribed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(φ0^{n+1}, v*) — unconstrained positions [m] and velocities [m/s], both (n, 3);
        grasped nodes at ``prescribed`` (g, 3) [m] when given (see :meth:`velocity`)."""
        vs = self.velocity(x, v, dt, prescribed)
        x0 = x + dt * vs
        if prescribed is not None and self._prescribed.size:
            x0[self._prescribed] = prescribed  # exactly, not through the velocity
        return x0, vs
