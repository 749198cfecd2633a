"""Projection with contacts and friction in one pass (thesis §3.4, Algorithm 2; seed 000 §4–5).

Iteration j linearises inextensibility and contacts around φ_j and solves the QP (thesis eq. 3.4)

    min ½ Δφᵀ M Δφ − Δφᵀ f_μ(φ̇_j)   s.t.  C(φ_j) + ∇C Δφ = 0,   H(φ_j) + ∇H Δφ ≥ 0,

with a QP solver (active-set by default, interior point as baseline). Friction is lagged one
iteration (eq. 3.2–3.4): f_μ = −μ V (Δβ_j), Δβ_i = ‖∇H_iᵀ Δγ_i‖ from the previous iteration's
contact multipliers and V the unit tangential velocity of the node relative to the obstacle
surface (obstacle surface velocity included). The friction displacement of a node is capped at
its tangential displacement in the step, so friction can stop sliding (static friction) but
never reverse it. Stopping (eq. 3.5): relative inextensibility residual ≤ tolerance (ε0),
min H ≥ −ε1 and max |Δφ| < ε2 once friction is present.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from isocloth.contact.contacts import Contacts, detect_contacts
from isocloth.solvers.active_set import SolverActiveSet
from isocloth.solvers.result import IterLog, SolveResult, SolveStatus

__all__ = ["ContactProjection", "ContactStats"]


@dataclass
class ContactStats:
    """Per-step contact statistics (added to StepInfo)."""

    contact_count: int = 0
    active_contacts: int = 0
    min_gap: float = float("inf")
    qp_iterations: int = 0
    constraints_added: int = 0
    constraints_removed: int = 0
    factorizations: int = 0
    updates: int = 0
    active_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


@dataclass
class ContactProjection:
    """Fast projection with Signorini contacts and Coulomb-like friction.

    Parameters (numerics only)
    ----------
    qp_solver : SolverActiveSet or SolverInteriorPoint
    tolerance : float, ε0 as a relative constraint residual (as in SolverProjection)
    penetration_tolerance : float [m], ε1
    step_tolerance : float [m], ε2 on max |Δφ| (friction converged)
    max_iterations : int
    margin : float [m], contact detection distance around obstacles
    """

    qp_solver: object = field(default_factory=SolverActiveSet)
    tolerance: float = 1e-3
    penetration_tolerance: float = 1e-4
    step_tolerance: float = 1e-5
    max_iterations: int = 50
    margin: float = 0.01

    def solve(self, model, x_prev: np.ndarray, x0: np.ndarray, t: float, dt: float,
              warm_keys: np.ndarray | None = None) -> tuple[SolveResult, ContactStats]:
        """Project x0 onto inextensibility and contacts at time t (end of the step).

        Parameters
        ----------
        model : ClothModel with ``obstacles``
        x_prev : (n, 3) float64 [m], φ^n (for velocities)
        x0 : (n, 3) float64 [m], unconstrained positions (grasped nodes at their targets)
        t : float [s]; dt : float [s]
        warm_keys : contact keys active at the previous step (warm start)

        Returns
        -------
        (SolveResult, ContactStats)
        """
        cons, rows = model.constraints, model.active_rows
        n = x0.shape[0]
        w = model.inverse_masses
        w3 = np.repeat(w, 3)
        free_nodes = np.flatnonzero(w > 0)
        scale = cons.scale[rows]
        x = np.array(x0, dtype=np.float64, copy=True)
        stats = ContactStats()
        log = IterLog()
        lam = np.zeros(cons.row_count)
        keys_W = np.zeros(0, dtype=np.int64) if warm_keys is None else np.asarray(warm_keys, dtype=np.int64)
        prev_beta: dict[int, float] = {}
        pending = False  # the last QP produced contact forces whose friction is not applied yet
        dx_max = np.inf
        status = SolveStatus.MAX_ITERATIONS
        contacts = None
        for j in range(self.max_iterations + 1):
            C, J = cons.value_and_jacobian(x)
            c = C[rows]
            res = float(np.max(np.abs(c) / scale)) if rows.size else 0.0
            contacts = detect_contacts(model.obstacles, x, t, self.margin, nodes=free_nodes)
            min_gap = float(contacts.gap.min()) if contacts.count else np.inf
            log.residuals.append(res)
            # ε1 applies once a QP has been solved; before that any penetration triggers one (a
            # tolerated penetration left for the next step would make the contact velocity jitter)
            gap_ok = min_gap >= (-self.penetration_tolerance if j > 0 else 0.0)
            if res <= self.tolerance and gap_ok and (not pending or dx_max < self.step_tolerance):
                status = SolveStatus.CONVERGED
                break
            if j == self.max_iterations:
                break
            f = self._friction(contacts, x, x_prev, dt, w, prev_beta)
            keys = contacts.keys()
            working = np.flatnonzero(np.isin(keys, keys_W))
            qp = self.qp_solver.solve_qp(w3, f.ravel(), J[rows], c, contacts.jacobian(n), contacts.gap, working)
            dx = qp.dx.reshape(n, 3)
            x = x + dx
            dx_max = float(np.abs(dx).max())
            lam[rows] += qp.zeta_E
            # interior-point solvers leave tiny positive multipliers on inactive rows: ignore them
            g_min = 1e-9 * float(qp.gamma.max()) if qp.gamma.size else 0.0
            prev_beta = {int(k): float(g) for k, g, mu in zip(keys, qp.gamma, contacts.mu) if g > g_min and mu > 0}
            pending = bool(prev_beta)
            keys_W = keys[qp.working]
            stats.qp_iterations += qp.iterations
            stats.constraints_added += qp.added
            stats.constraints_removed += qp.removed
            stats.factorizations += qp.factorizations
            stats.updates += qp.updates
        if contacts is not None:
            stats.contact_count = contacts.count
            stats.min_gap = float(contacts.gap.min()) if contacts.count else float("inf")
        stats.active_keys = np.array(sorted(keys_W.tolist()), dtype=np.int64)
        stats.active_contacts = int(stats.active_keys.size)
        iterations = len(log.residuals) - 1
        return SolveResult(x=x, lam=lam, status=status, iterations=iterations, residual=log.residuals[-1],
                           log=log), stats

    @staticmethod
    def _friction(contacts: Contacts, x, x_prev, dt, w, prev_beta) -> np.ndarray:
        """Lagged friction force f_μ (n, 3) [N·s²-scaled, like the multipliers] (thesis eq. 3.2)."""
        f = np.zeros_like(x)
        if not prev_beta or contacts.count == 0:
            return f
        keys = contacts.keys()
        beta = np.array([prev_beta.get(int(k), 0.0) for k in keys])
        sel = np.flatnonzero((beta > 0) & (contacts.mu > 0))
        if sel.size == 0:
            return f
        nodes = contacts.nodes[sel]
        nrm = contacts.normal[sel]
        # tangential displacement of the node relative to the obstacle surface in this step
        d = x[nodes] - x_prev[nodes] - dt * contacts.surface_velocity[sel]
        d_t = d - np.einsum("kd,kd->k", d, nrm)[:, None] * nrm
        length = np.linalg.norm(d_t, axis=1)
        ok = length > 1e-15
        if not np.any(ok):
            return f
        mag = contacts.mu[sel] * beta[sel]
        cap = length / np.maximum(w[nodes], 1e-300)  # friction can at most cancel the sliding
        mag = np.minimum(mag, cap)
        direction = np.zeros_like(d_t)
        direction[ok] = d_t[ok] / length[ok, None]
        np.add.at(f, nodes, -(mag[:, None] * direction))
        return f
