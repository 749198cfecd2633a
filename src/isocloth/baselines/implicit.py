"""Linearised implicit Euler for elastic cloth models (Baraff & Witkin 1998, §5, eq. 15–18).

With lumped masses M (areas; inertia ρM), the virtual-mass gravity −δMg (thesis §2.5.1), Rayleigh
damping −αMv − βKv and an elastic force f(x) with stiffness K = −∂f/∂x, one backward-Euler step
linearised about (xⁿ, vⁿ) solves

    ((ρ + dt α) M + dt β K + dt² K) Δv = dt (f(xⁿ) − δMg − αM vⁿ − βK vⁿ − dt K vⁿ),

then vⁿ⁺¹ = vⁿ + Δv and xⁿ⁺¹ = xⁿ + dt vⁿ⁺¹. Grasped nodes get vⁿ⁺¹ = (target − xⁿ)/dt, moved to
the right-hand side. The parameters δ, α, β of the Material mean the same as in the inextensible
model, so the models can be fitted over the same box.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

from isocloth.state import State
from isocloth.step.diagnostics import StepInfo

__all__ = ["ElasticForces", "ImplicitEulerStepper", "node_rest_positions"]


def node_rest_positions(mesh) -> np.ndarray:
    """Rest positions (n, 3) [m] of the nodes.

    Raises
    ------
    ValueError
        For meshes whose rest shape is given per element corner (sewn garments).
    """
    if mesh.rest_triangle_corners is not None or mesh.rest_quad_corners is not None:
        raise ValueError("the elastic baselines need a rest shape per node (rest_vertices), not per element corner")
    return mesh.vertices if mesh.rest_vertices is None else mesh.rest_vertices


class ElasticForces:
    """Interface of an elastic force model: ``force_and_stiffness(x)`` → (f (n, 3) [N], K (3n, 3n) [N/m])
    with K = −∂f/∂x symmetric positive semi-definite (a definite approximation where needed)."""

    def force_and_stiffness(self, x: np.ndarray):  # pragma: no cover - interface
        raise NotImplementedError

    def energy(self, x: np.ndarray) -> float:  # pragma: no cover - interface
        raise NotImplementedError


class ImplicitEulerStepper:
    """``step(state, control, dt) -> (State, StepInfo)`` for an elastic model on a ClothModel.

    Parameters
    ----------
    model : ClothModel (mesh, lumped areas, material ρ, δ, α, β, grasp schedule; no obstacles)
    forces : ElasticForces
    dt : default time step [s]

    Raises
    ------
    ValueError
        For dt ≤ 0 or a model with obstacles (no contact handling here).
    """

    def __init__(self, model, forces: ElasticForces, *, dt: float = 0.01) -> None:
        if not dt > 0:
            raise ValueError(f"dt must be > 0 s, got {dt}")
        if model.obstacles:
            raise ValueError("the elastic baselines have no contact handling; remove the obstacles")
        self.model = model
        self.forces = forces
        self.dt = float(dt)
        self._free = np.repeat(model.free_mask, 3)
        self._grasp = np.flatnonzero(~self._free)
        self._m3 = np.repeat(model.area_mass, 3)

    def step(self, state: State, control=None, dt: float | None = None) -> tuple[State, StepInfo]:
        """Advance one step (see the module docstring).

        Raises
        ------
        SimulationDiverged
            If the new positions are not finite.
        """
        from isocloth.step.stepper import SimulationDiverged

        t0 = time.perf_counter()
        dt = self.dt if dt is None else float(dt)
        t_new = state.t + dt
        m = self.model
        mat = m.material
        if control is None:
            control = m.control(t_new)
        if control.grasp_nodes is not None and not np.array_equal(control.grasp_nodes, m.grasp_nodes):
            raise ValueError("this baseline holds the model's grasped nodes for the whole run: grasps that "
                             "start, end or change during the run need isocloth's Stepper")
        x, v = state.x, state.v
        f_el, K = self.forces.force_and_stiffness(x)
        v3 = v.ravel()
        f = f_el.ravel().copy()
        f[2::3] -= mat.virtual_density * mat.gravity * m.area_mass
        f -= mat.alpha * self._m3 * v3
        if mat.beta > 0:
            f -= mat.beta * (K @ v3)
        rhs = dt * (f - dt * (K @ v3))
        A = (sp.diags((mat.rho + dt * mat.alpha) * self._m3) + (dt * dt + dt * mat.beta) * K).tocsr()
        dv = np.zeros_like(v3)
        g = m.grasp_nodes
        if g.size:
            v_target = (control.grasp_targets - x[g]) / dt
            idx = (3 * g[:, None] + np.arange(3)).ravel()
            dv[idx] = v_target.ravel() - v3[idx]
            rhs = rhs - A[:, idx] @ dv[idx]
        free = self._free
        dv[free] = spsolve(A[free][:, free].tocsc(), rhs[free])
        v_new = (v3 + dv).reshape(-1, 3)
        x_new = x + dt * v_new
        if g.size:
            x_new[g] = control.grasp_targets
        if not np.isfinite(x_new).all():
            bad = int(np.flatnonzero(~np.isfinite(x_new).all(axis=1))[0])
            raise SimulationDiverged(f"node {bad} became non-finite at t = {t_new:.6g} s")
        info = StepInfo(t=t_new, iterations=0, residual=0.0, converged=True)
        info.wall_time = time.perf_counter() - t0
        return State(x_new, v_new, t_new, state.step_index + 1), info
