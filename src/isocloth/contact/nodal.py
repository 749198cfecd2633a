"""Node–obstacle contacts at mesh vertices for the nodal frictional contact solver (Li et al. 2018
§5.2): proximity at the start of the step united with a continuous test on the predicted motion.

A node is in contact with an obstacle when its gap z (the obstacle's signed distance minus its
thickness τ, at the start of the step) is below τ/2 — proximity closer than 1.5 τ to the bare
surface, Li §5.2 — or when its position predicted with the contact-free velocities, x + δt v_free,
lies inside the obstacle where the obstacle is at the end of the step. A node may touch several
obstacles (the solver duplicates it, Li §6); of two contacts of one node whose normals are within
``PRUNE_ANGLE`` only the one with the deeper predicted penetration is kept (Li §5.2). The gap, the
normal and the obstacle's surface velocity are taken at the start of the step (Li §4.2).

Cloth–cloth contacts (:func:`self_contacts`) come from the self-collision detector (node–face and
edge–edge pairs, continuous on x → x + δt v_free, with proximity): each side of a pair is relocated
to the vertex of its primitive with the largest barycentric weight (Li §5.2's nearest vertex),
pairs that collapse onto one vertex are dropped, of several pairs relocated onto the same two
vertices the deepest is kept, and the separation z = ν·Σ w_i x_i of the pair at the start of the
step is kept. A vertex may be in several contacts (the solver duplicates it, Li §6). A pair with
one side held by a grasp becomes a contact of the free side with a body moving at the held
vertex's velocity.

Pairs of the cloth with a thin obstacle or with a corner or an edge of an obstacle
(``ClothModel.obstacle_features``) are not moved to a vertex: Li §5 refines the mesh where they
touch so that the nearest vertex is close, and without that refinement a corner moved to the
nearest vertex sinks into the face by up to the mesh size and contacts moved onto one vertex from
faces on either side of a corner push it both ways. They stay contacts at the point of the face or
edge (``NodalContacts.face``), whose vertices share the contact's row of G.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from isocloth.solvers.nodal_contact import NodalContacts

__all__ = ["PRUNE_ANGLE", "merge_contacts", "obstacle_contacts", "self_contacts"]

PRUNE_ANGLE = np.radians(10.0)
"""Two contacts of one node whose normals are closer than this [rad] are one contact (Li §5.2)."""


def obstacle_contacts(obstacles, x, x_predicted, t: float, dt: float, nodes=None, *,
                      prune_angle: float = PRUNE_ANGLE) -> NodalContacts:
    """The node–obstacle contacts of one step (module docstring).

    Parameters
    ----------
    obstacles : sequence of :class:`~isocloth.contact.obstacles.Obstacle`
    x, x_predicted : (n, 3) float64 [m], positions at the start of the step and after a contact-free step
    t : time [s] at the start of the step; dt : the step [s] (the prediction is tested against the obstacles
        where they are at t + dt)
    nodes : (k,) int64, the nodes that may be in contact (default all; e.g. the free ones)

    Returns
    -------
    :class:`~isocloth.solvers.nodal_contact.NodalContacts` with ``node`` indices into x, gaps z [m]
    measured from the inflated surface (so the solver's thickness is 0).

    Raises
    ------
    ValueError
        If x and x_predicted differ in shape or are not (n, 3).
    """
    x = np.asarray(x, dtype=np.float64)
    xp = np.asarray(x_predicted, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != 3 or xp.shape != x.shape:
        raise ValueError(f"x and x_predicted must both be (n, 3), got {x.shape} and {xp.shape}")
    nodes = np.arange(x.shape[0]) if nodes is None else np.asarray(nodes, dtype=np.int64)
    found = []  # (node, gap, normal, predicted gap, velocity, mu) per obstacle
    for ob in obstacles:
        z, n = ob.evaluate_contact(x[nodes], t)
        z_pred, _ = ob.evaluate_contact(xp[nodes], t + dt)
        hit = np.flatnonzero((z < 0.5 * ob.thickness) | (z_pred < 0.0))
        if hit.size:
            found.append((nodes[hit], z[hit], n[hit], z_pred[hit], ob.surface_velocity(x[nodes[hit]], t),
                          np.full(hit.size, ob.mu)))
    if not found:
        return NodalContacts.empty()
    node, gap, normal, z_pred, vel, mu = (np.concatenate(c) for c in zip(*found))
    keep = _prune(node, np.full(node.size, -1), normal, z_pred, prune_angle)
    return NodalContacts.of(node[keep], normal[keep], gap[keep], mu[keep], body_velocity=vel[keep])


def _prune(node: np.ndarray, other: np.ndarray, normal: np.ndarray, depth: np.ndarray, angle: float,
           face=None, point=None) -> np.ndarray:
    """Indices kept (sorted), Li §5.2: contacts are taken deepest first (smallest ``depth``), and one is
    dropped when every vertex it involves is already pushed, by contacts taken before, in a direction
    within ``angle`` [rad] of its own (the normal as seen from each vertex: ν at the node, −ν at the
    other vertex of a self-contact; ``other`` −1 for a body). For body contacts: per node, one per
    direction. ``angle`` 0 keeps every contact.

    Contacts with face vertices (``face`` (c, 3), −1 for none) come after the others, and one is dropped
    when a kept one on the same vertices has a normal within ``angle``, or when each of its vertices
    has a kept body contact with a normal q within ``angle`` whose plane q·y ≥ q·x_v − z_v lies, at the
    contact's ``point`` p (c, 3) [m], at least as far out as the contact's own, q·x_v − z_v − q·p ≥ −z:
    the vertices' contacts then hold the point too (all of them on one flat side of a body)."""
    if angle <= 0:
        return np.arange(node.size, dtype=np.int64)
    cos = np.cos(angle)
    with_face = (face >= 0).any(axis=1) if face is not None else np.zeros(node.size, dtype=bool)
    pushed: dict = {}
    held: dict[int, list] = {}  # vertex → (normal q, plane q·x_v − z_v) of its kept body contacts
    keep = []
    order = np.argsort(depth, kind="stable")
    for i in np.concatenate([order[~with_face[order]], order[with_face[order]]]):
        if with_face[i]:
            verts = [int(node[i])] + [int(f) for f in face[i] if f >= 0]
            ends = [(tuple(sorted(verts)), normal[i])]
            if point is not None and all(any(normal[i] @ q >= cos and h - q @ point[i] >= -depth[i] - 1e-12
                                             for q, h in held.get(v, ())) for v in verts):
                continue
        else:
            ends = [(int(node[i]), normal[i])] + ([(int(other[i]), -normal[i])] if other[i] >= 0 else [])
        if all(any(n @ q >= cos for q in pushed.get(v, ())) for v, n in ends):
            continue
        keep.append(i)
        for v, n in ends:
            pushed.setdefault(v, []).append(n)
        if not with_face[i] and other[i] < 0 and point is not None:
            held.setdefault(int(node[i]), []).append((normal[i], normal[i] @ point[i] - depth[i]))
    return np.sort(np.array(keep, dtype=np.int64))


def self_contacts(rows, x, v, free, dt: float) -> NodalContacts:
    """Cloth–cloth and thin-obstacle contacts of one step (module docstring): the detector's cloth–cloth
    pairs relocated to vertices, its pairs with thin obstacles and obstacles' corners and edges at their
    points (:func:`_point_pairs`).

    Parameters
    ----------
    rows : the collision rows of the step, ``detector.detect(x, x_predicted, omega=0.5, proximity=True,
        t_prev=t, t=t + dt)`` of the model's :class:`~isocloth.contact.self_collision.SelfCollisions`
        (x_predicted: the contact-free prediction)
    x : (n, 3) float64 [m], positions at the start of the step
    v : (n, 3) float64 [m/s], velocities of the step (grasped nodes: their prescribed ones)
    free : (n,) bool, nodes that are unknowns
    dt : the step [s] (thin-obstacle rows hold the obstacle's part at the end of the step; its
        velocity brings it back to the start)

    Returns
    -------
    :class:`~isocloth.solvers.nodal_contact.NodalContacts`: self-contacts (``other`` ≥ 0) and body
    contacts (pairs with a held side, thin obstacles and obstacle corners and edges); gaps z − τ [m].
    """
    if rows.kind.size == 0:
        return NodalContacts.empty()
    cloth = np.all((rows.nodes >= 0) | (rows.weights == 0), axis=1)
    return _concatenate([_cloth_pairs(rows.take(cloth), x, v, free), _point_pairs(rows.take(~cloth), x, v, free, dt)])


def _cloth_pairs(rows, x, v, free) -> NodalContacts:
    """Cloth–cloth rows relocated to the vertex of largest weight on each side (module docstring)."""
    if rows.kind.size == 0:
        return NodalContacts.empty()
    w, nodes, nu = rows.weights, rows.nodes, rows.normal
    a = nodes[np.arange(len(w)), np.argmax(w, axis=1)]  # the side ν points to
    b = nodes[np.arange(len(w)), np.argmin(w, axis=1)]
    z = np.einsum("cd,cd->c", nu, np.einsum("ck,ckd->cd", w, x[nodes])) - rows.thickness
    mu = rows.mu
    pairs = set()
    out = {"node": [], "other": [], "normal": [], "gap": [], "mu": [], "vel": []}
    for i in np.argsort(z):  # deepest first
        j, k = int(a[i]), int(b[i])
        if j == k or (min(j, k), max(j, k)) in pairs or not (free[j] or free[k]):
            continue
        pairs.add((min(j, k), max(j, k)))
        if free[j] and free[k]:
            # the node is the side that moves into the contact faster (Li eq. 9 is symmetric; the
            # pruning of merge_contacts keeps one contact per node and direction)
            if (v[k] @ nu[i]) > -(v[j] @ nu[i]):
                node, other, n_, vel = k, j, -nu[i], np.zeros(3)
            else:
                node, other, n_, vel = j, k, nu[i], np.zeros(3)
        elif free[j]:  # k held: a body moving with it
            node, other, n_, vel = j, -1, nu[i], v[k]
        else:
            node, other, n_, vel = k, -1, -nu[i], v[j]
        for key, val in (("node", node), ("other", other), ("normal", n_), ("gap", z[i]), ("mu", mu[i]),
                         ("vel", vel)):
            out[key].append(val)
    if not out["node"]:
        return NodalContacts.empty()
    return NodalContacts.of(out["node"], np.array(out["normal"]), out["gap"], out["mu"], other=out["other"],
                            body_velocity=np.array(out["vel"]))


def _point_pairs(rows, x, v, free, dt: float) -> NodalContacts:
    """Rows H = ν·Σ w_i x_i + offset ≥ τ as contacts between the points of the primitives themselves
    (:class:`~isocloth.solvers.nodal_contact.NodalContacts` with ``face`` vertices), not moved to a
    vertex: relative velocity Σ_free w_i v_i − v_body, where the held vertices' part and the obstacle's
    (thin obstacles, an obstacle's corners and edges) make the body velocity, −(Σ_held w_i v_i + Σ_o w_o ȯ);
    gap H − τ at the start of the step; ``node`` the free vertex of largest |w_i|, the signs turned so
    that its weight is positive. A pair whose free vertices carry less than half of the cloth's weight
    is left out: the grasp moves that face or edge, and the contact would ask its free vertices for the
    whole approach over a small weight."""
    if rows.kind.size == 0:
        return NodalContacts.empty()
    on = rows.nodes >= 0
    idx = np.where(on, rows.nodes, 0)
    w = np.where(on, rows.weights, 0.0)
    w[np.abs(w) < 1e-9] = 0.0
    movable = on & free[idx] & (w != 0.0)
    # the rows' offsets are the obstacle's part at the end of the step: its velocity brings it to the start
    gap = rows.values(x) - dt * np.einsum("cd,cd->c", rows.normal, rows.obstacle_velocity)
    body = -rows.obstacle_velocity - np.einsum("ck,ckd->cd", np.where(movable, 0.0, w), v[idx])
    share = np.abs(np.where(movable, w, 0.0)).sum(axis=1)
    sel = np.flatnonzero(share >= 0.5 * np.abs(w).sum(axis=1) - 1e-12)
    if not sel.size:
        return NodalContacts.empty()
    wf = np.where(movable, w, 0.0)[sel]
    order = np.argsort(-np.abs(wf), axis=1, kind="stable")
    wk = np.take_along_axis(wf, order, axis=1)
    vk = np.where(wk != 0.0, np.take_along_axis(idx[sel], order, axis=1), -1)
    flip = np.where(wk[:, 0] < 0.0, -1.0, 1.0)
    return NodalContacts.of(vk[:, 0], flip[:, None] * rows.normal[sel], gap[sel], rows.mu[sel],
                            body_velocity=flip[:, None] * body[sel], face=vk[:, 1:], weights=flip[:, None] * wk)


def merge_contacts(*parts: NodalContacts, prune_angle: float = PRUNE_ANGLE, x=None) -> NodalContacts:
    """One :class:`NodalContacts` of several, pruned (Li §5.2): contacts are taken deepest first
    (smallest gap), and one is dropped when every vertex it involves is already pushed, by contacts
    taken before, in a direction within ``prune_angle`` [rad] of its own (the normal as seen from each
    vertex: ν at the node, −ν at the other vertex of a self-contact). Such redundant contacts
    constrain nothing more and make the Gauss–Seidel iterations slow; no vertex loses its last
    contact in a direction. Contacts at points of faces or edges are pruned as :func:`_prune` says,
    with ``x`` (n, 3) [m], the positions at the start of the step (without it, only against each other).
    """
    both = _concatenate(parts)
    point = None
    if x is not None and both.node.size:
        x = np.asarray(x, dtype=np.float64)
        verts = np.column_stack([both.node, both.face])
        total = both.weights.sum(axis=1)
        total = np.where(np.abs(total) > 1e-12, total, 1.0)  # (a pair of two sides has no single point)
        point = np.einsum("ck,ckd->cd", both.weights, x[np.maximum(verts, 0)]) / total[:, None]
    keep = _prune(both.node, both.other, both.normal, both.gap, prune_angle, both.face, point)
    return _take(both, keep)


def _concatenate(parts) -> NodalContacts:
    parts = [p for p in parts if p.node.size]
    if not parts:
        return NodalContacts.empty()
    return NodalContacts.of(**{f.name: np.concatenate([getattr(p, f.name) for p in parts])
                               for f in fields(NodalContacts)})


def _take(c: NodalContacts, keep: np.ndarray) -> NodalContacts:
    return NodalContacts.of(**{f.name: getattr(c, f.name)[keep] for f in fields(NodalContacts)})
