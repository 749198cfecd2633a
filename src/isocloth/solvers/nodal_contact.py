"""The primal nodal frictional contact solver of Li et al. 2018 (§4) and its dual baseline.

One time step of a nodal system with contacts at mesh vertices is the discrete frictional contact
problem (Li eq. 5)

    A v + b = Jᵀ r,   u = J v + u_f,   (r_i, u_i) ∈ C_μi for every contact i,

A (3m, 3m) the symmetric positive definite matrix of the linearised implicit step, v (m, 3) the
end-of-step velocities, r the contact impulses and u the relative velocities in the contact frames
(law C_μ: :mod:`isocloth.solvers.coulomb_local`). With one contact per vertex the contact Jacobian
is part of a block-orthogonal matrix G (Li §4.2): G_ii = E_iᵀ, the contact frame's rows (normal
first), for a vertex touching a body; for two vertices j, k in contact with each other the
relative velocity Eᵀ(v_j − v_k)/√2 on j's row and on k's the unconstrained row that completes it to
an orthogonal block, −(v_j + v_k)/√2 (Li eq. 9 writes the mean Eᵀ(v_j + v_k)/√2; any completion
gives the same solution); the identity elsewhere. In the primal unknowns u = G v + u_f the problem reads

    r = Ŵ u + d̂,   Ŵ = G A Gᵀ,   d̂ = G b − Ŵ u_f   (Li eq. 8),

with Ŵ as sparse as A: the Delassus operator W = J A⁻¹ Jᵀ, dense, is never formed. It is solved by
block Gauss–Seidel over the vertices (Li Algorithm 1): each contact vertex solves its local problem
(Li eq. 11). Where Algorithm 1 also sweeps the free vertices one 3 × 3 block at a time, they form
one block here, solved exactly after every sweep over the contacts (a sparse LU of their rows of Ŵ,
once per step; the vertices whose row of G is the identity, i.e. in no contact and not the mean row
of a self-contact): on stiff cloth single-vertex sweeps carry the elastic coupling across the free
cloth one vertex per sweep, so their count grows with the stiffness over the mass, while the block
solve carries it in one (``free_block = "vertices"`` keeps Algorithm 1's sweeps, for comparison).
A contact vertex whose update changes u and r/w_i by less than
the tolerance sleeps for a few sweeps (the authors' code's criterion; Li §4.3), a local failure
halves the update, and the residual — the largest Fischer–Burmeister residual of the contacts and
‖r_i‖/w_i of the free vertices [m/s], w_i = tr(Ŵ_ii)/3 [kg] — is evaluated every ``eval_every`` sweeps;
the best iterate is kept. ‖r_i‖/w_i is about the velocity change block i's next update would make (a
Gauss–Seidel step measure), not a bound on the error of the velocities: w_i holds δt² K as well as
the mass, and on stiff cloth the error can be larger than the residual by up to w_i over the mass.
The contact's gap z_i at the start of the step and the thickness h enter u_f as (z_i − h)/δt on the
normal (Li §4.2), moving bodies as −v_body.

A vertex in p > 1 contacts (with bodies or, as either end, with other vertices) is duplicated (Li §6):
p blocks, one contact each, with Â_kl =
A_ij/(p_i p_j) between copies of different vertices, Â_kk = A_ii/p_i, b̃_k = b_i/p_i, so that equal
copies reproduce the vertex's row. The pin constraint that makes them equal enters as the term
G C Gᵀ r on the right (C removes each group's mean of the copies' world impulses; Li §6's choice
λ = −Gᵀ r), by operator splitting: refreshed for a group's copies whenever a block whose row of G
reaches one of them is updated. Where Li et al. lag the whole term by a sweep, a block's own share
of it, c_i r_i (c_i = ∂(G C Gᵀ r)_i/∂r_i, 1 − 1/p for a copy touching a body), is solved with the
block: its local problem becomes r_i = (Ŵ_ii u_i + d̄_i + pin_i − c_i r_i^old)/(1 − c_i), i.e. the copy
meets its contact with the whole vertex's inertia and the other copies' impulses held, as a vertex
solving its p contacts by Gauss–Seidel would; the fixed point is the same. The residual also
measures the spread of the copies' velocities, and a vertex's velocity is the mean of its copies'.

:func:`solve_dual` is the classical alternative the paper improves on: the Delassus operator
assembled with one sparse factorization of A and 3c solves, then Gauss–Seidel over the contacts on
u = W r + d, d = J v_free + u_f.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.sparse.linalg import splu

from isocloth.solvers.coulomb_local import contact_residual, local_dual, local_primal

__all__ = ["ContactSolution", "NodalContacts", "NodalProblem", "contact_frames", "delassus", "nodal_problem",
           "solve_dual", "solve_primal"]


@dataclass(frozen=True)
class NodalContacts:
    """Contacts at mesh vertices (Li §4.2). A vertex may carry several contacts, with bodies or with
    other vertices: it is then duplicated, one copy per contact, and the copies are pinned together
    (Li §6).

    A contact may also join points inside faces or edges (Li §5.2 moves them to the nearest vertex,
    after refining the mesh there): its relative velocity is Σ_a w_a v_a − v_body over the vertices
    (``node``, ``face``) with weights w (a point of a face or an edge touching a body: barycentric
    weights; a face and a vertex or two edges touching each other: the signed weights of the two
    sides). The contact's row of G is E ᵀ Σ_a ŵ_a v_a, ŵ = w/‖w‖, completed to an orthogonal block by
    unconstrained rows on the other vertices' copies (the k-vertex form of Li eq. 9's mean row), and
    its gap and body velocity enter u_f divided by ‖w‖.

    Attributes
    ----------
    node : (c,) int64, the vertex j in contact
    other : (c,) int64, the vertex k that j touches (self-contact), or −1 for a body
    normal : (c, 3) float64, unit normal from the body (or k) towards j
    gap : (c,) float64 [m], the distance z along the normal at the start of the step
    body_velocity : (c, 3) float64 [m/s], the body's velocity at the contact (zeros for self-contact)
    mu : (c,) float64, friction coefficients ≥ 0
    face : (c, 3) int64, further vertices of the contact (−1: none; only where ``other`` is −1)
    weights : (c, 4) float64, weights of (node, face[:, 0], face[:, 1], face[:, 2]): the node's > 0 (1 in a
        self-contact of two vertices), non-zero on each face vertex, 0 where ``face`` is −1
    """

    node: np.ndarray
    other: np.ndarray
    normal: np.ndarray
    gap: np.ndarray
    body_velocity: np.ndarray
    mu: np.ndarray
    face: np.ndarray
    weights: np.ndarray

    @classmethod
    def of(cls, node, normal, gap, mu, *, other=None, body_velocity=None, face=None, weights=None) -> "NodalContacts":
        """Validated contacts from array-likes (``other`` default: all bodies; ``body_velocity``
        default: resting bodies; a scalar ``mu`` applies to all; ``face``/``weights`` default: the
        contact at ``node`` itself).

        Raises
        ------
        ValueError
            If shapes disagree, a normal is not unit length, a value is not finite, μ < 0, a contact
            repeats a vertex, or the weights are not as described (``weights``).
        """
        node = np.asarray(node, dtype=np.int64).ravel()
        c = node.size
        other = np.full(c, -1, dtype=np.int64) if other is None else np.asarray(other, dtype=np.int64).ravel()
        normal = np.asarray(normal, dtype=np.float64).reshape(-1, 3) if c else np.zeros((0, 3))
        gap = np.broadcast_to(np.asarray(gap, dtype=np.float64), (c,)).copy()
        mu = np.broadcast_to(np.asarray(mu, dtype=np.float64), (c,)).copy()
        vel = np.zeros((c, 3)) if body_velocity is None else np.asarray(body_velocity, dtype=np.float64).reshape(-1, 3)
        if other.size != c or normal.shape[0] != c or vel.shape[0] != c:
            raise ValueError(f"contacts disagree in number: {c} nodes, {other.size} others, {normal.shape[0]} normals, "
                             f"{vel.shape[0]} body velocities")
        if not all(np.isfinite(a).all() for a in (normal, gap, mu, vel)):
            raise ValueError("contact normals, gaps, friction coefficients and body velocities must be finite")
        if c and np.abs(np.linalg.norm(normal, axis=1) - 1.0).max() > 1e-9:
            raise ValueError("contact normals must be unit vectors")
        if (mu < 0).any():
            raise ValueError(f"friction coefficients must be ≥ 0, got {mu.min()}")
        if (node == other).any():
            raise ValueError("a self-contact pairs a vertex with itself")
        face = np.full((c, 3), -1, dtype=np.int64) if face is None else np.asarray(face, dtype=np.int64).reshape(-1, 3)
        if weights is None:
            weights = np.zeros((c, 4))
            weights[:, 0] = 1.0
        weights = np.asarray(weights, dtype=np.float64).reshape(-1, 4)
        if face.shape[0] != c or weights.shape[0] != c:
            raise ValueError(f"contacts disagree in number: {c} nodes, {face.shape[0]} faces, {weights.shape[0]} weights")
        on = face >= 0
        if (not np.isfinite(weights).all() or (weights[:, 0] <= 0).any() or (weights[:, 1:][~on] != 0).any()
                or (weights[:, 1:][on] == 0).any() or (weights[other >= 0, 0] != 1.0).any()):
            raise ValueError("contact weights must be finite, the node's > 0 (1 in a self-contact of two vertices), "
                             "non-zero on each face vertex and 0 where there is none")
        if (on.any(axis=1) & (other >= 0)).any():
            raise ValueError("a self-contact of two vertices (other) has no face vertices")
        ends = np.where(np.column_stack([np.ones(c, bool), on]), np.column_stack([node, face]), -1 - np.arange(4))
        if c and (np.diff(np.sort(ends, axis=1), axis=1) == 0).any():
            raise ValueError("a contact repeats a vertex")
        return cls(node, other, normal, gap, vel, mu, face, weights)

    @classmethod
    def empty(cls) -> "NodalContacts":
        """No contact."""
        return cls.of([], np.zeros((0, 3)), [], [])


def contact_frames(normals) -> np.ndarray:
    """Orthonormal contact frames (c, 3, 3) float64, rows (n, t1, t2) = Eᵀ: t1 = n × a normalised,
    a the coordinate axis least aligned with n, t2 = n × t1 (right-handed).

    Raises
    ------
    ValueError
        If normals is not (c, 3).
    """
    n = np.asarray(normals, dtype=np.float64)
    if n.ndim != 2 or n.shape[1] != 3:
        raise ValueError(f"normals must be (c, 3), got {n.shape}")
    axis = np.zeros_like(n)
    axis[np.arange(n.shape[0]), np.argmin(np.abs(n), axis=1)] = 1.0
    t1 = np.cross(n, axis)
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    return np.stack([n, t1, np.cross(n, t1)], axis=1)


@dataclass
class NodalProblem:
    """The primal problem r = Ŵ u + d̂ (Li eq. 8) of one step, with what the dual baseline needs.

    Attributes
    ----------
    A : (3m, 3m) sparse csr, b : (3m,) — the implicit step A v + b = Jᵀ r
    G : (3m, 3m) sparse csr, block orthogonal
    W_indptr, W_indices, W_blocks : Ŵ = G A Gᵀ in block-sparse rows (3 × 3 blocks)
    d : (m̃, 3) d̂ [N s]; u_f : (m̃, 3) [m/s]
    mu : (m̃,) friction coefficient of each block's contact, −1 for unconstrained blocks
    contact_block : (c,) block of each contact
    frames : (c, 3, 3) contact frames Eᵀ
    owner : (m̃,) vertex of each block (m̃ ≥ m: a vertex in p > 1 contacts has p blocks, Li §6)
    group : (m̃,) pin group of each block (−1: the vertex is not duplicated)
    contacts : the :class:`NodalContacts`
    """

    A: sp.csr_matrix
    b: np.ndarray
    G: sp.csr_matrix
    W_indptr: np.ndarray
    W_indices: np.ndarray
    W_blocks: np.ndarray
    d: np.ndarray
    u_f: np.ndarray
    mu: np.ndarray
    contact_block: np.ndarray
    frames: np.ndarray
    owner: np.ndarray
    group: np.ndarray
    contacts: NodalContacts

    @property
    def blocks(self) -> int:
        """m̃, blocks of the (duplicated) system."""
        return self.d.shape[0]

    @property
    def vertices(self) -> int:
        return self.A.shape[0] // 3

    def contact_jacobian(self) -> sp.csr_matrix:
        """J (3c, 3m) of u = J v + u_f on the vertices: E_iᵀ on the contact's vertex for a body, the
        1/√2 [E_iᵀ, −E_iᵀ] of Li eq. 9 on (j, k) for a self-contact, ŵ_a E_iᵀ on each vertex a of a
        contact with face vertices."""
        c = self.contacts
        rows, cols, vals = [], [], []
        for i in range(c.node.size):
            verts, w = _contact_ends(c, i)
            for a in range(verts.size):
                rows.append(i)
                cols.append(int(verts[a]))
                vals.append(w[a] * self.frames[i])
        return _block_matrix(rows, cols, vals, max(c.node.size, 1), self.vertices)[:3 * c.node.size]

    def gap_scale(self) -> np.ndarray:
        """(c,) ‖w‖ of each contact (√2 for a self-contact of two vertices): dt u_N ‖w‖ is its gap at the end
        of the step less the thickness."""
        return _weight_norms(self.contacts)

    def vertex_velocities(self, v_blocks: np.ndarray) -> np.ndarray:
        """(m, 3): the mean of each vertex's copies of (m̃, 3) block velocities."""
        out = np.zeros((self.vertices, 3))
        np.add.at(out, self.owner, v_blocks)
        return out / np.bincount(self.owner, minlength=self.vertices)[:, None]


def nodal_problem(A, b, contacts: NodalContacts, *, dt: float, thickness: float) -> NodalProblem:
    """Assemble Li eq. 8 (and eq. 9 for self-contacts, its k-vertex form for contacts with face vertices,
    :class:`NodalContacts`) for one step.

    Parameters
    ----------
    A : (3m, 3m) sparse or dense float64, symmetric positive definite [kg]
    b : (3m,) float64 [N s], so that A v + b = 0 without contact
    contacts : :class:`NodalContacts`
    dt : time step [s] > 0; thickness : contact thickness h [m] ≥ 0

    Raises
    ------
    ValueError
        If the shapes disagree, dt ≤ 0, thickness < 0, or a contact vertex is out of range.
    """
    A = sp.csr_matrix(A, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64).ravel()
    n3 = A.shape[0]
    if A.shape != (n3, n3) or n3 % 3 or b.size != n3 or not np.isfinite(b).all():
        raise ValueError(f"A must be (3m, 3m) and b a finite (3m,) vector, got {A.shape} and {b.shape}")
    if not dt > 0 or not thickness >= 0 or not math.isfinite(dt) or not math.isfinite(thickness):
        raise ValueError(f"need dt > 0 and thickness ≥ 0, got dt={dt}, thickness={thickness}")
    m = n3 // 3
    c = contacts.node.size
    if c and (max(contacts.node.max(), contacts.other.max(), contacts.face.max()) >= m or contacts.node.min() < 0):
        raise ValueError(f"contact vertices must be below {m}")
    E = contact_frames(contacts.normal)
    body = contacts.other < 0
    # Li §6: a vertex with p > 1 contact ends (as node, other or face vertex) becomes p blocks (copies), one
    # contact each
    on_face = contacts.face >= 0
    face_contact, face_slot = np.nonzero(on_face)
    ends = np.concatenate([contacts.node, contacts.other[~body], contacts.face[on_face]])
    p = np.maximum(np.bincount(ends, minlength=m), 1)
    first = np.concatenate([[0], np.cumsum(p)[:-1]])
    owner = np.repeat(np.arange(m), p)
    mt = int(p.sum())
    seen = np.zeros(m, dtype=np.int64)
    copy = np.empty(ends.size, dtype=np.int64)
    for q, v in enumerate(ends):
        copy[q] = first[v] + seen[v]
        seen[v] += 1
    contact_block = copy[:c]
    other_block = np.full(c, -1, dtype=np.int64)
    nself = int(np.count_nonzero(~body))
    other_block[~body] = copy[c:c + nself]
    face_block = np.full((c, 3), -1, dtype=np.int64)
    face_block[face_contact, face_slot] = copy[c + nself:]
    group = np.where(p[owner] > 1, owner, -1)
    A_dup, b_dup = _duplicated(A, b, p, owner) if mt > m else (A, b)
    blocks = np.repeat(np.eye(3)[None], mt, axis=0)
    rows, cols, vals = [], [], []
    u_f = np.zeros((mt, 3))
    mu = np.full(mt, -1.0)
    mu[contact_block] = contacts.mu
    approach = (contacts.gap - thickness) / dt
    norm = _weight_norms(contacts)
    for i in range(c):
        # Li eq. 9 in its k-vertex form: the contact's row Eᵀ Σ ŵ_a v_a on its node's copy, the other vertices'
        # copies the rows completing it to an orthogonal block (for a self-contact of two vertices, ± the mean)
        j = int(contact_block[i])
        others = [other_block[i]] if contacts.other[i] >= 0 else face_block[i][on_face[i]]
        cb = np.concatenate([[j], others]).astype(np.int64)
        Q = _orthogonal_completion(_contact_ends(contacts, i)[1])
        for a in range(cb.size):
            blocks[cb[a]] = 0.0
            for b_ in range(cb.size):
                rows.append(int(cb[a]))
                cols.append(int(cb[b_]))
                vals.append(Q[a, b_] * (E[i] if a == 0 else np.eye(3)))
        u_f[j] = -E[i] @ contacts.body_velocity[i] / norm[i]
        u_f[j, 0] += approach[i] / norm[i]
    plain = np.flatnonzero(np.abs(blocks).sum(axis=(1, 2)) > 0)
    rows.extend(plain.tolist())
    cols.extend(plain.tolist())
    vals.extend(blocks[plain])
    G = _block_matrix(rows, cols, vals, mt)
    W = sp.bsr_matrix(G @ A_dup @ G.T, blocksize=(3, 3))
    W.sort_indices()
    d = (G @ b_dup - W @ u_f.ravel()).reshape(mt, 3)
    return NodalProblem(A, b, G, W.indptr.astype(np.int64), W.indices.astype(np.int64), np.ascontiguousarray(W.data),
                        d, u_f, mu, contact_block, E, owner, group, contacts)


def _weight_norms(contacts: NodalContacts) -> np.ndarray:
    """(c,) ‖w‖ of each contact's weights: √2 for a self-contact of two vertices (Li eq. 9), w_j at a lone node."""
    return np.where(contacts.other >= 0, math.sqrt(2.0), np.linalg.norm(contacts.weights, axis=1))


def _contact_ends(contacts: NodalContacts, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (k,) and normalised weights ŵ (k,) of contact i's row of J (Li eq. 9 for a self-contact)."""
    if contacts.other[i] >= 0:
        h = 1.0 / math.sqrt(2.0)
        return np.array([contacts.node[i], contacts.other[i]]), np.array([h, -h])
    on = np.concatenate([[True], contacts.face[i] >= 0])
    w = contacts.weights[i][on]
    return np.concatenate([[contacts.node[i]], contacts.face[i][on[1:]]]), w / np.linalg.norm(w)


def _orthogonal_completion(w: np.ndarray) -> np.ndarray:
    """Symmetric orthogonal (k, k) Householder reflection Q with first row the unit vector w."""
    e = np.zeros_like(w)
    e[0] = 1.0
    u = w - e
    uu = float(u @ u)
    if uu < 1e-30:
        return np.eye(w.size)
    return np.eye(w.size) - 2.0 * np.outer(u, u) / uu


def _duplicated(A: sp.csr_matrix, b: np.ndarray, p: np.ndarray, owner: np.ndarray):
    """Â, b̃ of Li §6 for vertices with p copies: Â_kl = A_ij/(p_i p_j) between copies of different
    vertices i ≠ j, Â_kk = A_ii/p_i, 0 between two copies of one vertex; b̃_k = b_i/p_i. With every
    vertex's copies equal, each copy's row is its vertex's row of A v + b divided by p."""
    m = p.size
    X = sp.kron(sp.csr_matrix((np.ones(owner.size), (np.arange(owner.size), owner)), shape=(owner.size, m)),
                sp.identity(3), format="csr")
    S = sp.diags(np.repeat(1.0 / p[owner], 3))
    Ab = sp.bsr_matrix(A, blocksize=(3, 3))
    Ab.sort_indices()
    A_ii = Ab.data[_diagonal_positions(Ab.indptr, Ab.indices, "A")]  # the vertices' diagonal blocks
    diag = sp.block_diag(list(A_ii), format="csr")
    off = (A - diag).tocsr()
    own = sp.block_diag(list(A_ii[owner] / p[owner][:, None, None]), format="csr")
    return (S @ X @ off @ X.T @ S + own).tocsr(), S @ (X @ b)


def _block_matrix(rows, cols, vals, m, n=None) -> sp.csr_matrix:
    """(3m, 3n) csr (n = m by default) of 3 × 3 blocks vals at block positions (rows, cols)."""
    R = np.asarray(rows)[:, None, None] * 3 + np.arange(3)[None, :, None]
    C = np.asarray(cols)[:, None, None] * 3 + np.arange(3)[None, None, :]
    V = np.asarray(vals, dtype=np.float64).reshape(-1, 3, 3)
    R, C = np.broadcast_arrays(R, C)
    return sp.csr_matrix((V.ravel(), (R.ravel(), C.ravel())), shape=(3 * m, 3 * (m if n is None else n)))


@dataclass
class ContactSolution:
    """The solution of one step's frictional contact problem.

    Attributes
    ----------
    v : (m, 3) float64 [m/s], end-of-step velocities
    r : (c, 3) float64 [N s], contact impulses in the contact frames (normal first)
    u : (c, 3) float64 [m/s], relative velocities in the contact frames (u_f included)
    sweeps : Gauss–Seidel sweeps done; residual : [m/s] (module docstring); converged : residual ≤ tolerance
    seconds : wall time of the solve
    """

    v: np.ndarray
    r: np.ndarray
    u: np.ndarray
    sweeps: int
    residual: float
    converged: bool
    seconds: float


@njit(cache=True)
def _row_product(indptr, indices, blocks, u, i, skip_diag, out):
    """out ← Σ_j W_ij u_j over block row i (without j = i when skip_diag); returns the diagonal block's position."""
    out[:] = 0.0
    diag = -1
    for p in range(indptr[i], indptr[i + 1]):
        j = indices[p]
        if j == i:
            diag = p
            if skip_diag:
                continue
        B = blocks[p]
        for a in range(3):
            out[a] += B[a, 0] * u[j, 0] + B[a, 1] * u[j, 1] + B[a, 2] * u[j, 2]
    return diag


@njit(cache=True)
def _free_block_solve(indptr, indices, blocks, d, u, free, lu, rhs):
    """u of the free block ← its exact solution given the other blocks: Ŵ_FF u_F = −(d̂_F + Ŵ_F· u_·),
    with Pr Ŵ_FF Pc = L U (``lu``: SuperLU's factors in CSC arrays and its permutations)."""
    Lp, Li, Lx, Up, Ui, Ux, perm_r, perm_c, slot = lu
    n = 3 * free.size
    for q in range(free.size):
        i = free[q]
        acc0, acc1, acc2 = d[i, 0], d[i, 1], d[i, 2]
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if slot[j] >= 0:  # a free block: on the left-hand side
                continue
            B = blocks[p]
            acc0 += B[0, 0] * u[j, 0] + B[0, 1] * u[j, 1] + B[0, 2] * u[j, 2]
            acc1 += B[1, 0] * u[j, 0] + B[1, 1] * u[j, 1] + B[1, 2] * u[j, 2]
            acc2 += B[2, 0] * u[j, 0] + B[2, 1] * u[j, 1] + B[2, 2] * u[j, 2]
        rhs[perm_r[3 * q]] = -acc0
        rhs[perm_r[3 * q + 1]] = -acc1
        rhs[perm_r[3 * q + 2]] = -acc2
    for c in range(n):  # L z = Pr b, L unit lower triangular (CSC)
        zc = rhs[c]
        for p in range(Lp[c], Lp[c + 1]):
            row = Li[p]
            if row > c:
                rhs[row] -= Lx[p] * zc
    for c in range(n - 1, -1, -1):  # U y = z (CSC, diagonal stored)
        diag = 0.0
        for p in range(Up[c], Up[c + 1]):
            if Ui[p] == c:
                diag = Ux[p]
        rhs[c] /= diag
        yc = rhs[c]
        for p in range(Up[c], Up[c + 1]):
            row = Ui[p]
            if row < c:
                rhs[row] -= Ux[p] * yc
    for q in range(free.size):  # x = Pc y
        i = free[q]
        for a in range(3):
            u[i, a] = rhs[perm_c[3 * q + a]]


@njit(cache=True)
def _block_residual(r, u, mu, w):
    """[m/s] of one block: ‖f(û, r̂/w)‖ for a contact, ‖r‖/w for a free block."""
    if mu < 0.0:
        return math.sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]) / w
    return contact_residual(r, u, mu, w)


@njit(cache=True)
def _bsr_apply(indptr, indices, blocks, x, out):
    """out ← B x for a block-sparse B (3 × 3 blocks) and x (n, 3)."""
    for i in range(indptr.size - 1):
        out[i] = 0.0
        for q in range(indptr[i], indptr[i + 1]):
            out[i] += blocks[q] @ x[indices[q]]


@njit(cache=True)
def _group_spread(group, x, out):
    """out ← x − (its pin group's mean) on the duplicated blocks, 0 elsewhere (the operator C of Li §6)."""
    m = group.size
    ngroups = group.max() + 1
    total = np.zeros((max(ngroups, 1), 3))
    count = np.zeros(max(ngroups, 1))
    for k in range(m):
        if group[k] >= 0:
            total[group[k]] += x[k]
            count[group[k]] += 1.0
    for k in range(m):
        if group[k] >= 0:
            out[k] = x[k] - total[group[k]] / count[group[k]]
        else:
            out[k] = 0.0


@njit(cache=True)
def _update_group(g, members_ptr, members, G, GT, r, spread, pin):
    """After a copy of pin group g changed: its copies' world impulses Gᵀ r less their mean into spread, and
    the pin term G·spread of every block whose row of G touches the group (Gauss–Seidel form of Li §6)."""
    lo, hi = members_ptr[g], members_ptr[g + 1]
    mean = np.zeros(3)
    for q in range(lo, hi):
        k = members[q]
        spread[k] = 0.0
        for e in range(GT[0][k], GT[0][k + 1]):
            spread[k] += GT[2][e] @ r[GT[1][e]]
        mean += spread[k]
    mean /= hi - lo
    for q in range(lo, hi):
        spread[members[q]] -= mean
    for q in range(lo, hi):
        k = members[q]
        for e in range(GT[0][k], GT[0][k + 1]):  # rows of G with a block in column k
            row = GT[1][e]
            pin[row] = 0.0
            for f in range(G[0][row], G[0][row + 1]):
                pin[row] += G[2][f] @ spread[G[1][f]]


@njit(cache=True)
def _primal_residual(indptr, indices, blocks, d, pin, mu, w, u, u_f, group, GT):
    """The residual [m/s]: each block's (module docstring), and the spread of each pin group's copies'
    velocities Gᵀ(u − u_f)."""
    m = d.shape[0]
    r = np.empty(3)
    worst = 0.0
    for i in range(m):
        _row_product(indptr, indices, blocks, u, i, False, r)
        r += d[i] + pin[i]
        e = _block_residual(r, u[i], mu[i], w[i])
        if e > worst or e != e:
            worst = e
    if group.max() >= 0:
        v = np.empty_like(u)
        _bsr_apply(GT[0], GT[1], GT[2], u - u_f, v)
        spread = np.empty_like(u)
        _group_spread(group, v, spread)
        for i in range(m):
            e = math.sqrt(spread[i, 0] ** 2 + spread[i, 1] ** 2 + spread[i, 2] ** 2)
            if e > worst or e != e:
                worst = e
    return worst


@njit(cache=True)
def _primal_gauss_seidel(indptr, indices, blocks, d, mu, w, u, u_f, group, G, GT, pin, own, tol, max_sweeps,
                         eval_every, n_skip, free, lu):
    """Li Algorithm 1 on r = Ŵ u + d̂ + G C Gᵀ r (the pin term of Li §6, in pin (m, 3), refreshed for the pin
    groups a block's row of G reaches whenever the block changes, its own share ``own`` c_i r_i solved with
    the block; module docstring), the blocks ``free`` solved together after each sweep
    (:func:`_free_block_solve`); u (m, 3) updated in place (the best iterate on return). Returns
    (sweeps, residual)."""
    m = d.shape[0]
    diag = np.empty(m, dtype=np.int64)
    inv = np.empty((m, 3, 3))
    dbar = np.empty(3)
    for i in range(m):
        diag[i] = _row_product(indptr, indices, blocks, u, i, True, dbar)
        inv[i] = np.linalg.inv(blocks[diag[i]])
    ngroups = group.max() + 1
    members = np.argsort(group, kind="mergesort")[np.sum(group < 0):]
    members_ptr = np.zeros(ngroups + 1, dtype=np.int64)
    for g in group:
        if g >= 0:
            members_ptr[g + 1] += 1
    members_ptr = np.cumsum(members_ptr)
    spread = np.zeros((m, 3))
    r = np.zeros((m, 3))
    skip = np.zeros(m, dtype=np.int64)
    best = u.copy()
    best_pin = pin.copy()
    best_res = math.inf
    unew = np.empty(3)
    slot = lu[8]
    rhs = np.empty(3 * free.size)
    sweeps = 0
    for k in range(1, max_sweeps + 1):
        sweeps = k
        for i in range(m):
            if slot[i] >= 0:
                continue
            if skip[i] > 0:
                skip[i] -= 1
                continue
            _row_product(indptr, indices, blocks, u, i, True, dbar)
            dbar += d[i] + pin[i]
            Wii = blocks[diag[i]]
            wi = w[i]
            if own[i] > 0.0:  # the pin term's own share c r_i solved with the block:
                # r = (Ŵ_ii u + d̄ − c r_old)/(1 − c)
                dbar -= own[i] * r[i]
                dbar /= 1.0 - own[i]
                Wii = Wii / (1.0 - own[i])
                wi = wi / (1.0 - own[i])
            if mu[i] < 0.0:
                unew[:] = -(1.0 - own[i]) * (inv[i] @ dbar)
            else:
                unew[:] = u[i]
                scale = 1.0 + math.sqrt(dbar[0] ** 2 + dbar[1] ** 2 + dbar[2] ** 2) / wi
                _, ok = local_primal(Wii, dbar, mu[i], wi, unew, scale, 50)
                if not ok:  # Li Algorithm 1: dampen a failed local solve
                    unew[:] = 0.5 * (unew + u[i])
            rnew = Wii @ unew + dbar
            change = math.sqrt(((unew - u[i]) ** 2).sum()) + math.sqrt(((rnew - r[i]) ** 2).sum()) / w[i]
            u[i] = unew
            r[i] = rnew
            if change < tol:
                skip[i] = n_skip
            for e in range(G[0][i], G[0][i + 1]):  # the pin groups this block's row of G reaches
                g = group[G[1][e]]
                if g >= 0:
                    _update_group(g, members_ptr, members, G, GT, r, spread, pin)
                    if change >= tol:  # the group's pin terms moved: its copies solve again
                        for q in range(members_ptr[g], members_ptr[g + 1]):
                            skip[members[q]] = 0
        if free.size:
            _free_block_solve(indptr, indices, blocks, d, u, free, lu, rhs)
        if k % eval_every == 0 or k == max_sweeps:
            res = _primal_residual(indptr, indices, blocks, d, pin, mu, w, u, u_f, group, GT)
            if res < best_res:
                best_res = res
                best[:] = u
                best_pin[:] = pin
            if res <= tol:
                break
            skip[:] = 0  # not converged: wake every vertex
    u[:] = best
    pin[:] = best_pin
    return sweeps, best_res


def _free_velocity(problem: NodalProblem) -> np.ndarray:
    from isocloth.solvers.linalg import spd_factor

    return spd_factor(problem.A).solve(-problem.b)


def _mass_scale(problem: NodalProblem) -> np.ndarray:
    diag = problem.W_blocks[_diagonal_positions(problem.W_indptr, problem.W_indices, "Ŵ")]
    return np.trace(diag, axis1=1, axis2=2) / 3.0


def _diagonal_positions(indptr: np.ndarray, indices: np.ndarray, name: str) -> np.ndarray:
    """Positions (m,) of the diagonal blocks in the data of block-sparse rows with sorted indices.

    Raises
    ------
    ValueError
        If a diagonal block is missing (the matrix ``name`` is then not positive definite).
    """
    m = indptr.size - 1
    rows = np.repeat(np.arange(m), np.diff(indptr))
    pos = np.flatnonzero(rows == indices)
    if pos.size != m:
        raise ValueError(f"{name} has a zero diagonal block: A is not positive definite")
    return pos


def solve_primal(problem: NodalProblem, *, tolerance: float = 1e-8, max_sweeps: int = 2000,
                 eval_every: int = 25, warm_start=None, free_block: str = "exact") -> ContactSolution:
    """Li et al. 2018 Algorithm 1: block Gauss–Seidel over the vertices on r = Ŵ u + d̂.

    Parameters
    ----------
    problem : :func:`nodal_problem`
    tolerance : [m/s], on the residual of the module docstring (Li §7: 1e-8)
    max_sweeps : sweep cap (Li §7: 2000); eval_every : sweeps between residual evaluations
    warm_start : (m, 3) float64 [m/s] initial velocities (default: the contact-free solution −A⁻¹b)
    free_block : "exact" (the vertices without contact solved together after each sweep, module
        docstring) or "vertices" (Algorithm 1 as published: one 3 × 3 block per vertex)

    Returns
    -------
    :class:`ContactSolution`

    Raises
    ------
    ValueError
        If tolerance ≤ 0, max_sweeps or eval_every < 1, warm_start has the wrong shape or free_block is
        neither "exact" nor "vertices".
    """
    _check(tolerance, max_sweeps, eval_every)
    if free_block not in ("exact", "vertices"):
        raise ValueError(f"free_block must be 'exact' or 'vertices', got {free_block!r}")
    t0 = time.perf_counter()
    m, nv = problem.blocks, problem.vertices
    v0 = _free_velocity(problem) if warm_start is None else np.asarray(warm_start, dtype=np.float64).ravel()
    if v0.size != 3 * nv or not np.isfinite(v0).all():
        raise ValueError(f"warm_start must be a finite ({nv}, 3) array, got shape {np.shape(warm_start)}")
    u = (problem.G @ v0.reshape(nv, 3)[problem.owner].ravel()).reshape(m, 3) + problem.u_f
    w = _mass_scale(problem)
    n_skip = int(min(10, max(1, math.isqrt(m))))
    G, GT = _bsr_arrays(problem.G), _bsr_arrays(problem.G.T)
    group = _dense_groups(problem.group)
    pin = np.zeros((m, 3))
    free = _free_blocks(G, problem.mu, group) if free_block == "exact" else np.zeros(0, dtype=np.int64)
    sweeps, res = _primal_gauss_seidel(problem.W_indptr, problem.W_indices, problem.W_blocks, problem.d,
                                       problem.mu, w, u, problem.u_f, group, G, GT, pin, _pin_share(G, group),
                                       float(tolerance), int(max_sweeps), int(eval_every), n_skip, free,
                                       _free_block_factor(problem, free))
    v = problem.vertex_velocities((problem.G.T @ (u - problem.u_f).ravel()).reshape(m, 3))
    cb = problem.contact_block
    r = np.empty((cb.size, 3))
    for q, i in enumerate(cb):
        lo, hi = problem.W_indptr[i], problem.W_indptr[i + 1]
        r[q] = problem.d[i] + pin[i] + np.einsum("kab,kb->a", problem.W_blocks[lo:hi], u[problem.W_indices[lo:hi]])
    return ContactSolution(v, r, u[cb].copy(), int(sweeps), float(res), bool(res <= tolerance),
                           time.perf_counter() - t0)


def _pin_share(G: tuple, group: np.ndarray) -> np.ndarray:
    """c (m̃,): the part of each block's own impulse in its pin term, ∂(G C Gᵀ r)_i/∂r_i = c_i I, from the
    columns f of its row of G (``G``: :func:`_bsr_arrays`) that are copies: Σ (1 − 1/p_f) ‖G_if‖²/3 (the
    blocks of G are scaled rotations)."""
    indptr, indices, blocks = G
    size = np.bincount(group[group >= 0]) if (group >= 0).any() else np.zeros(0, dtype=np.int64)
    row = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    grouped = group[indices] >= 0
    share = np.zeros(indptr.size - 1)
    np.add.at(share, row[grouped], (1.0 - 1.0 / size[group[indices[grouped]]])
              * (blocks[grouped] ** 2).sum(axis=(1, 2)) / 3.0)
    return share


def _free_blocks(G: tuple, mu: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Blocks of the vertices in no contact (μ < 0, no pin group) whose row of G (``G``: :func:`_bsr_arrays`)
    is the identity, not a self-contact's mean row."""
    plain = np.diff(G[0]) == 1
    return np.flatnonzero(plain & (mu < 0) & (group < 0)).astype(np.int64)


def _free_block_factor(problem: NodalProblem, free: np.ndarray) -> tuple:
    """SuperLU factors Pr Ŵ_FF Pc = L U of the free blocks' rows and columns of Ŵ, as CSC arrays, with the
    permutations and each block's slot in ``free`` (−1 for the others)."""
    slot = np.full(problem.blocks, -1, dtype=np.int64)
    slot[free] = np.arange(free.size)
    if not free.size:
        z, zf = np.zeros(1, dtype=np.int64), np.zeros(1)
        return z, z, zf, z, z, zf, z, z, slot
    W = sp.bsr_matrix((problem.W_blocks, problem.W_indices, problem.W_indptr), shape=(3 * problem.blocks,) * 2)
    idx = (3 * free[:, None] + np.arange(3)).ravel()
    W_ff = W.tocsr()[idx][:, idx].tocsc()
    lu = splu(W_ff, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    L, U = lu.L.tocsc(), lu.U.tocsc()
    i64 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
    return (i64(L.indptr), i64(L.indices), np.ascontiguousarray(L.data), i64(U.indptr), i64(U.indices),
            np.ascontiguousarray(U.data), i64(lu.perm_r), i64(lu.perm_c), slot)


def _bsr_arrays(M) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, indices, blocks) of a matrix in 3 × 3 block-sparse rows."""
    B = sp.bsr_matrix(M, blocksize=(3, 3))
    B.sort_indices()
    return B.indptr.astype(np.int64), B.indices.astype(np.int64), np.ascontiguousarray(B.data)


def _dense_groups(group: np.ndarray) -> np.ndarray:
    """Pin groups renumbered 0, 1, … (−1 kept)."""
    out = np.full(group.size, -1, dtype=np.int64)
    on = group >= 0
    out[on] = np.unique(group[on], return_inverse=True)[1]
    return out


def _check(tolerance, max_sweeps, eval_every):
    if not tolerance > 0 or int(max_sweeps) < 1 or int(eval_every) < 1:
        raise ValueError(f"need tolerance > 0, max_sweeps ≥ 1 and eval_every ≥ 1, got {tolerance}, {max_sweeps}, "
                         f"{eval_every}")


@njit(cache=True)
def _dual_gauss_seidel(W, d, mu, w, r, tol, max_sweeps, eval_every):
    """Gauss–Seidel over the contacts on u = W r + d (W (3c, 3c) dense); r (c, 3) in place (the best
    iterate on return). Returns (sweeps, residual)."""
    c = d.shape[0]
    best = r.copy()
    best_res = math.inf
    dbar = np.empty(3)
    rnew = np.empty(3)
    sweeps = 0
    R = r.reshape(3 * c)
    for k in range(1, max_sweeps + 1):
        sweeps = k
        for i in range(c):
            dbar[:] = d[i] + W[3 * i:3 * i + 3] @ R - W[3 * i:3 * i + 3, 3 * i:3 * i + 3] @ r[i]
            rnew[:] = r[i]
            scale = 1.0 + math.sqrt(dbar[0] ** 2 + dbar[1] ** 2 + dbar[2] ** 2)
            _, ok = local_dual(np.ascontiguousarray(W[3 * i:3 * i + 3, 3 * i:3 * i + 3]), dbar, mu[i], w[i],
                               rnew, scale, 50)
            if not ok:
                rnew[:] = 0.5 * (rnew + r[i])
            r[i] = rnew
        if k % eval_every == 0 or k == max_sweeps:
            U = W @ R
            res = 0.0
            for i in range(c):
                e = _block_residual(r[i], U[3 * i:3 * i + 3] + d[i], mu[i], w[i])
                if e > res or e != e:
                    res = e
            if res < best_res:
                best_res = res
                best[:] = r
            if res <= tol:
                break
    r[:] = best
    return sweeps, best_res


def delassus(problem: NodalProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(W, d, A⁻¹Jᵀ, v_free): the Delassus operator W = J A⁻¹ Jᵀ (3c, 3c) dense [1/kg] of the contacts
    (J: :meth:`NodalProblem.contact_jacobian`), the free relative velocity d = J v_free + u_f (c, 3)
    [m/s], A⁻¹Jᵀ (3m, 3c) and the contact-free velocities v_free = −A⁻¹b (3m,) [m/s]."""
    from isocloth.solvers.linalg import spd_factor

    F = spd_factor(problem.A)
    J = problem.contact_jacobian()
    AinvJt = F.solve(J.T.toarray())
    W = np.asarray(J @ AinvJt)
    v_free = F.solve(-problem.b)
    d = (J @ v_free).reshape(-1, 3) + problem.u_f[problem.contact_block]
    return 0.5 * (W + W.T), d, AinvJt, v_free


def solve_dual(problem: NodalProblem, *, tolerance: float = 1e-8, max_sweeps: int = 2000,
               eval_every: int = 1) -> ContactSolution:
    """The dual baseline: Gauss–Seidel over the contacts on u = W r + d with the assembled Delassus
    operator (:func:`delassus`); the residual is that of :func:`solve_primal` at the contacts.

    Raises
    ------
    ValueError
        If tolerance ≤ 0 or max_sweeps, eval_every < 1.
    """
    _check(tolerance, max_sweeps, eval_every)
    t0 = time.perf_counter()
    W, d, AinvJt, v_free = delassus(problem)
    c = d.shape[0]
    w = _mass_scale(problem)[problem.contact_block]
    mu = problem.mu[problem.contact_block]
    r = np.zeros((c, 3))
    sweeps, res = (0, 0.0) if c == 0 else _dual_gauss_seidel(np.ascontiguousarray(W), np.ascontiguousarray(d), mu,
                                                             w, r, float(tolerance), int(max_sweeps), int(eval_every))
    v = (v_free + AinvJt @ r.ravel()).reshape(-1, 3)
    u = (W @ r.ravel()).reshape(c, 3) + d
    return ContactSolution(v, r, u, int(sweeps), float(res), bool(res <= tolerance), time.perf_counter() - t0)
