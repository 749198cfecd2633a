"""Node–obstacle contacts at mesh vertices for the nodal frictional contact solver (Li et al. 2018
§5.2): proximity at the start of the step united with a continuous test on the predicted motion.

A node is in contact with an obstacle when its gap z (the obstacle's signed distance minus its
thickness τ, at the start of the step) is below τ/2 — proximity closer than 1.5 τ to the bare
surface, Li §5.2 — or when its position predicted with the contact-free velocities, x + δt v_free,
lies inside (z < 0). A node near several obstacles keeps the contact with the deepest predicted
penetration (Li §5.2's pruning, which the one-contact-per-vertex form of the solver needs). The
gap, the normal and the obstacle's surface velocity are taken at the start of the step (Li §4.2).
"""

from __future__ import annotations

import numpy as np

from isocloth.solvers.nodal_contact import NodalContacts

__all__ = ["obstacle_contacts"]


def obstacle_contacts(obstacles, x, x_predicted, t: float, nodes=None) -> NodalContacts:
    """The node–obstacle contacts of one step (module docstring).

    Parameters
    ----------
    obstacles : sequence of :class:`~isocloth.contact.obstacles.Obstacle`
    x, x_predicted : (n, 3) float64 [m], positions at the start of the step and after a contact-free step
    t : time [s] at the start of the step
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
    best = np.full(nodes.size, np.inf)
    gap = np.zeros(nodes.size)
    normal = np.zeros((nodes.size, 3))
    owner = np.full(nodes.size, -1)
    for k, ob in enumerate(obstacles):
        z, n = ob.evaluate_contact(x[nodes], t)
        z_pred, _ = ob.evaluate_contact(xp[nodes], t)
        touch = (z < 0.5 * ob.thickness) | (z_pred < 0.0)
        deeper = touch & (z_pred < best)
        best[deeper] = z_pred[deeper]
        gap[deeper] = z[deeper]
        normal[deeper] = n[deeper]
        owner[deeper] = k
    hit = np.flatnonzero(owner >= 0)
    vel = np.zeros((hit.size, 3))
    mu = np.zeros(hit.size)
    for k, ob in enumerate(obstacles):
        sel = hit[owner[hit] == k]
        if sel.size:
            at = np.isin(hit, sel)
            vel[at] = ob.surface_velocity(x[nodes[sel]], t)
            mu[at] = ob.mu
    return NodalContacts.of(nodes[hit], normal[hit], gap[hit], mu, body_velocity=vel)
