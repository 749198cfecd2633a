"""Inequality rows of one contact QP: node–obstacle contacts and collision rows in one set.

The contact projection (thesis §3.4, Algorithm 2) stacks two kinds of Signorini rows (and, for a
model with element stretch limits, their linearisation: :func:`stretch_limit_rows`):

* node–obstacle contacts (:class:`~isocloth.contact.contacts.Contacts`, thesis §3.2): H = signed
  distance of one node, gradient the unit normal at that node;
* self-collision and thin-obstacle rows (:class:`~isocloth.contact.self_collision.CollisionRows`,
  seed 000 §3.2): H_k = ν·Σ w_i x_i + offset − τ with frozen barycentric weights w on up to four
  cloth nodes.

Both are rows ν·Σ_i w_i Δx_i + h ≥ 0 with a unit normal ν and weights on at most four nodes (a
node–obstacle contact has the single weight 1). :class:`ContactRows` holds them in that common
form so that the QP, the friction problem and the statistics treat them alike: the normal impulse
γ of a row acts as γ w_i ν on node i, a friction impulse F (in the tangent plane of ν) as w_i F,
and the slip of a row is the tangential part of Σ w_i (x_i − xⁿ_i) − Δt v_other, where v_other is
the velocity of the other side (obstacle surface or thin obstacle; 0 for cloth–cloth, whose other
side is in the weights). The positive weights sum to 1 (node side), so γ is the normal impulse
on either side and the Coulomb bound of the row is μγ.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import scipy.sparse as sp

from isocloth.contact.contacts import detect_contacts, detect_midpoint_contacts, tangent_basis
from isocloth.contact.self_collision import KIND_STRETCH_LIMIT, CollisionRows, decode_keys

__all__ = ["ContactRows", "inequality_rows", "stretch_limit_rows", "stretch_rows_of", "STRETCH_BAND"]

STRETCH_BAND = 0.5
"""A stretch limit enters a QP once its edge's strain exceeds (1 − STRETCH_BAND)·ε̄."""


@dataclass
class ContactRows:
    """Stacked inequality rows at one iterate (module docstring).

    Attributes
    ----------
    keys : (c,) int64, stable row identifiers (contacts ≥ 0, collision rows < 0)
    nodes : (c, s) int64, cloth node of each weight slot (−1: unused); s = 4 on the nodes
        themselves, wider for rows on a surface that is a linear map of the nodes (:meth:`on_nodes`)
    weights : (c, s) float64, signed weights w
    normal : (c, 3) float64, unit normals ν
    gap : (c,) float64 [m], H at the iterate (≥ 0 feasible)
    mu : (c,) float64, friction coefficient
    velocity : (c, 3) float64 [m/s], velocity of the other side of the row (obstacle surface or
        thin obstacle, weighted), subtracted from Σ w_i ẋ_i for the relative slip
    self_count : int, the last ``self_count`` rows are collision rows (the first ones contacts)
    """

    keys: np.ndarray
    nodes: np.ndarray
    weights: np.ndarray
    normal: np.ndarray
    gap: np.ndarray
    mu: np.ndarray
    velocity: np.ndarray
    self_count: int = 0

    @property
    def count(self) -> int:
        return int(self.keys.size)

    @classmethod
    def build(cls, contacts, collisions=None, x: np.ndarray | None = None) -> "ContactRows":
        """Rows of node–obstacle ``contacts`` followed by ``collisions`` (CollisionRows, gaps
        evaluated at the iterate x (n, 3))."""
        c = contacts.count
        nodes = np.full((c, 4), -1, dtype=np.int64)
        nodes[:, 0] = contacts.nodes
        weights = np.zeros((c, 4))
        weights[:, 0] = 1.0
        parts = [(contacts.keys(), nodes, weights, contacts.normal, contacts.gap, contacts.mu,
                  contacts.surface_velocity)]
        k = 0
        if collisions is not None and collisions.count:
            k = collisions.count
            cn = np.where(collisions.nodes >= 0, collisions.nodes, -1)
            cw = np.where(collisions.nodes >= 0, collisions.weights, 0.0)
            parts.append((collisions.keys(), cn, cw, collisions.normal, collisions.values(x), collisions.mu,
                          -collisions.obstacle_velocity))
        cols = list(zip(*parts))
        return cls(*(np.concatenate(col) if len(col) > 1 else col[0] for col in cols), self_count=k)

    def on_nodes(self, surface_map: sp.csr_matrix) -> "ContactRows":
        """The same rows with their weights moved from surface vertices to the nodes that define them:
        ``surface_map`` G (n_v, n) csr gives vertex v as Σ_j G_vj x_j, so the row ν·Σ_i w_i x_{v_i}
        becomes ν·Σ_j (Σ_i w_i G_{v_i j}) x_j. The slots widen to the largest support; unused slots
        are −1 with weight 0."""
        c = self.count
        used = self.nodes >= 0
        r, s = np.nonzero(used)
        W = sp.csr_matrix((self.weights[r, s], (r, self.nodes[r, s])), shape=(c, surface_map.shape[0]))
        N = (W @ surface_map).tocsr()
        N.eliminate_zeros()
        per_row = np.diff(N.indptr)
        width = max(int(per_row.max(initial=0)), 1)
        nodes = np.full((c, width), -1, dtype=np.int64)
        weights = np.zeros((c, width))
        row = np.repeat(np.arange(c), per_row)
        slot = np.arange(N.nnz) - np.repeat(N.indptr[:-1], per_row)
        nodes[row, slot] = N.indices
        weights[row, slot] = N.data
        return ContactRows(self.keys, nodes, weights, self.normal, self.gap, self.mu, self.velocity,
                           self_count=self.self_count)

    @property
    def contact_count(self) -> int:
        """Number of node–obstacle rows (the first rows)."""
        return self.count - self.self_count

    def take(self, index) -> "ContactRows":
        idx = np.asarray(index)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        sub = {f.name: getattr(self, f.name)[idx] for f in fields(self) if f.name != "self_count"}
        return ContactRows(**sub, self_count=int(np.count_nonzero(idx >= self.contact_count)))

    # -- rows of the QP ------------------------------------------------------------------------------
    def _entries(self, vectors: np.ndarray, rows: np.ndarray, node_count: int) -> sp.csr_matrix:
        """CSR matrix with one row per (row r, vector v) of vectors (k, m, 3): entries w_i v at the
        three coordinates of each used node of ``rows[k]``; columns ascending within a row."""
        k, m = vectors.shape[0], vectors.shape[1]
        nd = self.nodes[rows]
        wt = self.weights[rows]
        if k == 0:
            return sp.csr_matrix((0, 3 * node_count))
        if np.all(nd[:, 1:] < 0):  # node–obstacle rows only: one node per row (fast path)
            cols = np.repeat(3 * nd[:, :1] + np.arange(3)[None, :], m, axis=0).ravel()
            vals = (wt[:, 0, None, None] * vectors).reshape(-1)
            indptr = np.arange(0, 3 * k * m + 1, 3)
            return sp.csr_matrix((vals, cols, indptr), shape=(k * m, 3 * node_count))
        used = (nd >= 0) & (wt != 0.0)
        order = np.argsort(np.where(used, nd, np.iinfo(np.int64).max), axis=1, kind="stable")
        nd = np.take_along_axis(nd, order, axis=1)
        wt = np.take_along_axis(wt, order, axis=1)
        used = np.take_along_axis(used, order, axis=1)
        cnt = used.sum(axis=1)
        r_i, s_i = np.nonzero(used)  # grouped by row, slots by ascending node
        u = r_i.size
        if m == 1:
            R, S, J = r_i, s_i, np.zeros(u, dtype=np.int64)
        else:  # matrix row (r, j): the slots of row r for vector j
            R, S = np.tile(r_i, m), np.tile(s_i, m)
            J = np.repeat(np.arange(m), u)
            o = np.lexsort((np.tile(np.arange(u), m), J, R))
            R, S, J = R[o], S[o], J[o]
        cols = (3 * nd[R, S][:, None] + np.arange(3)[None, :]).ravel()
        vals = (wt[R, S][:, None] * vectors[R, J, :]).ravel()
        indptr = np.concatenate([[0], np.cumsum(np.repeat(3 * cnt, m))])
        return sp.csr_matrix((vals, cols, indptr), shape=(k * m, 3 * node_count))

    def jacobian(self, node_count: int) -> sp.csr_matrix:
        """∇H (c, 3n) sparse: row r holds w_i ν_r at the coordinates of node i."""
        return self._entries(self.normal[:, None, :], np.arange(self.count), node_count)

    def tangent_basis(self) -> np.ndarray:
        """(c, 2, 3) float64 orthonormal tangents (t1, t2), t1 × t2 = ν; t1 is ν crossed with the
        coordinate axis least aligned with it (as :meth:`Contacts.tangent_basis`)."""
        return tangent_basis(self.normal)

    def tangent_jacobian(self, node_count: int, rows, basis) -> sp.csr_matrix:
        """Tangential rows (2k, 3n): rows 2r, 2r+1 map Δφ to the slip of ``rows[r]`` along t1, t2."""
        rows = np.asarray(rows, dtype=np.int64)
        return self._entries(basis[rows], rows, node_count)

    def slip(self, x: np.ndarray, x_prev: np.ndarray, dt: float, rows, basis) -> np.ndarray:
        """(k, 2) float64 [m]: tangential relative displacement Σ w_i (x_i − xⁿ_i) − Δt v_other of
        ``rows`` over the step, in the tangent basis (seed 000 §6.2 relative velocity times Δt)."""
        rows = np.asarray(rows, dtype=np.int64)
        d = self.displacement(x, x_prev, rows) - dt * self.velocity[rows]
        return np.einsum("kij,kj->ki", basis[rows], d)

    def displacement(self, x: np.ndarray, x_prev: np.ndarray, rows) -> np.ndarray:
        """(k, 3) float64 [m]: Σ w_i (x_i − xⁿ_i) of ``rows``."""
        nd = self.nodes[rows]
        wt = self.weights[rows]
        if np.all(nd[:, 1:] < 0):
            return x[nd[:, 0]] - x_prev[nd[:, 0]] if nd.shape[0] else np.zeros((0, 3))
        idx = np.where(nd >= 0, nd, 0)
        w = np.where(nd >= 0, wt, 0.0)
        return np.einsum("ks,ksd->kd", w, x[idx] - x_prev[idx])

    def supports(self, rows) -> list[tuple[np.ndarray, np.ndarray]]:
        """(nodes, weights) of the used slots of each row in ``rows`` (for forces applied later)."""
        out = []
        for r in np.asarray(rows, dtype=np.int64):
            m = (self.nodes[r] >= 0) & (self.weights[r] != 0.0)
            out.append((self.nodes[r][m].copy(), self.weights[r][m].copy()))
        return out


def stretch_limit_rows(limits, x: np.ndarray, skip: np.ndarray | None = None) -> CollisionRows:
    """The element length limits near their bound at the iterate x (n, 3) [m], linearised
    (:mod:`isocloth.fem.stretch_limits`): for edge e = (a, b) with sign s (+1 upper, −1 lower
    bound b_e), weights (1, −1) on (a, b), normal −s·u with u = (p_a − p_b)/‖p_a − p_b‖ and offset
    s·b_e, so that the row's value at x is g_e = s (b_e − ‖p_a − p_b‖) ≥ 0 and its gradient that of
    g_e. μ = 0 (internal rows carry no friction); pair = (limit index, 0). Only limits within
    STRETCH_BAND·ε̄ of their bound (relative to L_e) and not in ``skip`` (limit indices, e.g. those
    already held as equality rows) are returned.
    """
    e = x[limits.pairs[:, 0]] - x[limits.pairs[:, 1]]
    length = np.linalg.norm(e, axis=1)
    sign = limits.sign.astype(np.float64)
    near = sign * (length - limits.bound) > -STRETCH_BAND * limits.limit * limits.rest_length
    if skip is not None and len(skip):
        near[np.asarray(skip, dtype=np.int64)] = False
    index = np.flatnonzero(near)
    k = index.size
    if k == 0:
        return CollisionRows.empty()
    nodes = np.full((k, 4), -1, dtype=np.int64)
    nodes[:, :2] = limits.pairs[index]
    weights = np.zeros((k, 4))
    weights[:, 0], weights[:, 1] = 1.0, -1.0
    s, b = sign[index], limits.bound[index]
    z = np.zeros(k)
    return CollisionRows(kind=np.full(k, KIND_STRETCH_LIMIT, dtype=np.int64),
                         pair=np.column_stack([index, np.zeros(k, dtype=np.int64)]), nodes=nodes, weights=weights,
                         normal=-s[:, None] * e[index] / length[index, None], thickness=z.copy(), offset=s * b,
                         mu=z.copy(), obstacle_velocity=np.zeros((k, 3)), time=np.full(k, np.nan),
                         gap=s * (b - length[index]))


def stretch_rows_of(rows: ContactRows) -> tuple[np.ndarray, np.ndarray]:
    """The stretch-limit rows among ``rows``: (mask (c,) bool, their limit indices (k,) int64)."""
    mask = np.zeros(rows.count, dtype=bool)
    neg = np.flatnonzero(rows.keys < 0)
    if neg.size == 0:
        return mask, np.zeros(0, dtype=np.int64)
    kind, a, _ = decode_keys(rows.keys[neg])
    hit = kind == KIND_STRETCH_LIMIT
    mask[neg[hit]] = True
    return mask, a[hit]


def inequality_rows(model, x: np.ndarray, t: float, margin: float, collisions: CollisionRows | None = None,
                    faces: np.ndarray | None = None, collision_jacobian: sp.csr_matrix | None = None,
                    held: np.ndarray | None = None, x_prev: np.ndarray | None = None, t_prev: float | None = None):
    """The inequality rows of a contact QP at the iterate x (thesis §3.4, Algorithm 2): node–obstacle
    contacts within ``margin`` (thesis §3.2), then the collision rows of the observation set
    (seed 000 eq. 5), when ``faces`` is given the face-midpoint contacts (thesis Remark 3.2.1), and
    the element stretch limits near their bound (``model.stretch_limits``, :func:`stretch_limit_rows`)
    except the ``held`` ones (limit indices, already equality rows).

    Detection runs on the cloth's surface (``model.surface_mesh`` at ``model.surface_positions``);
    for a model whose surface is a linear map of its nodes (``model.surface_map``, the ghost of the
    nonconforming model) the rows are returned on the nodes (:meth:`ContactRows.on_nodes`), while
    ``collisions``, ``faces`` and ``collision_jacobian`` stay on the surface's vertices.

    Parameters
    ----------
    model : ClothModel (obstacles, surface, inverse masses)
    x : (n, 3) float64 [m], the iterate (node positions)
    t : float [s], time of the obstacles' positions
    margin : float [m], contact detection margin
    collisions : CollisionRows of the observation set (frozen normals and weights), optional
    faces : (f, 3|4) int64 faces for the midpoint rows (``mesh_faces``), or None
    collision_jacobian : (s, 3n_v) csr of ``collisions`` from an earlier call with the same set, reused
        (the midpoint and stretch-limit rows change at every iterate; their Jacobian is rebuilt)
    held : (h,) int64, stretch limits left out (see above)
    x_prev, t_prev : (n, 3) float64 [m] and float [s], optional: the positions at the start of the
        step, for the continuous detection of nodes that passed through an obstacle
        (:func:`~isocloth.contact.contacts.detect_contacts`)

    Returns
    -------
    (ContactRows, A_I (m, 3n) csr, the Jacobian of the weighted rows to pass back next time or None)
    """
    G = model.surface_map  # the rows act on the cloth's surface (the ghost of the nonconforming model)
    if G is not None:
        x = model.surface_positions(x)
        x_prev = None if x_prev is None else model.surface_positions(x_prev)
    n = x.shape[0]
    free_mask = model.surface_free_mask
    contacts = detect_contacts(model.obstacles, x, t, margin, nodes=np.flatnonzero(free_mask), x_prev=x_prev,
                               t_prev=t_prev)
    observed = collisions if collisions is not None and collisions.count else None
    per_iterate = []  # rows rebuilt at every iterate (their Jacobian is too)
    if faces is not None:
        per_iterate.append(detect_midpoint_contacts(model.obstacles, x, t, margin, faces, free_mask))
    limits = getattr(model, "stretch_limits", None)
    if limits is not None:
        per_iterate.append(stretch_limit_rows(limits, x, held))
    per_iterate = [p for p in per_iterate if p.count]
    weighted = ([observed] if observed is not None else []) + per_iterate
    R = ContactRows.build(contacts, CollisionRows.concatenate(weighted) if weighted else None, x)
    blocks = [contacts.jacobian(n)] if contacts.count or not weighted else []
    if observed is not None:
        if collision_jacobian is None:
            collision_jacobian = observed.jacobian(n)
        blocks.append(collision_jacobian)
    else:
        collision_jacobian = None
    blocks += [p.jacobian(n) for p in per_iterate]
    A_I = blocks[0] if len(blocks) == 1 else sp.vstack(blocks, format="csr")
    if G is not None:
        R, A_I = R.on_nodes(G), (A_I @ model.surface_map_xyz).tocsr()
    return R, A_I, collision_jacobian
