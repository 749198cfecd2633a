"""Intersection contour minimization (Volino & Magnenat-Thalmann 2006), the fail-safe of Li et al.
2018 (§7.4): where faces of the cloth intersect after a step, move the nodes down the gradient of
the total length of the intersection contour until it vanishes.

Two triangles that cross (no shared node) meet along a segment whose ends are edge–face crossings
Q: an edge (e0, e1) of one passing through the other's plane inside it, Q = (1 − t) e0 + t e1 with
(Q − a)·N = 0, N = (b − a) × (c − a). The contour length is L = Σ ‖Q1 − Q0‖ over the crossing
pairs. With w = ∂L/∂Q (the segment's unit direction, signed) and Q = α a + β b + γ c in the face,
implicit differentiation of (Q − a)·N = 0 gives the exact gradient

    ∂L/∂e0 = (1 − t) (w − N (E·w)/(E·N)),   ∂L/∂e1 = t (w − N (E·w)/(E·N)),
    ∂L/∂a = α N (E·w)/(E·N),   ∂L/∂b = β N (E·w)/(E·N),   ∂L/∂c = γ N (E·w)/(E·N),

E = e1 − e0: the edge slides through the face's plane, the face moves along its normal. Each
iteration moves the movable nodes against this gradient, scaled so that no node moves farther than
a fraction of the mean edge length, until no crossing pair is left or the iterations run out.
Volino & Magnenat-Thalmann approximate the gradient locally per crossing; this module differentiates
the polyline length exactly. Pairs of triangles sharing a node are not moved apart (their segment
starts at the node) but are counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isocloth.contact.intersection import self_intersections

__all__ = ["ICMResult", "contour_length_gradient", "intersection_contour_minimization"]

STEP_FRACTION = 0.05
"""Largest node displacement per iteration, as a fraction of the mean edge length."""


@dataclass
class ICMResult:
    """Outcome of :func:`intersection_contour_minimization`.

    Attributes
    ----------
    x : (n, 3) float64 [m], the moved positions
    initial_pairs, remaining_pairs : int, intersecting triangle pairs without a shared node before and after
    iterations : int
    largest_move : float [m], the largest distance a node moved
    """

    x: np.ndarray
    initial_pairs: int
    remaining_pairs: int
    iterations: int
    largest_move: float


def _crossings(x: np.ndarray, tri: np.ndarray, pairs: np.ndarray):
    """Edge–face crossings of the pairs without a shared node that cross at exactly two points:
    (edge nodes (k, 2, 2), face nodes (k, 2, 3), t (k, 2), face weights (k, 2, 3)), k such pairs."""
    A, B = tri[pairs[:, 0]], tri[pairs[:, 1]]
    edges, faces = [], []
    for tri_e, tri_f in ((A, B), (B, A)):
        for i, j in ((0, 1), (1, 2), (2, 0)):
            edges.append(tri_e[:, [i, j]])
            faces.append(tri_f)
    edges, faces = np.stack(edges, axis=1), np.stack(faces, axis=1)  # (p, 6, 2), (p, 6, 3)
    e0, e1 = x[edges[..., 0]], x[edges[..., 1]]
    a, b, c = (x[faces[..., k]] for k in range(3))
    N = np.cross(b - a, c - a)
    E = e1 - e0
    den = np.einsum("pkd,pkd->pk", E, N)
    ok = np.abs(den) > 1e-300
    t = np.where(ok, np.einsum("pkd,pkd->pk", a - e0, N) / np.where(ok, den, 1.0), -1.0)
    Q = e0 + t[..., None] * E
    nn = np.einsum("pkd,pkd->pk", N, N)
    beta = np.einsum("pkd,pkd->pk", np.cross(Q - a, c - a), N) / np.where(nn > 0, nn, 1.0)
    gamma = np.einsum("pkd,pkd->pk", np.cross(b - a, Q - a), N) / np.where(nn > 0, nn, 1.0)
    weights = np.stack([1.0 - beta - gamma, beta, gamma], axis=-1)
    hit = ok & (t >= 0.0) & (t <= 1.0) & (weights >= 0.0).all(axis=-1) & (nn > 0)
    two = hit.sum(axis=1) == 2
    order = np.argsort(~hit[two], axis=1, kind="stable")[:, :2]  # the two crossings of each such pair

    def pick(arr):
        return np.take_along_axis(arr[two], order.reshape(order.shape + (1,) * (arr.ndim - 2)), axis=1)

    return pick(edges), pick(faces), pick(t), pick(weights)


def contour_length_gradient(x, triangles, pairs) -> tuple[float, np.ndarray]:
    """Length L [m] of the intersection contour of crossing triangle pairs and its exact gradient
    ∂L/∂x (n, 3) (module docstring).

    Parameters
    ----------
    x : (n, 3) float64 [m]; triangles : (t, 3) int64
    pairs : (p, 2) int64, intersecting triangle pairs (:func:`~isocloth.contact.intersection.self_intersections`);
        pairs sharing a node or not crossing at two points contribute nothing
    """
    x = np.asarray(x, dtype=np.float64)
    tri = np.asarray(triangles, dtype=np.int64)
    grad = np.zeros_like(x)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if not pairs.size:
        return 0.0, grad
    edges, faces, t, wts = _crossings(x, tri, pairs)
    if not edges.size:
        return 0.0, grad
    e0, e1 = x[edges[..., 0]], x[edges[..., 1]]
    Q = e0 + t[..., None] * (e1 - e0)
    seg = Q[:, 1] - Q[:, 0]
    length = np.linalg.norm(seg, axis=1)
    u = np.where(length[:, None] > 0, seg / np.where(length > 0, length, 1.0)[:, None], 0.0)
    w = np.stack([-u, u], axis=1)  # ∂L/∂Q of each end
    a, b, c = (x[faces[..., k]] for k in range(3))
    N = np.cross(b - a, c - a)
    E = e1 - e0
    s = np.einsum("pkd,pkd->pk", E, w) / np.einsum("pkd,pkd->pk", E, N)  # (E·w)/(E·N)
    slide = w - s[..., None] * N
    push = s[..., None] * N
    np.add.at(grad, edges[..., 0], (1.0 - t)[..., None] * slide)
    np.add.at(grad, edges[..., 1], t[..., None] * slide)
    for k in range(3):
        np.add.at(grad, faces[..., k], wts[..., k, None] * push)
    return float(length.sum()), grad


def intersection_contour_minimization(x, triangles, movable=None, *, max_iterations: int = 200) -> ICMResult:
    """Remove intersections of a triangle mesh by descending the contour length (module docstring).

    Parameters
    ----------
    x : (n, 3) float64 [m]; triangles : (t, 3) int64
    movable : (n,) bool, nodes that may move (default all; e.g. not the grasped ones)
    max_iterations : int ≥ 1

    Returns
    -------
    :class:`ICMResult` (x is a new array)

    Raises
    ------
    ValueError
        If max_iterations < 1 or the shapes disagree.
    """
    if max_iterations < 1:
        raise ValueError(f"max_iterations must be >= 1, got {max_iterations}")
    x = np.array(x, dtype=np.float64)
    tri = np.asarray(triangles, dtype=np.int64)
    free = np.ones(len(x), dtype=bool) if movable is None else np.asarray(movable, dtype=bool)
    if free.shape != (len(x),):
        raise ValueError(f"movable must be ({len(x)},) bool, got shape {free.shape}")
    start = x.copy()
    edge = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]])
    h = STEP_FRACTION * float(np.linalg.norm(x[edge[:, 1]] - x[edge[:, 0]], axis=1).mean())
    pairs = self_intersections(x, tri, vertex_adjacent=False)
    initial, it = len(pairs), 0
    while len(pairs) and it < max_iterations:
        it += 1
        _, g = contour_length_gradient(x, tri, pairs)
        g[~free] = 0.0
        top = np.linalg.norm(g, axis=1).max()
        if top == 0.0:
            break
        x -= (h / top) * g
        pairs = self_intersections(x, tri, vertex_adjacent=False)
    return ICMResult(x, initial, len(pairs), it, float(np.linalg.norm(x - start, axis=1).max()))
