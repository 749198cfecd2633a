"""Self-collision and thin-obstacle constraint rows (seed 000 §3, §4.1, §6.3, §7.4; thesis §3.3–3.4).

Detection between two configurations φⁿ → φ_j (continuous, vertices on straight lines) gives,
for each node–face or edge–edge pair that collides or comes close, one linear constraint

    H_k(φ) = ν · Σ_i w_i x_i ≥ τ0                                              (seed 000 §3.2)

with the normal ν and the signed barycentric weights w frozen (node–face: (1, −u, −v, −w);
edge–edge: (1 − α, α, −(1 − β), −β)), oriented so that H_k(φⁿ) ≥ 0 for pairs found by CCD. The QP
of thesis eq. 3.4 receives the row as gap H_k(φ_j) − τ0 and gradient ∇H_k (constant: H is linear).
Thin obstacles (:class:`~isocloth.contact.obstacles.codim.ObstacleCodim`: stick segments against
cloth edges, points such as needle tips against cloth faces) give the same rows; their vertices
are not unknowns, so their part of H is a constant ``offset`` evaluated at the end time of the
step (seed 000 §7.4: "a1, a2 ... at t_{n+1}").

Proximity and thickness (§3.3): detection runs on positions moved towards each other by ωτ0 along
the pair's normal (ω ≈ 0.5), so pairs are constrained before they cross; pairs closer than τ0 at
the end positions are flagged as well (resting contact). With ω = 0 and no proximity test
(:meth:`SelfCollisions.crossings`) detection finds exactly the pairs that cross during the step:
the final check of §4.1 (restart with ω ← 0.9ω when any is found).

Every row has a stable integer key built from its kind and its two primitive ids, so rows found
again at a later iteration or step are recognised (working-set warm start; "if the same collision
is found in two iterations only the later constraint is kept", §4.1, see :class:`CollisionSet`).
Keys are negative, so they never collide with the node–obstacle contact keys of
:mod:`isocloth.contact.contacts` (≥ 0).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np
import scipy.sparse as sp

from isocloth.contact._ccd_kernels import edge_edge_batch, pair_distances_kernel, vertex_face_batch
from isocloth.contact.broadphase import _swept, box_pairs, candidate_pairs, mesh_edges
from isocloth.contact.obstacles._checks import finite_points, finite_scalar, nonnegative, positive

__all__ = [
    "KIND_VERTEX_FACE",
    "KIND_EDGE_EDGE",
    "KIND_POINT_FACE",
    "KIND_SEGMENT_EDGE",
    "KIND_FACE_MIDPOINT",
    "KIND_STRETCH_LIMIT",
    "KIND_NAMES",
    "collision_keys",
    "decode_keys",
    "CollisionRows",
    "CollisionSet",
    "Candidates",
    "SelfCollisions",
]

KIND_VERTEX_FACE = 0  # cloth node vs cloth triangle
KIND_EDGE_EDGE = 1  # cloth edge vs cloth edge
KIND_POINT_FACE = 2  # obstacle point (e.g. needle tip) vs cloth triangle
KIND_SEGMENT_EDGE = 3  # obstacle segment (e.g. stick piece) vs cloth edge
KIND_FACE_MIDPOINT = 4  # face centroid vs a node-wise obstacle (contacts.detect_midpoint_contacts)
KIND_STRETCH_LIMIT = 5  # element edge vs its stretch bound (pair = (limit index, 0); fem.stretch_limits)
KIND_NAMES = ("vertex-face", "edge-edge", "point-face", "segment-edge", "face-midpoint", "stretch-limit")

_ID_BITS = 29
_ID_LIMIT = 1 << _ID_BITS


def collision_keys(kind, a, b) -> np.ndarray:
    """Keys −(1 + kind·2⁵⁸ + a·2²⁹ + b) (int64, < 0) of pairs (a, b) of primitive ids < 2²⁹."""
    kind = np.asarray(kind, dtype=np.int64)
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    return -(1 + (kind << 58) + (a << _ID_BITS) + b)


def decode_keys(keys) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inverse of :func:`collision_keys`: (kind, a, b) int64 arrays."""
    c = -np.asarray(keys, dtype=np.int64) - 1
    return c >> 58, (c >> _ID_BITS) & (_ID_LIMIT - 1), c & (_ID_LIMIT - 1)


@dataclass
class CollisionRows:
    """Collision constraints H_k = ν·Σ w_i x_i + offset ≥ τ (one row per detected pair).

    Attributes
    ----------
    kind : (c,) int64, KIND_* of each row
    pair : (c, 2) int64, primitive ids (node, triangle) / (edge, edge) / (obstacle point, triangle) /
        (obstacle segment, edge); triangles index the triangulated faces, edges the detector's edges
    nodes : (c, 4) int64, cloth node of each weight slot (−1: obstacle vertex, folded into ``offset``)
    weights : (c, 4) float64, signed weights w (see module docstring)
    normal : (c, 3) float64, unit ν
    thickness : (c,) float64 [m], τ of the row (cloth τ0 or obstacle radius)
    offset : (c,) float64 [m], obstacle part ν·Σ w_o o(t) at the end time (0 for self rows)
    mu : (c,) float64, friction coefficient
    obstacle_velocity : (c, 3) float64 [m/s], Σ w_o ȯ over the obstacle slots (signed, so that the
        relative velocity of the pair is Σ w_i ẋ_i + obstacle_velocity)
    time : (c,) float64, collision time as a fraction of the step (CCD), NaN for proximity rows
    gap : (c,) float64 [m], H_k − τ at the configuration where the row was detected
    """

    kind: np.ndarray
    pair: np.ndarray
    nodes: np.ndarray
    weights: np.ndarray
    normal: np.ndarray
    thickness: np.ndarray
    offset: np.ndarray
    mu: np.ndarray
    obstacle_velocity: np.ndarray
    time: np.ndarray
    gap: np.ndarray

    @classmethod
    def empty(cls) -> "CollisionRows":
        z = np.zeros(0)
        return cls(np.zeros(0, np.int64), np.zeros((0, 2), np.int64), np.zeros((0, 4), np.int64),
                   np.zeros((0, 4)), np.zeros((0, 3)), z, z.copy(), z.copy(), np.zeros((0, 3)), z.copy(), z.copy())

    @property
    def count(self) -> int:
        return int(self.kind.shape[0])

    def __len__(self) -> int:
        return self.count

    def keys(self) -> np.ndarray:
        """(c,) int64 stable identifiers (< 0) of the rows' pairs."""
        return collision_keys(self.kind, self.pair[:, 0], self.pair[:, 1])

    def values(self, x: np.ndarray) -> np.ndarray:
        """H_k(x) − τ_k [m], shape (c,), at node positions x (n, 3): the QP's gap at iterate x."""
        x = np.asarray(x, dtype=np.float64)
        idx = np.where(self.nodes >= 0, self.nodes, 0)
        w = np.where(self.nodes >= 0, self.weights, 0.0)
        s = np.einsum("ck,ckd->cd", w, x[idx])
        return np.einsum("cd,cd->c", s, self.normal) + self.offset - self.thickness

    def jacobian(self, node_count: int) -> sp.csr_matrix:
        """∇H as a (c, 3n) sparse matrix, column 3i + d (node i, coordinate d): w_i ν_d."""
        mask = self.nodes >= 0
        r, s = np.nonzero(mask)
        nd = self.nodes[r, s]
        vals = (self.weights[r, s][:, None] * self.normal[r]).ravel()
        cols = (3 * nd[:, None] + np.arange(3)[None, :]).ravel()
        rows = np.repeat(r, 3)
        return sp.csr_matrix((vals, (rows, cols)), shape=(self.count, 3 * int(node_count)))

    def relative_velocity(self, x: np.ndarray, x_prev: np.ndarray, dt: float) -> np.ndarray:
        """Relative velocity Σ w_i (x_i − xⁿ_i)/Δt + obstacle part [m/s], shape (c, 3), of the
        positive-weight side with respect to the negative-weight side (for cloth–cloth friction)."""
        d = (np.asarray(x, dtype=np.float64) - np.asarray(x_prev, dtype=np.float64)) / float(dt)
        idx = np.where(self.nodes >= 0, self.nodes, 0)
        w = np.where(self.nodes >= 0, self.weights, 0.0)
        return np.einsum("ck,ckd->cd", w, d[idx]) + self.obstacle_velocity

    def movable(self, free_mask: np.ndarray) -> np.ndarray:
        """(c,) bool: rows with a non-zero weight on at least one free node (``free_mask`` (n,)
        bool, e.g. ``ClothModel.free_mask``). The others involve only grasped nodes and obstacles:
        the solver cannot act on them."""
        free = np.asarray(free_mask, dtype=bool)
        idx = np.where(self.nodes >= 0, self.nodes, 0)
        return np.any((self.nodes >= 0) & (self.weights != 0.0) & free[idx], axis=1)

    def take(self, index) -> "CollisionRows":
        """Rows selected by an index array or boolean mask."""
        return CollisionRows(**{f.name: getattr(self, f.name)[index] for f in fields(self)})

    @staticmethod
    def concatenate(parts) -> "CollisionRows":
        parts = [p for p in parts if p.count]
        if not parts:
            return CollisionRows.empty()
        return CollisionRows(**{f.name: np.concatenate([getattr(p, f.name) for p in parts])
                                for f in fields(CollisionRows)})

    def __repr__(self) -> str:
        kinds = ", ".join(f"{KIND_NAMES[k]}={int((self.kind == k).sum())}" for k in range(len(KIND_NAMES))
                          if np.any(self.kind == k))
        return f"CollisionRows({self.count} rows{': ' + kinds if kinds else ''})"


class CollisionSet:
    """Collision rows accumulated over the iterations of one step (the observation set 𝒪 of
    thesis Algorithm 2, lines 2 and 12). A row found again replaces the earlier one with the same
    key ("only the constraint defined by the later iteration is kept", seed 000 §4.1) unless
    :meth:`add` is told otherwise; order of first detection is kept."""

    def __init__(self) -> None:
        self._rows = CollisionRows.empty()
        self._keys = np.zeros(0, dtype=np.int64)
        self._order = np.zeros(0, dtype=np.int64)
        self._sorted = self._keys

    @property
    def rows(self) -> CollisionRows:
        return self._rows

    def keys(self) -> np.ndarray:
        return self._keys.copy()

    def __len__(self) -> int:
        return self._rows.count

    def add(self, rows: CollisionRows, replace=True) -> int:
        """Merge ``rows``; returns how many keys are new.

        ``replace`` : bool or (c,) bool array, whether a row replaces an earlier one with the same
        key (default: always, seed 000 §4.1); rows not replacing are dropped when their key exists.
        """
        if rows.count == 0:
            return 0
        rep = np.broadcast_to(np.asarray(replace, dtype=bool), (rows.count,))
        k = rows.keys()
        k_unique, first = np.unique(k[::-1], return_index=True)  # last occurrence within ``rows`` wins
        last = np.sort(rows.count - 1 - first)
        rows = rows.take(last)
        rep = rep[last]
        k = rows.keys()
        if self._keys.size:
            at = np.searchsorted(self._sorted, k)
            at = np.minimum(at, self._sorted.size - 1)
            found = self._sorted[at] == k
            old = np.where(found, self._order[at], -1)
        else:
            old = np.full(k.size, -1, dtype=np.int64)
        fresh = old < 0
        update = ~fresh & rep
        if np.any(update):
            for f in fields(CollisionRows):
                getattr(self._rows, f.name)[old[update]] = getattr(rows, f.name)[update]
        if np.any(fresh):
            self._rows = CollisionRows.concatenate([self._rows, rows.take(fresh)])
            self._keys = np.concatenate([self._keys, k[fresh]])
            self._order = np.argsort(self._keys, kind="stable")
            self._sorted = self._keys[self._order]
        return int(fresh.sum())

    def observe(self, det: "SelfCollisions", x_prev: np.ndarray, x: np.ndarray, *, omega: float, t_prev: float,
                t: float, free_mask: np.ndarray, penetration_tolerance: float) -> tuple["Candidates", bool]:
        """Add Collisions_ω(x_prev → x) found by ``det`` (thesis Algorithm 2, lines 2 and 12).

        Rows acting only on held nodes (``free_mask`` (n,) bool False) are dropped. A pair found
        again replaces its row only when the row detected now is violated beyond
        ``penetration_tolerance`` [m]: the earlier row holds at x (it was in the last QP), and
        replacing rows whose frozen normal and weights move with the iterate made the iteration
        cycle between two states (docs/design/self-collision.md).

        Returns
        -------
        (Candidates of the broad phase, for a later ω = 0 check at x; whether any row was detected)
        """
        cand = det.broad_phase(x_prev, x, omega=omega, t_prev=t_prev, t=t)
        new = det.narrow_phase(cand, omega=omega)
        if new.count:
            new = new.take(new.movable(free_mask))
        if new.count:
            self.add(new, replace=new.gap < -penetration_tolerance)
        return cand, bool(new.count)

    def clear(self) -> None:
        self.__init__()


@dataclass
class Candidates:
    """Broad-phase pairs of one motion (:meth:`SelfCollisions.broad_phase`).

    Attributes
    ----------
    X0, X1 : (n + m, 3) float64 [m], cloth nodes then thin-obstacle vertices at the start / end
    dt : float [s], duration of the motion (obstacle velocities)
    omega : float, ω of the broad phase (the narrow phase may use any ω' ≤ ω)
    kind : (p,) int64, KIND_* of each pair; ids : (p, 2) int64, primitive ids (row keys)
    quads : (p, 4) int64, vertex ids (node, a, b, c) or (a, b, c, d) into X
    tau : (p,) float64 [m], thickness; mu : (p,) float64, friction coefficient
    node_count : int, n
    slack : float [m], extra growth of the boxes (:meth:`SelfCollisions.broad_phase`)
    """

    X0: np.ndarray
    X1: np.ndarray
    dt: float
    omega: float
    kind: np.ndarray
    ids: np.ndarray
    quads: np.ndarray
    tau: np.ndarray
    mu: np.ndarray
    node_count: int
    slack: float = 0.0

    @property
    def count(self) -> int:
        return int(self.kind.shape[0])

    def retarget(self, x: np.ndarray) -> "Candidates | None":
        """These pairs for the motion X0 → x instead (x: cloth nodes (n, 3) float64 [m] at the same
        end time), or None when a node of x is farther than ``slack`` from this motion's end in
        some coordinate: the boxes, grown by ``slack``, then need not cover the new motion."""
        n = self.node_count
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (n, 3) or not np.abs(x - self.X1[:n]).max(initial=0.0) <= self.slack:
            return None
        X1 = self.X1.copy()
        X1[:n] = x
        return replace(self, X1=X1)


def _open_edges(triangles: np.ndarray) -> np.ndarray:
    """(t,) int64 bit masks: bit k set when the edge of triangle t opposite its vertex k belongs to
    no other triangle (a free edge of the cloth); triangles with a repeated node get 0."""
    t = triangles.shape[0]
    if t == 0:
        return np.zeros(0, dtype=np.int64)
    opposite = np.concatenate([triangles[:, [1, 2]], triangles[:, [2, 0]], triangles[:, [0, 1]]])
    opposite.sort(axis=1)
    # a triangle with a repeated node (zero area) bounds nothing: its edges are not counted
    distinct = (triangles[:, 0] != triangles[:, 1]) & (triangles[:, 1] != triangles[:, 2]) & \
        (triangles[:, 2] != triangles[:, 0])
    proper = np.tile(distinct, 3)
    _, inverse, counts = np.unique(opposite[proper], axis=0, return_inverse=True, return_counts=True)
    free = np.zeros(3 * t, dtype=bool)
    free[proper] = counts[inverse.ravel()] == 1
    free = free.reshape(3, t)
    return (free[0] * 1 + free[1] * 2 + free[2] * 4).astype(np.int64)


def _inflation(tau: float, omega: float) -> float:
    """Half the detection distance max(τ, 2ωτ) (box growth of the broad phase)."""
    return 0.5 * max(tau, 2.0 * omega * tau) * (1.0 + 1e-9)


class SelfCollisions:
    """Self-collision (and thin-obstacle) detection on a fixed mesh: the static part (topology,
    thickness τ0, cloth–cloth μ, obstacles) of ``Collisions_ω(φⁿ →Δt φ_j)`` (seed 000 Definition 1).

    Parameters
    ----------
    triangles : (t, 3) int64
        Cloth triangles; quads must be split first (``Mesh.triangulated_faces``).
    node_count : int
        Number of cloth nodes n.
    thickness : float [m]
        Cloth thickness τ0 > 0 (rows impose H ≥ τ0). Must be clearly smaller than the distance
        between non-adjacent primitives of the rest mesh (see :meth:`min_distance`).
    mu : float
        Cloth–cloth friction coefficient ≥ 0.
    obstacles : sequence of ObstacleCodim
        Thin obstacles (segments, points) checked against the cloth with their own radius and μ.
    self_collision : bool
        Check cloth against itself (default True); False keeps only the obstacles.

    Attributes
    ----------
    edges : (e, 2) int64, the triangles' unique edges (edge–edge pair ids index these)
    open_edges : (t,) int64, per triangle a bit mask of its free edges (bit k: the edge opposite
        vertex k belongs to no other triangle), where node–edge proximity rows are allowed

    Raises
    ------
    ValueError
        Bad shapes, ids out of range, thickness ≤ 0, mu < 0, more than 2²⁹ primitives.
    """

    def __init__(self, triangles, node_count: int, *, thickness: float, mu: float = 0.0, obstacles=(),
                 self_collision: bool = True):
        tri = np.ascontiguousarray(triangles, dtype=np.int64)
        if tri.ndim != 2 or tri.shape[1] != 3:
            raise ValueError(f"triangles must have shape (t, 3), got {tri.shape}")
        self.node_count = int(node_count)
        if tri.size and (tri.min() < 0 or tri.max() >= self.node_count):
            raise ValueError(f"triangles hold node ids outside [0, {self.node_count})")
        self.triangles = tri
        self.edges = mesh_edges(tri)
        self.nodes = np.unique(tri)
        self.open_edges = _open_edges(tri)
        self.thickness = positive(thickness, "thickness")
        self.mu = nonnegative(mu, "mu")
        self.obstacles = list(obstacles)
        for o in self.obstacles:
            if not all(hasattr(o, a) for a in ("vertices_at", "segments", "points", "radius", "mu")):
                raise ValueError(f"obstacles must be ObstacleCodim instances (segments/points), got {type(o).__name__}")
        self.self_collision = bool(self_collision)
        if max(len(tri), len(self.edges), self.node_count) >= _ID_LIMIT:
            raise ValueError("mesh too large for collision keys (2^29 primitives)")
        # obstacle vertex numbering: after the cloth nodes
        offs = np.cumsum([0] + [o.vertex_count for o in self.obstacles])
        self._obs_offset = offs[:-1]
        self._obs_vertex_count = int(offs[-1])
        self._seg_first = np.cumsum([0] + [len(o.segments) for o in self.obstacles])[:-1]
        self._pt_first = np.cumsum([0] + [len(o.points) for o in self.obstacles])[:-1]

    @classmethod
    def from_mesh(cls, mesh, **kwargs) -> "SelfCollisions":
        """Detector for a :class:`~isocloth.mesh.mesh.Mesh` (quads split along their 0–2 diagonal)."""
        return cls(mesh.triangulated_faces(), mesh.node_count, **kwargs)

    # -- detection ---------------------------------------------------------------------------------
    def detect(self, x_prev: np.ndarray, x: np.ndarray, *, omega: float = 0.5, proximity: bool = True,
               t_prev: float = 0.0, t: float | None = None) -> CollisionRows:
        """Collision rows for the motion x_prev → x (``Collisions_ω(φⁿ →Δt φ_j)``, seed 000 §3, §4.1).

        Parameters
        ----------
        x_prev : (n, 3) float64 [m], φⁿ (start of the step)
        x : (n, 3) float64 [m], φ_j (current iterate, end of the step)
        omega : float, proximity parameter ω ∈ [0, 0.5] (§3.3)
        proximity : bool, also flag pairs closer than τ at x
        t_prev, t : float [s], times of x_prev and x (obstacle positions); t defaults to t_prev

        Returns
        -------
        CollisionRows (gap evaluated at x)

        Raises
        ------
        ValueError
            Wrong shapes, non-finite positions, ω outside [0, 0.5].
        """
        return self.narrow_phase(self.broad_phase(x_prev, x, omega=omega, t_prev=t_prev, t=t), omega=omega,
                                 proximity=proximity)

    def crossings(self, x_prev: np.ndarray, x: np.ndarray, *, t_prev: float = 0.0,
                  t: float | None = None) -> CollisionRows:
        """Pairs that cross during x_prev → x: detection with ω = 0 and no proximity test (the
        final check of seed 000 §4.1)."""
        return self.detect(x_prev, x, omega=0.0, proximity=False, t_prev=t_prev, t=t)

    def broad_phase(self, x_prev: np.ndarray, x: np.ndarray, *, omega: float = 0.5, t_prev: float = 0.0,
                    t: float | None = None, slack: float = 0.0) -> "Candidates":
        """Candidate pairs of the motion x_prev → x whose swept boxes, grown by half the detection
        distance max(τ, 2ωτ), overlap (arguments as :meth:`detect`). :meth:`narrow_phase` turns
        them into rows for this ω or any smaller one (e.g. the final ω = 0 check at the same
        iterate, without a second broad phase). ``slack`` [m] ≥ 0 grows the boxes further, so that
        the pairs also cover any motion x_prev → x' with |x' − x| ≤ slack per coordinate
        (:meth:`Candidates.retarget`)."""
        n = self.node_count
        slack = finite_scalar(slack, "slack")
        if slack < 0.0:
            raise ValueError(f"slack must be >= 0, got {slack}")
        x0 = finite_points(x_prev, "x_prev", n)
        x1 = finite_points(x, "x", n)
        omega = finite_scalar(omega, "omega")
        if not 0.0 <= omega <= 0.5:
            raise ValueError(f"omega must be in [0, 0.5] (seed 000 §3.3), got {omega}")
        t_prev = finite_scalar(t_prev, "t_prev")
        t = t_prev if t is None else finite_scalar(t, "t")
        kinds, ids, quads, taus, mus = [], [], [], [], []
        if self.self_collision and len(self.triangles):
            tau = self.thickness
            cand = candidate_pairs(x0, x1, self.triangles, self.edges, _inflation(tau, omega) + slack, self.nodes)
            vf, ee = cand.vertex_face, cand.edge_edge
            if len(vf):
                kinds.append(np.full(len(vf), KIND_VERTEX_FACE))
                ids.append(vf)
                quads.append(np.column_stack([vf[:, 0], self.triangles[vf[:, 1]]]))
                taus.append(np.full(len(vf), tau))
                mus.append(np.full(len(vf), self.mu))
            if len(ee):
                kinds.append(np.full(len(ee), KIND_EDGE_EDGE))
                ids.append(ee)
                quads.append(np.column_stack([self.edges[ee[:, 0]], self.edges[ee[:, 1]]]))
                taus.append(np.full(len(ee), tau))
                mus.append(np.full(len(ee), self.mu))
        X0, X1 = x0, x1
        if self.obstacles:
            o0 = np.concatenate([o.vertices_at(t_prev) for o in self.obstacles])
            o1 = np.concatenate([o.vertices_at(t) for o in self.obstacles])
            X0 = np.ascontiguousarray(np.vstack([x0, o0]))
            X1 = np.ascontiguousarray(np.vstack([x1, o1]))
            cloth_lo = np.minimum(x0.min(axis=0), x1.min(axis=0))
            cloth_hi = np.maximum(x0.max(axis=0), x1.max(axis=0))
            for k, obs in enumerate(self.obstacles):
                tau = obs.radius
                infl = _inflation(tau, omega) + slack
                base = n + int(self._obs_offset[k])
                vo = np.concatenate([o0[base - n:base - n + obs.vertex_count], o1[base - n:base - n + obs.vertex_count]])
                if np.any(vo.min(axis=0) - 2 * infl > cloth_hi) or np.any(vo.max(axis=0) + 2 * infl < cloth_lo):
                    continue  # the obstacle's swept box misses the cloth's
                if len(obs.points) and len(self.triangles):
                    pts = base + obs.points
                    pf = box_pairs(_swept(X0, X1, pts, infl), _swept(X0, X1, self.triangles, infl))
                    if len(pf):
                        kinds.append(np.full(len(pf), KIND_POINT_FACE))
                        ids.append(np.column_stack([self._pt_first[k] + pf[:, 0], pf[:, 1]]))
                        quads.append(np.column_stack([pts[pf[:, 0]], self.triangles[pf[:, 1]]]))
                        taus.append(np.full(len(pf), tau))
                        mus.append(np.full(len(pf), obs.mu))
                if len(obs.segments) and len(self.edges):
                    segs = base + obs.segments
                    se = box_pairs(_swept(X0, X1, segs, infl), _swept(X0, X1, self.edges, infl))
                    if len(se):
                        kinds.append(np.full(len(se), KIND_SEGMENT_EDGE))
                        ids.append(np.column_stack([self._seg_first[k] + se[:, 0], se[:, 1]]))
                        quads.append(np.column_stack([segs[se[:, 0]], self.edges[se[:, 1]]]))
                        taus.append(np.full(len(se), tau))
                        mus.append(np.full(len(se), obs.mu))
        if kinds:
            cat = np.concatenate
            return Candidates(X0, X1, t - t_prev, omega, cat(kinds), cat(ids).astype(np.int64),
                              np.ascontiguousarray(cat(quads), dtype=np.int64), cat(taus), cat(mus), n, slack)
        z = np.zeros(0)
        return Candidates(X0, X1, t - t_prev, omega, np.zeros(0, np.int64), np.zeros((0, 2), np.int64),
                          np.zeros((0, 4), np.int64), z, z.copy(), n, slack)

    def narrow_phase(self, cand: "Candidates", *, omega: float, proximity: bool = True) -> CollisionRows:
        """Rows of the candidate pairs (continuous test with the proximity shift ω, and with
        ``proximity`` the end-distance test); ω must not exceed the broad phase's.

        Raises
        ------
        ValueError
            ω outside [0, cand.omega].
        """
        omega = finite_scalar(omega, "omega")
        if not 0.0 <= omega <= cand.omega:
            raise ValueError(f"omega must be in [0, {cand.omega}] (the broad phase's ω), got {omega}")
        p = cand.count
        if p == 0:
            return CollisionRows.empty()
        res = np.empty((p, 10))
        face = (cand.kind == KIND_VERTEX_FACE) | (cand.kind == KIND_POINT_FACE)
        edge = ~face
        if face.all():
            vertex_face_batch(cand.X0, cand.X1, cand.quads, cand.tau, omega, bool(proximity),
                              self.open_edges[cand.ids[:, 1]], res)
        elif edge.all():
            edge_edge_batch(cand.X0, cand.X1, cand.quads, cand.tau, omega, bool(proximity),
                            cand.kind == KIND_SEGMENT_EDGE, res)
        else:
            f, e = np.flatnonzero(face), np.flatnonzero(edge)
            rf = np.empty((f.size, 10))
            re = np.empty((e.size, 10))
            vertex_face_batch(cand.X0, cand.X1, np.ascontiguousarray(cand.quads[f]), cand.tau[f], omega,
                              bool(proximity), self.open_edges[cand.ids[f, 1]], rf)
            edge_edge_batch(cand.X0, cand.X1, np.ascontiguousarray(cand.quads[e]), cand.tau[e], omega,
                            bool(proximity), cand.kind[e] == KIND_SEGMENT_EDGE, re)
            res[f] = rf
            res[e] = re
        return self._rows(cand, res)

    def _rows(self, cand: "Candidates", res: np.ndarray) -> CollisionRows:
        hit = res[:, 0] > 0.0
        if not np.any(hit):
            return CollisionRows.empty()
        res = res[hit]
        quads = cand.quads[hit]
        X0, X1 = cand.X0, cand.X1
        c = len(res)
        w = res[:, 2:6]
        nu = res[:, 6:9]
        cloth = quads < self.node_count
        nodes = np.where(cloth, quads, -1)
        h = np.einsum("ck,ckd,cd->c", w, X1[quads], nu)
        offset = np.zeros(c)
        ovel = np.zeros((c, 3))
        if not cloth.all():
            obs_w = np.where(cloth, 0.0, w)
            offset = np.einsum("ck,ckd,cd->c", obs_w, X1[quads], nu)
            if cand.dt > 0.0:
                ovel = np.einsum("ck,ckd->cd", obs_w, X1[quads] - X0[quads]) / cand.dt
        time = np.where(res[:, 0] == 1.0, res[:, 1], np.nan)
        tau = cand.tau[hit]
        return CollisionRows(kind=cand.kind[hit], pair=cand.ids[hit], nodes=nodes, weights=w.copy(),
                             normal=nu.copy(), thickness=tau.copy(), offset=offset, mu=cand.mu[hit].copy(),
                             obstacle_velocity=ovel, time=time, gap=h - tau)

    # -- diagnostics -------------------------------------------------------------------------------
    def min_distance(self, x: np.ndarray, cutoff: float | None = None) -> float:
        """Smallest distance [m] between non-adjacent cloth primitives (node–face, edge–edge) at x.

        Only pairs closer than ``cutoff`` (default 4 τ0) are examined; returns inf when none is.
        """
        x = finite_points(x, "x", self.node_count)
        cutoff = 4.0 * self.thickness if cutoff is None else positive(cutoff, "cutoff")
        cand = candidate_pairs(x, x, self.triangles, self.edges, 0.5 * cutoff, self.nodes)
        vf = np.column_stack([cand.vertex_face[:, 0], self.triangles[cand.vertex_face[:, 1]]])
        ee = np.column_stack([self.edges[cand.edge_edge[:, 0]], self.edges[cand.edge_edge[:, 1]]])
        dv = np.empty(len(vf))
        de = np.empty(len(ee))
        pair_distances_kernel(x, np.ascontiguousarray(vf, dtype=np.int64), np.ascontiguousarray(ee, dtype=np.int64),
                              dv, de)
        d = np.concatenate([dv, de])
        d = d[d < cutoff]
        return float(d.min()) if d.size else float("inf")
