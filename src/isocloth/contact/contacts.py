"""Node–obstacle contact candidates: gaps H_i, normals ∇H_i, friction data (thesis §3.2, Remark 3.2.1).

Each node i near obstacle o gives one Signorini row H_o(p_i) ≥ 0 (the obstacle's signed distance
minus its contact thickness), linearised as H + ∇H·Δp ≥ 0 with the unit normal frozen at the
current iterate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["Contacts", "detect_contacts", "detect_midpoint_contacts", "mesh_faces", "KEY_STRIDE", "node_of_key",
           "tangent_basis"]

KEY_STRIDE = 1024  # contact key = node · KEY_STRIDE + obstacle index (at most 1024 obstacles)


def tangent_basis(normal: np.ndarray) -> np.ndarray:
    """Orthonormal tangents of unit normals.

    Parameters
    ----------
    normal : (c, 3) float64, unit normals ν

    Returns
    -------
    (c, 2, 3) float64, (t1, t2) with t1 × t2 = ν; t1 is ν crossed with the coordinate axis least
    aligned with it (deterministic, smooth where that axis does not change).
    """
    n = np.asarray(normal, dtype=np.float64)
    axis = np.zeros_like(n)
    axis[np.arange(n.shape[0]), np.argmin(np.abs(n), axis=1)] = 1.0
    t1 = np.cross(n, axis)
    t1 /= np.maximum(np.linalg.norm(t1, axis=1, keepdims=True), 1e-300)
    t2 = np.cross(n, t1)
    return np.stack([t1, t2], axis=1)


def node_of_key(key: int) -> int:
    """The cloth node of a contact key."""
    return int(key) // KEY_STRIDE


@dataclass
class Contacts:
    """Contact candidates at one iterate.

    Attributes
    ----------
    nodes : (c,) int64, cloth node of each row
    obstacle : (c,) int64, obstacle index of each row
    gap : (c,) float64 [m], H_i(φ_j) (negative = penetration beyond the thickness)
    normal : (c, 3) float64, unit outward normals ∇H_i
    mu : (c,) float64, friction coefficient of the obstacle
    surface_velocity : (c, 3) float64 [m/s], obstacle velocity at the contact point
    """

    nodes: np.ndarray
    obstacle: np.ndarray
    gap: np.ndarray
    normal: np.ndarray
    mu: np.ndarray
    surface_velocity: np.ndarray

    @property
    def count(self) -> int:
        return int(self.nodes.size)

    def keys(self) -> np.ndarray:
        """(c,) int64 identifiers node·K + obstacle (for warm starts across iterations and steps)."""
        return self.nodes * KEY_STRIDE + self.obstacle

    def jacobian(self, node_count: int) -> sp.csr_matrix:
        """∇H as a (c, 3n) sparse matrix: row r has the normal at the three coordinates of its node."""
        c = self.count
        cols = (3 * self.nodes[:, None] + np.arange(3)[None, :]).ravel()
        indptr = np.arange(0, 3 * c + 1, 3)
        return sp.csr_matrix((self.normal.ravel(), cols, indptr), shape=(c, 3 * node_count))

    def tangent_basis(self) -> np.ndarray:
        """(c, 2, 3) float64 orthonormal tangent vectors (t1, t2) of each row, t1 × t2 = normal.

        t1 is the normal crossed with the coordinate axis least aligned with it (deterministic,
        smooth where that axis does not change).
        """
        return tangent_basis(self.normal)

    def tangent_jacobian(self, node_count: int, rows=None, basis=None) -> sp.csr_matrix:
        """Tangential rows (2k, 3n) sparse: rows 2r and 2r+1 map Δφ to the slip of contact ``rows[r]``
        along t1 and t2 (:meth:`tangent_basis`); all rows when ``rows`` is None."""
        rows = np.arange(self.count) if rows is None else np.asarray(rows, dtype=np.int64)
        tb = (self.tangent_basis() if basis is None else basis)[rows]  # (k, 2, 3)
        k = rows.size
        cols = np.repeat(3 * self.nodes[rows][:, None] + np.arange(3)[None, :], 2, axis=0).ravel()
        indptr = np.arange(0, 6 * k + 1, 3)
        return sp.csr_matrix((tb.reshape(-1), cols, indptr), shape=(2 * k, 3 * node_count))

    def slip(self, x: np.ndarray, x_prev: np.ndarray, dt: float, rows=None, basis=None) -> np.ndarray:
        """(k, 2) float64 [m] tangential displacement of each contact point relative to the obstacle
        surface over the step, x_i − x_i^n − dt·v_obstacle, in the tangent basis (the relative
        tangential velocity of seed 000 §6.2 times dt)."""
        rows = np.arange(self.count) if rows is None else np.asarray(rows, dtype=np.int64)
        tb = (self.tangent_basis() if basis is None else basis)[rows]
        nd = self.nodes[rows]
        d = x[nd] - x_prev[nd] - dt * self.surface_velocity[rows]
        return np.einsum("kij,kj->ki", tb, d)


def _near(obs, p: np.ndarray, t: float, margin: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points p (k, 3) [m] within ``margin`` of obstacle ``obs`` at time t: (indices (m,) int64,
    H (m,) [m], unit normals (m, 3))."""
    if hasattr(obs, "evaluate_contact"):
        H, G = obs.evaluate_contact(p, t, max_distance=margin)
    else:
        H, G = obs.evaluate(p, t)
    near = np.flatnonzero(H < margin)
    g = G[near]
    return near, H[near], g / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-300)


PASSAGE_DEPTH = 1e-4
"""Depth [m] below which a path through an obstacle is a grazing one, not a passage
(:meth:`~isocloth.contact.obstacles.base.Obstacle.swept_passage`; the contact solver's default ε1)."""


def detect_contacts(obstacles, x: np.ndarray, t: float, margin: float, *, nodes=None,
                    x_prev: np.ndarray | None = None, t_prev: float | None = None) -> Contacts:
    """Rows for every (node, obstacle) pair with H < margin, and, with ``x_prev``, for every node
    whose path from x_prev (at t_prev) to x passed through the obstacle (continuous collision
    detection, :meth:`~isocloth.contact.obstacles.base.Obstacle.swept_passage`): its row is the
    tangent plane at the entry point, ν·(p − p_entry) ≥ 0 with the entry normal ν, which pushes it
    back to the side it came from (the closest point would push it out of the far side of a thin
    obstacle, or miss it once past it).

    Parameters
    ----------
    obstacles : sequence of Obstacle (``evaluate``, ``surface_velocity``, ``mu``)
    x : (n, 3) float64 [m], node positions
    t : float [s], obstacle time
    margin : float [m], detection distance (≥ 0)
    nodes : optional (k,) int64, restrict to these nodes (free nodes)
    x_prev : (n, 3) float64 [m], optional, positions at the start of the step
    t_prev : float [s], their time (required with ``x_prev``)

    Returns
    -------
    Contacts
    """
    idx = np.arange(x.shape[0]) if nodes is None else np.asarray(nodes, dtype=np.int64)
    parts = []
    for o, obs in enumerate(obstacles):
        near, Hn, g = _near(obs, x[idx], t, margin)
        if x_prev is not None and hasattr(obs, "swept_passage"):
            through, entry, nu = obs.swept_passage(x_prev[idx], t_prev, x[idx], t, PASSAGE_DEPTH)
            if through.any():
                keep = ~through[near]
                extra = np.flatnonzero(through)
                near = np.concatenate([near[keep], extra])
                Hn = np.concatenate([Hn[keep], np.einsum("kd,kd->k", nu[extra], x[idx[extra]] - entry[extra])])
                g = np.concatenate([g[keep], nu[extra]])
                order = np.argsort(near, kind="stable")
                near, Hn, g = near[order], Hn[order], g[order]
        if near.size == 0:
            continue
        nid = idx[near]
        parts.append((nid, np.full(near.size, o), Hn, g, np.full(near.size, float(obs.mu)),
                      obs.surface_velocity(x[nid], t)))
    if not parts:
        z = np.zeros(0, dtype=np.int64)
        return Contacts(z, z.copy(), np.zeros(0), np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3)))
    cols = list(zip(*parts))
    return Contacts(np.concatenate(cols[0]).astype(np.int64), np.concatenate(cols[1]).astype(np.int64),
                    np.concatenate(cols[2]), np.concatenate(cols[3]), np.concatenate(cols[4]),
                    np.concatenate(cols[5]))


def mesh_faces(mesh) -> np.ndarray:
    """(f, 4) int64 node ids of every face of ``mesh``: triangles (4th slot −1), then quads."""
    t = np.asarray(mesh.triangles, dtype=np.int64).reshape(-1, 3)
    q = np.asarray(mesh.quads, dtype=np.int64).reshape(-1, 4)
    return np.vstack([np.column_stack([t, np.full(t.shape[0], -1, dtype=np.int64)]), q])


def detect_midpoint_contacts(obstacles, x: np.ndarray, t: float, margin: float, faces: np.ndarray,
                             free_mask: np.ndarray | None = None):
    """Face-midpoint contact rows for coarse meshes (thesis Remark 3.2.1: an obstacle smaller than an
    element can pass between the nodes): for every face whose centroid c = Σ x_i / k lies within
    ``margin`` of an obstacle, the row H_o(c) + ν·(Σ w_i Δx_i) ≥ 0 with w_i = 1/k and ν = ∇H_o(c)
    frozen at x, as a :class:`~isocloth.contact.self_collision.CollisionRows` of kind
    ``KIND_FACE_MIDPOINT`` (pair = (face, obstacle)), so that the QP, the friction problem (μ of the
    obstacle, slip relative to its surface velocity) and the warm start treat it like the other
    weighted rows. Rows are rebuilt at every iteration (not kept in the observation set).

    Parameters
    ----------
    obstacles : sequence of Obstacle
    x : (n, 3) float64 [m]; t : float [s]; margin : float [m]
    faces : (f, 4) int64 from :func:`mesh_faces`
    free_mask : (n,) bool, optional: faces whose nodes are all held are skipped

    Returns
    -------
    CollisionRows (empty when nothing is near)
    """
    from isocloth.contact.self_collision import KIND_FACE_MIDPOINT, CollisionRows

    x = np.asarray(x, dtype=np.float64)
    valid = faces >= 0
    k = valid.sum(axis=1)
    w = np.where(valid, 1.0 / k[:, None], 0.0)
    c = np.einsum("fk,fkd->fd", w, x[np.where(valid, faces, 0)])
    keep = np.ones(faces.shape[0], dtype=bool)
    if free_mask is not None:
        keep = np.any(valid & np.asarray(free_mask, dtype=bool)[np.where(valid, faces, 0)], axis=1)
    parts = []
    for o, obs in enumerate(obstacles):
        idx = np.flatnonzero(keep)
        if idx.size == 0:
            break
        near, Hn, nu = _near(obs, c[idx], t, margin)
        if near.size == 0:
            continue
        f = idx[near]
        m = f.size
        z = np.zeros(m)
        parts.append(CollisionRows(
            kind=np.full(m, KIND_FACE_MIDPOINT, dtype=np.int64),
            pair=np.column_stack([f, np.full(m, o, dtype=np.int64)]),
            nodes=faces[f].copy(), weights=w[f].copy(), normal=nu,
            thickness=z.copy(), offset=Hn - np.einsum("fd,fd->f", nu, c[f]), mu=np.full(m, float(obs.mu)),
            obstacle_velocity=-obs.surface_velocity(c[f], t), time=np.full(m, np.nan), gap=Hn.copy()))
    return CollisionRows.concatenate(parts)
