"""Membrane relaxation on the constraint manifold: the membrane stabilisation applied after the
projection instead of in the predictor.

Why. The membrane stabilisation (``isocloth.fem.membrane``) penalises element metric patterns that
the nodal inextensibility rows (thesis eq. 2.12–2.15) cannot see. Taken in the predictor, its force
and the projection work against each other wherever the rows and the contacts force membrane
strain (a garment crumpling on a table, a sheet twisted by its held corners): the predictor lowers
the strain, the mass-metric projection puts it back, and the next predictor turns it into speed. At
k_m = 1000 N/m ``shorts-fold`` and ``twist`` diverged that way (docs/design/membrane.md).

What. After the (contact) projection has converged to φ_p, a few QPs move the cloth *along* the
constraint set to lower the membrane energy W (Green strain, eq. in ``isocloth.fem.membrane``):

    sweep k:  min ½ δᵀ D δ − dt² f_W(φ_k)ᵀ δ
              s.t. C(φ_k) + ∇C δ = 0  (inextensibility rows, thesis eq. 2.15–2.16, linearised),
                   H(φ_k) + ∇H δ ≥ 0  (obstacle contacts at φ_k and the step's collision rows,
                                        seed 000 eq. 5),

with f_W = −∇W and D = (ρ + dt α) M + dt² diag(Σ_j |H_W,ij|) (a Gershgorin bound of the Gauss–Newton
Hessian H_W, so every sweep lowers the quadratic model of W; D is diagonal, which the active-set
solver needs). ``sweeps`` such QPs are followed, while the rows are off by more than the tolerance
(they drift at second order) or an inequality row is violated (pairs detected after the last QP), by
QPs with f = 0 and D = M that restore them (at most ``max_restore``). Rigid motions have f_W = 0 and are
untouched; the velocity of the step, (φ − φⁿ)/dt, includes the relaxation, as in strain limiting.

It is a relaxation, not an energy-consistent integration: each sweep only sees its own increment
(adding the inertia term −M(φ_k − φ_p) to the linear term, i.e. a Jacobi-preconditioned SQP of
½‖φ − φ_p‖²_M + dt² W, made ``twist`` diverge at t ≈ 2.1 s where the relaxation alone ran through).

Every QP re-detects Collisions_ω(φⁿ → φ_k) and adds the new pairs to the step's observation set, as
the contact projection does (thesis Algorithm 2, line 12), so the relaxation keeps the thickness τ0.
Friction: the nodes of the node–obstacle contacts in the projection's final working set with μ > 0 do
not move in the sweeps, as if friction held them (it may not: the relaxation does not solve for
friction): without that a strained tablecloth at rest on a μ = 2 table crept 6.9 mm in 0.8 s. Two
tangential equality rows per contact instead were met only approximately among the many dependent rows
(a flat sheet on a μ = 2 plane still moved 2e-5 m, 70 % of its frictionless relaxation). Cloth–cloth
rows are *not* held: holding their nodes too undid the relaxation in ``twist`` (in-contact median
element area error 12–18 % over noise seeds 0–5, as without the membrane), so layers in contact may
slide against each other by the relaxation's displacement (their rows still keep them apart).

Safeguards: the result is kept only if, after at most ``max_restore`` restoring QPs, the rows hold to
the tolerance and no obstacle contact (face midpoints included) and no collision row (the pairs
detected at the result included) is violated beyond ε1, every QP converged, no pair crosses on the
motion φⁿ → φ (ω = 0 check of the collision detector on the last detection's candidates) and W(φ) ≤ W(φ_p)
(the restore QPs, in the mass metric, may undo the sweeps); otherwise φ_p
is kept (``StepInfo.membrane_relaxed`` = False, the reason in
``StepInfo.warnings``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from isocloth.contact.contacts import mesh_faces
from isocloth.contact.rows import inequality_rows
from isocloth.contact.self_collision import CollisionRows, CollisionSet
from isocloth.solvers.active_set import SolverActiveSet

__all__ = ["MembraneRelaxation", "RelaxationResult"]


@dataclass
class RelaxationResult:
    """Outcome of :meth:`MembraneRelaxation.relax`.

    Attributes
    ----------
    x : (n, 3) float64 [m], the relaxed positions, or the input φ_p when rejected
    accepted : bool
    reason : str, why it was rejected ("" when accepted)
    qps : int, QPs solved
    residual : float, relative row residual of the relaxed positions (nan when rejected)
    """

    x: np.ndarray
    accepted: bool
    reason: str = ""
    qps: int = 0
    residual: float = float("nan")


@dataclass
class MembraneRelaxation:
    """Relaxation of the membrane strain along the constraint and contact set (see module docstring).

    Parameters
    ----------
    sweeps : int, QPs that lower the membrane energy (≥ 1; 4 by default)
    max_restore : int, QPs that then restore the rows, at most (≥ 1; 10 by default): they run only
        while the relative residual is above the tolerance
    tolerance : float, relative row residual the result must meet (as ``SolverProjection``)
    penetration_tolerance : float [m], ε1: largest obstacle or collision-row violation accepted
    margin : float [m], obstacle contact detection distance (as ``ContactProjection.margin``)
    face_midpoints : bool, also keep the face-centroid obstacle rows (``ContactProjection``)
    qp_solver : SolverActiveSet

    Raises
    ------
    ValueError
        For sweeps or max_restore < 1, or a non-positive tolerance,
        penetration tolerance or margin.
    """

    sweeps: int = 4
    max_restore: int = 10
    tolerance: float = 1e-3
    penetration_tolerance: float = 1e-4
    margin: float = 0.01
    face_midpoints: bool = False
    qp_solver: SolverActiveSet = field(default_factory=SolverActiveSet)

    def __post_init__(self):
        for name, low in (("sweeps", 1), ("max_restore", 1)):
            v = getattr(self, name)
            if int(v) != v or v < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {v}")
        for name in ("tolerance", "penetration_tolerance", "margin"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")

    def relax(self, model, x_prev: np.ndarray, x: np.ndarray, t: float, dt: float,
              collisions: CollisionRows | None = None, active_keys: np.ndarray | None = None) -> RelaxationResult:
        """Relax the membrane strain of the converged projection x.

        Parameters
        ----------
        model : ClothModel with ``material.membrane_stiffness`` > 0
        x_prev : (n, 3) float64 [m], φⁿ (start of the step, for collision detection)
        x : (n, 3) float64 [m], φ_p, the converged projection at t
        t, dt : float [s], end time and size of the step
        collisions : CollisionRows of the step's observation set (frozen normals and weights), optional
        active_keys : (k,) int64, row keys of the projection's final working set (warm start; their
            rows with μ > 0 keep their tangential slip during the sweeps)

        Returns
        -------
        RelaxationResult (``x`` is φ_p itself when rejected)

        Raises
        ------
        ValueError
            If the model has no membrane stiffness.
        """
        k_m = model.material.membrane_stiffness
        if not k_m > 0:
            raise ValueError("membrane relaxation needs cloth.membrane_stiffness > 0")
        mem, cons, rows = model.membrane, model.constraints, model.active_rows
        n = x.shape[0]
        free3 = np.repeat(model.inverse_masses > 0, 3)
        mat = model.material
        m3 = np.repeat(model.area_mass * (mat.rho + dt * mat.alpha), 3)
        keys_W = np.zeros(0, np.int64) if active_keys is None else np.asarray(active_keys, np.int64)
        held3 = np.zeros(3 * n, dtype=bool)
        det = model.collision_detector
        observed = CollisionSet()
        if collisions is not None:
            observed.add(collisions)
        faces = mesh_faces(model.mesh) if self.face_midpoints and model.obstacles else None
        xk = np.array(x, dtype=np.float64, copy=True)
        k, cand = 0, None
        while True:
            if det is not None and k > 0:
                cand = self._detect(model, det, x_prev, xk, t, dt, observed)
            C, J = cons.value_and_jacobian(xk)
            c, A_E = C[rows], J[rows]
            R, A_I, _ = inequality_rows(model, xk, t, self.margin, observed.rows if det is not None else collisions,
                                        faces, x_prev=x_prev, t_prev=t - dt)
            if k == 0 and keys_W.size:
                # friction holds the nodes of the projection's working-set node–obstacle rows with μ > 0:
                # the sweeps do not move them (tangential equality rows instead were met only
                # approximately among the dependent rows)
                held = np.isin(R.keys, keys_W) & (R.mu > 0) & (R.keys >= 0)
                nd, wt = R.nodes[held], R.weights[held]
                held3[(3 * nd[(nd >= 0) & (wt != 0)][:, None] + np.arange(3)).ravel()] = True
            residual = cons.relative_residual(C, rows)
            if k >= self.sweeps and residual <= self.tolerance and (
                    R.count == 0 or R.gap.min() >= -self.penetration_tolerance):
                # rows within the tolerance and no inequality row violated: obstacle contacts and face
                # midpoints at xk, and the collision rows with the pairs detected at xk
                break
            if k >= self.sweeps + self.max_restore:
                return RelaxationResult(x, False, "rows above the tolerance or inequality rows violated after "
                                                  "the restore QPs", k)
            if k < self.sweeps:
                # Gershgorin bound of the Gauss–Newton Hessian: D ≥ (ρ + dt α) M + dt² H_W
                f_W, blocks = mem.force_and_hessian_blocks(xk, k_m)  # one strain evaluation for both
                D = m3 + dt * dt * np.asarray(abs(mem.assemble(blocks)).sum(axis=1)).ravel()
                f = dt * dt * f_W.ravel()
                w3 = np.where(free3 & ~held3, 1.0 / D, 0.0)
            else:
                w3, f = np.where(free3, 1.0 / m3, 0.0), np.zeros(3 * n)
            working = np.flatnonzero(np.isin(R.keys, keys_W))
            qp = self.qp_solver.solve_qp(w3, f, A_E, c, A_I, R.gap, working)
            k += 1
            if not qp.converged:
                return RelaxationResult(x, False, "a relaxation QP did not converge", k)
            xk = xk + qp.dx.reshape(n, 3)
            keys_W = R.keys[qp.working]
        reason = self._crossing(model, x_prev, xk, t, dt, cand)
        if not reason:
            # the restore QPs (mass metric, f = 0) may undo the sweeps: a relaxation that does not lower W
            # is no relaxation, and φ_p is as valid a result
            W_p, W_r = mem.energy(x, k_m), mem.energy(xk, k_m)
            if W_r > W_p:
                reason = f"the membrane energy rose ({W_p:.4g} → {W_r:.4g} J)"
        return RelaxationResult(x, False, reason, k) if reason else RelaxationResult(xk, True, "", k, residual)

    def _detect(self, model, det, x_prev, x, t, dt, observed: CollisionSet):
        """Add Collisions_ω(φⁿ → x) to ``observed`` (as the contact projection does at every iteration,
        thesis Algorithm 2 line 12): pairs the relaxation brings within the thickness get their rows.
        Returns the broad-phase candidates (for the ω = 0 check at x)."""
        return observed.observe(det, x_prev, x, omega=float(model.self_collision.omega), t_prev=t - dt, t=t,
                                free_mask=model.inverse_masses > 0,
                                penetration_tolerance=self.penetration_tolerance)[0]

    @staticmethod
    def _crossing(model, x_prev: np.ndarray, x: np.ndarray, t: float, dt: float, cand=None) -> str:
        """"" when no pair crosses on the motion x_prev → x (ω = 0 check of the collision detector on
        ``cand``, the ω-candidates of that motion, or on its own broad phase), else a reason."""
        det = model.collision_detector
        if det is None:
            return ""
        if cand is None:
            cand = det.broad_phase(x_prev, x, omega=0.0, t_prev=t - dt, t=t)
        crossing = det.narrow_phase(cand, omega=0.0, proximity=False)
        movable = crossing.movable(model.inverse_masses > 0) if crossing.count else np.zeros(0, dtype=bool)
        return f"{int(np.count_nonzero(movable))} pair(s) cross" if movable.any() else ""
