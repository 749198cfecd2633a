"""Projection with contacts and friction in one pass (thesis §3.4, Algorithm 2; seed 000 §4–5).

Iteration j linearises inextensibility and contacts around φ_j and solves the QP (thesis eq. 3.4)

    min ½ Δφᵀ M Δφ − Δφᵀ f_μ(φ̇_j)   s.t.  C(φ_j) + ∇C Δφ = 0,   H(φ_j) + ∇H Δφ ≥ 0,

with a QP solver (active-set by default, interior point as baseline). Friction is lagged one
iteration (eq. 3.2–3.4) and enters the QP as a linear term: the friction force of a contact is
F_i = −μ Γ_i V_i with Γ_i = Σ_j ‖∇H_iᵀ Δγ_{i,j}‖ the normal impulse accumulated over the
iterations so far and V_i the unit tangential velocity of the node relative to the obstacle surface
(obstacle surface velocity included); each QP receives the change of F since the previous one.
Static friction: the magnitude is limited to the force that stops the sliding, estimated from
the node's observed tangential compliance (secant update over iterations, which includes the
coupling through the inextensibility constraints; the first estimate is the node's own inverse
mass), so friction stops a sliding cloth but never reverses it. Stopping (eq. 3.5): relative
inextensibility residual ≤ tolerance (ε0), min H ≥ −ε1, and friction settled (its change would
move no node by more than ε2).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from isocloth.contact.contacts import Contacts, detect_contacts, node_of_key
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
        fric = _FrictionState()
        status = SolveStatus.MAX_ITERATIONS
        contacts = None
        for j in range(self.max_iterations + 1):
            C, J = cons.value_and_jacobian(x)
            c = C[rows]
            res = float(np.max(np.abs(c) / scale)) if rows.size else 0.0
            contacts = detect_contacts(model.obstacles, x, t, self.margin, nodes=free_nodes)
            min_gap = float(contacts.gap.min()) if contacts.count else np.inf
            log.residuals.append(res)
            f = fric.increment(contacts, x, x_prev, dt, w)
            settled = fric.settled(w, self.step_tolerance)
            # ε1 applies once a QP has been solved; before that any penetration triggers one (a
            # tolerated penetration left for the next step would make the contact velocity jitter)
            gap_ok = min_gap >= (-self.penetration_tolerance if j > 0 else 0.0)
            if res <= self.tolerance and gap_ok and settled:
                status = SolveStatus.CONVERGED
                break
            if j == self.max_iterations:
                break
            fric.commit()
            keys = contacts.keys()
            working = np.flatnonzero(np.isin(keys, keys_W))
            qp = self.qp_solver.solve_qp(w3, f.ravel(), J[rows], c, contacts.jacobian(n), contacts.gap, working)
            dx = qp.dx.reshape(n, 3)
            x = x + dx
            lam[rows] += qp.zeta_E
            fric.add_normal_impulse(keys, qp.gamma, contacts.mu)
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



class _FrictionState:
    """Friction of the contacts of one step, tracked per contact key across iterations."""

    def __init__(self) -> None:
        self.gamma: dict[int, float] = {}  # accumulated normal impulse Γ per key
        self.force: dict[int, np.ndarray] = {}  # friction force applied so far, per key
        self.slide: dict[int, np.ndarray] = {}  # tangential sliding seen when that force was set
        self.compliance: dict[int, float] = {}  # tangential compliance estimate [m/N]
        self._pending: dict[int, tuple] = {}
        self._limit: dict[int, float] = {}
        self._last_force: dict[int, np.ndarray] = {}  # force before the last commit, per key

    def add_normal_impulse(self, keys, gamma, mu) -> None:
        g_min = 1e-9 * float(gamma.max()) if gamma.size else 0.0  # interior point: tiny positive values
        for k, g, m in zip(keys, gamma, mu):
            if g > g_min and m > 0:
                self.gamma[int(k)] = self.gamma.get(int(k), 0.0) + float(g)

    def increment(self, contacts: Contacts, x, x_prev, dt, w) -> np.ndarray:
        """Change of the friction force (n, 3) to apply in the next QP (thesis eq. 3.2, lagged)."""
        f = np.zeros_like(x)
        self._pending = {}
        if not self.gamma or contacts.count == 0:
            return f
        keys = contacts.keys()
        for r in np.flatnonzero(np.isin(keys, list(self.gamma))):
            k = int(keys[r])
            node = int(contacts.nodes[r])
            nrm = contacts.normal[r]
            d = x[node] - x_prev[node] - dt * contacts.surface_velocity[r]
            d_t = d - (d @ nrm) * nrm  # tangential sliding relative to the obstacle in this step
            F_old = self.force.get(k, np.zeros(3))
            F_t = F_old - (F_old @ nrm) * nrm
            # compliance: secant over the last change of force, else the node's own inverse mass
            c = self.compliance.get(k, w[node])
            if k in self.slide:
                dF = np.linalg.norm(F_t - self._last_force.get(k, np.zeros(3)))
                dd = np.linalg.norm(d_t - self.slide[k])
                if dF > 0 and dd > 0:
                    c = min(max(dd / dF, 1e-3 * w[node]), 1e3 * w[node])
            # force that would cancel the remaining sliding, on top of the force applied so far
            stop = F_t - d_t / c
            limit = float(contacts.mu[r]) * self.gamma[k]
            self._limit[k] = limit
            norm = np.linalg.norm(stop)
            F_new = stop if norm <= limit else stop * (limit / norm)
            f[node] += F_new - F_old
            self._pending[k] = (F_new, d_t, c)
        return f

    def settled(self, w, step_tolerance: float, rel: float = 1e-3) -> bool:
        """True when every contact either sticks (slides less than ε2 with its force inside the
        friction cone) or has no pending change of friction above 0.1 % of its Coulomb limit μΓ
        (that would move its node by more than 1e-3·ε2)."""
        for k, (F_new, d_t, _) in self._pending.items():
            if np.linalg.norm(d_t) < step_tolerance and np.linalg.norm(F_new) < self._limit[k]:
                continue  # sticking: it no longer slides, and its force is inside the cone
            dF = float(np.linalg.norm(F_new - self.force.get(k, np.zeros(3))))
            if dF > rel * self._limit[k] and dF * w[node_of_key(k)] > 1e-3 * step_tolerance:
                return False
        return True

    def commit(self) -> None:
        """The increments returned by :meth:`increment` are applied by the next QP."""
        self._last_force = {k: self.force.get(k, np.zeros(3)) for k in self._pending}
        for k, (F_new, d_t, c) in self._pending.items():
            self.force[k] = F_new
            self.slide[k] = d_t
            self.compliance[k] = c

