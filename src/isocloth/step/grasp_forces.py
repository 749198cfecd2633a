"""Forces the grasps exert on the cloth (N), from the balance of momentum of the cloth.

A grasped node is a prescribed position (thesis §2.5): whatever the step does to it, its gripper
supplies. Over a step of implicit Euler (thesis eq. 2.20) with the constraint and contact impulses
of the projection, a grasped node i needs

    D_i = ρ m_i (v_i^{n+1} − v_i^n)/Δt − f_δ,i + α m_i v_i^{n+1} + (K (κ φ^{n+1} + β v^{n+1}))_i − c_i/Δt²

from its gripper and the constraint rows together (lumped area m_i, gravity with the virtual density
f_δ, thesis eq. 2.19, bending K, Rayleigh damping αM + βK, contact impulse c_i). The constraint rows
are internal: their impulses sum to zero force and moment over the cloth, so what they apply to the
grasped nodes is minus what they apply to the free ones, q_j = W (φ^{n+1} − φ0)_j − c_j with the
predictor's metric W = (ρ + Δt α) M + (Δt β + Δt² κ) K (the constraint force of implicit Euler) and
φ0 the unconstrained positions. The grasps' total force and moment (about the grasped nodes'
centroid) are therefore Σ_i D_i + Σ_j q_j/Δt² and Σ_i r_i × D_i + Σ_j r_j × q_j/Δt².

Which gripper carries which part is statically indeterminate for an inextensible cloth held at two
or more nodes (a sheet pulled taut between two grippers can carry any tension between them; the
projection's multipliers along its nearly dependent rows are regularised, not unique): the nodal
forces reported are the smallest (least-squares) ones with that total force and moment, so the
self-equilibrated part between grippers is left out. Shear and membrane energies are left out.
"""

from __future__ import annotations

import numpy as np

__all__ = ["grasp_forces", "minimal_forces"]


def grasp_forces(model, nodes: np.ndarray, v_prev: np.ndarray, x0: np.ndarray, x: np.ndarray, v: np.ndarray,
                 dt: float, gravity: np.ndarray, contact_impulse: np.ndarray | None = None) -> np.ndarray:
    """Force (g, 3) float64 [N] of the grippers on the grasped nodes ``nodes`` (g,) int64 over a step dt [s].

    v_prev : (n, 3) float64 [m/s], velocities before the step; x0 : (n, 3) float64 [m], the
    unconstrained positions (grasped nodes at their targets); x, v : (n, 3) float64, positions [m]
    and velocities [m/s] after it; gravity : (n, 3) float64 [N], f_δ; contact_impulse : (n, 3)
    float64 [kg m] or None, impulse times Δt of the contact rows and friction
    (``SolveResult.contact_impulse``).
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    if nodes.size == 0:
        return np.zeros((0, 3))
    mat = model.material
    n = x.shape[0]
    c = np.zeros((n, 3)) if contact_impulse is None else np.asarray(contact_impulse, dtype=np.float64)
    m = model.area_mass[:, None]
    K = model.bending if model.bending.nnz and (mat.kappa > 0 or mat.beta > 0) else None
    # what grasped node i needs from its gripper and the constraint rows together
    D = mat.rho * m[nodes] * (v[nodes] - v_prev[nodes]) / dt - gravity[nodes] + mat.alpha * m[nodes] * v[nodes]
    if K is not None:
        D += np.asarray(K[nodes] @ (mat.kappa * x + mat.beta * v))
    D -= c[nodes] / (dt * dt)
    # the constraint rows' impulse on the free nodes (predictor metric), minus the contacts'
    free = np.ones(n, dtype=bool)
    free[nodes] = False
    d = x - x0
    q = (mat.rho + dt * mat.alpha) * m * d
    if K is not None:
        q += (dt * mat.beta + dt * dt * mat.kappa) * np.asarray(K @ d)
    q = (q - c)[free]
    centre = x[nodes].mean(axis=0)
    force = D.sum(axis=0) + q.sum(axis=0) / (dt * dt)
    moment = np.cross(x[nodes] - centre, D).sum(axis=0) + np.cross(x[free] - centre, q).sum(axis=0) / (dt * dt)
    return minimal_forces(x[nodes], force, moment)


def minimal_forces(points: np.ndarray, force: np.ndarray, moment: np.ndarray) -> np.ndarray:
    """The smallest (least-squares) forces (g, 3) float64 [N] at ``points`` (g, 3) [m] with total
    ``force`` (3,) [N] and total ``moment`` (3,) [N m] about the points' centroid (the part of the
    moment that forces at those points cannot make, e.g. a torque about the line through two
    points, is left out)."""
    g = points.shape[0]
    r = points - points.mean(axis=0)
    A = np.zeros((6, 3 * g))
    for i in range(g):
        A[0:3, 3 * i:3 * i + 3] = np.eye(3)
        x, y, z = r[i]
        A[3:6, 3 * i:3 * i + 3] = [[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]]  # r × F
    b = np.concatenate([force, moment])
    return np.linalg.lstsq(A, b, rcond=1e-10)[0].reshape(g, 3)
