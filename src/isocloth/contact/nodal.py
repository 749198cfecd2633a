"""Node–obstacle contacts at mesh vertices for the nodal frictional contact solver (Li et al. 2018
§5.2): proximity at the start of the step united with a continuous test on the predicted motion.

A node is in contact with an obstacle when its gap z (the obstacle's signed distance minus its
thickness τ, at the start of the step) is below τ/2 — proximity closer than 1.5 τ to the bare
surface, Li §5.2 — or when its position predicted with the contact-free velocities, x + δt v_free,
lies inside the obstacle where the obstacle is at the end of the step. A node may touch several
obstacles (the solver duplicates it, Li §6); of two contacts of one node whose normals are within
``PRUNE_ANGLE`` only the one with the deeper predicted penetration is kept (Li §5.2). The gap, the normal and the obstacle's surface velocity are taken at
the start of the step (Li §4.2).

Cloth–cloth contacts (:func:`self_contacts`) come from the self-collision detector (node–face and
edge–edge pairs, continuous on x → x + δt v_free, with proximity): each side of a pair is relocated
to the vertex of its primitive with the largest barycentric weight (Li §5.2's nearest vertex),
pairs that collapse onto one vertex are dropped, of several pairs relocated onto the same two
vertices the deepest is kept, and the separation z = ν·Σ w_i x_i of the pair at the start of the
step is kept. A vertex may be in several contacts (the solver duplicates it, Li §6). A pair with
one side held by a grasp becomes a contact of the free side with a body moving at the held
vertex's velocity.
"""

from __future__ import annotations

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


def _prune(node: np.ndarray, other: np.ndarray, normal: np.ndarray, depth: np.ndarray, angle: float) -> np.ndarray:
    """Indices kept (sorted), Li §5.2: contacts are taken deepest first (smallest ``depth``), and one is
    dropped when every vertex it involves is already pushed, by contacts taken before, in a direction
    within ``angle`` [rad] of its own (the normal as seen from each vertex: ν at the node, −ν at the
    other vertex of a self-contact; ``other`` −1 for a body). For body contacts: per node, one per
    direction. ``angle`` 0 keeps every contact."""
    if angle <= 0:
        return np.arange(node.size, dtype=np.int64)
    cos = np.cos(angle)
    pushed: dict[int, list] = {}
    keep = []
    for i in np.argsort(depth, kind="stable"):
        ends = [(int(node[i]), normal[i])] + ([(int(other[i]), -normal[i])] if other[i] >= 0 else [])
        if all(any(n @ q >= cos for q in pushed.get(v, ())) for v, n in ends):
            continue
        keep.append(i)
        for v, n in ends:
            pushed.setdefault(v, []).append(n)
    return np.sort(np.array(keep, dtype=np.int64))


def self_contacts(rows, x, v, free) -> NodalContacts:
    """Cloth–cloth contacts of one step (module docstring): the detector's pairs relocated to vertices.

    Parameters
    ----------
    rows : the collision rows of the step, ``detector.detect(x, x_predicted, omega=0.5, proximity=True)`` of
        the model's :class:`~isocloth.contact.self_collision.SelfCollisions` (x_predicted: the contact-free
        prediction)
    x : (n, 3) float64 [m], positions at the start of the step
    v : (n, 3) float64 [m/s], velocities of the step (grasped nodes: their prescribed ones)
    free : (n,) bool, nodes that are unknowns

    Returns
    -------
    :class:`~isocloth.solvers.nodal_contact.NodalContacts`: self-contacts (``other`` ≥ 0) and, for pairs
    with a held side, body contacts; gaps z − τ0 [m].
    """
    if rows.kind.size == 0:
        return NodalContacts.empty()
    cloth = np.all((rows.nodes >= 0) | (rows.weights == 0), axis=1)  # thin-obstacle rows are not cloth pairs
    w, nodes, nu = rows.weights[cloth], rows.nodes[cloth], rows.normal[cloth]
    a = nodes[np.arange(len(w)), np.argmax(w, axis=1)]  # the side ν points to
    b = nodes[np.arange(len(w)), np.argmin(w, axis=1)]
    xs = np.where(nodes[..., None] >= 0, x[np.maximum(nodes, 0)], 0.0)
    z = np.einsum("cd,cd->c", nu, np.einsum("ck,ckd->cd", w, xs)) - rows.thickness[cloth]
    mu = rows.mu[cloth]
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


def merge_contacts(*parts: NodalContacts, prune_angle: float = PRUNE_ANGLE) -> NodalContacts:
    """One :class:`NodalContacts` of several, pruned (Li §5.2): contacts are taken deepest first
    (smallest gap), and one is dropped when every vertex it involves is already pushed, by contacts
    taken before, in a direction within ``prune_angle`` [rad] of its own (the normal as seen from each
    vertex: ν at the node, −ν at the other vertex of a self-contact). Such redundant contacts
    constrain nothing more and make the Gauss–Seidel iterations slow; no vertex loses its last
    contact in a direction."""
    parts = [p for p in parts if p.node.size]
    if not parts:
        return NodalContacts.empty()
    cat = lambda f: np.concatenate([getattr(p, f) for p in parts])  # noqa: E731
    node, other, normal, gap = cat("node"), cat("other"), cat("normal"), cat("gap")
    keep = _prune(node, other, normal, gap, prune_angle)
    return NodalContacts.of(node[keep], normal[keep], gap[keep], cat("mu")[keep], other=other[keep],
                            body_velocity=cat("body_velocity")[keep])
