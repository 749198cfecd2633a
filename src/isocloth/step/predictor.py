"""Unconstrained implicit-Euler step φ0^{n+1} (thesis eq. 2.20, §2.6).

With lumped M, bending K and Rayleigh damping D = αM + βK, implicit Euler for
ρMφ̈ = f_δ − κKφ − Dφ̇ reads

    (ρM + dt·D + dt²·κK) v* = ρM φ̇^n + dt (f_δ − κK φ^n),     φ0 = φ^n + dt v*.

The matrix depends only on dt and the material: it is factorized once and reused. With
κ = β = 0 it is diagonal and v* = (ρ v^n − dt δ g e_z)/(ρ + dt α) node by node. The optional
shear energy adds its Gauss–Newton Hessian dt²·H(φ^n), which changes every step.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from isocloth.step.forces import gravity_force, shear_force_and_hessian

__all__ = ["Predictor"]


class Predictor:
    """Implicit-Euler predictor for one model; caches its factorization per dt."""

    def __init__(self, model) -> None:
        self.model = model
        self._dt = None
        self._diag = None
        self._lu = None
        mat = model.material
        self._gravity = gravity_force(model.area_mass, mat.virtual_density, mat.gravity)

    def _matrix(self, dt: float):
        mat, m = self.model.material, self.model.area_mass
        diag = (mat.rho + dt * mat.alpha) * m
        stiff = dt * mat.beta + dt * dt * mat.kappa
        return diag, stiff

    def _ensure(self, dt: float) -> None:
        if self._dt == dt:
            return
        diag, stiff = self._matrix(dt)
        self._diag, self._lu = diag, None
        if stiff > 0 and self.model.bending.nnz:
            A = (sp.diags(diag) + stiff * self.model.bending).tocsc()
            self._lu = splu(A)
        self._dt = dt

    def velocity(self, x: np.ndarray, v: np.ndarray, dt: float) -> np.ndarray:
        """v* of the unconstrained step, (n, 3) float64 [m/s]."""
        self._ensure(dt)
        mat, m = self.model.material, self.model.area_mass
        rhs = mat.rho * m[:, None] * v + dt * self._gravity
        if mat.kappa > 0:
            rhs -= dt * mat.kappa * (self.model.bending @ x)
        k_s = mat.shear_stiffness
        if k_s > 0 and self.model.shear_rows is not None:
            f, H = shear_force_and_hessian(self.model.shear_rows, m, k_s, x)
            rhs = rhs + dt * f
            A = sp.kron(sp.diags(self._diag) + (self._matrix(dt)[1]) * self.model.bending, sp.identity(3))
            A = (A + dt * dt * H).tocsc()
            return splu(A).solve(rhs.ravel()).reshape(-1, 3)
        if self._lu is not None:
            return self._lu.solve(rhs)
        safe = np.where(self._diag > 0, self._diag, 1.0)
        return rhs / safe[:, None]

    def positions(self, x: np.ndarray, v: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """(φ0^{n+1}, v*) — unconstrained positions [m] and velocities [m/s], both (n, 3)."""
        vs = self.velocity(x, v, dt)
        return x + dt * vs, vs
