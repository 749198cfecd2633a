"""Element stretch limits: no element edge longer than (1 + ε̄) times its rest length.

The thesis' rows (eq. 2.12–2.15) hold *nodal averages* of the first fundamental form: a pattern of
element strains whose averages vanish at every node (one element band stretched, the next
compressed) costs no residual, and the discrete cloth uses it instead of folding
(``docs/design/constraint-model.md``). The stretch limits close that gap with one inequality per
element edge and quad diagonal e = (a, b) of rest length L_e (the boundary edges are already
equality rows, eq. 2.7):

    ‖p_a − p_b‖ ≤ (1 + ε̄) L_e,

and, on the edges of (flat, linear) triangles, ‖p_a − p_b‖ ≥ (1 − ε̄) L_e,

the strain-limiting inequalities of Provot (1995) and Thomaszewski et al. (2009), here on top of
the nodal equalities rather than instead of them. An isometric deformation keeps every edge chord
at most as long as its geodesic, so the limits exclude none of the deformations the continuum
model allows (a chord shortens where a surface bends: quads, which bend across their diagonals,
get no lower bound) and cannot lock a fold. With the nodal averages held, an element can then
neither stretch by more than ε̄ nor shrink by much more than its neighbours stretch.

The projections enforce them with an active set (``isocloth.step.contact_projection``): a limit
enters the QPs as an inequality row once its edge is near the bound (linearised at the iterate with
u = (p_a − p_b)/‖p_a − p_b‖: weights (1, −1) on (a, b) and normal −u for an upper bound, +u for a
lower one, :func:`isocloth.contact.rows.stretch_limit_rows`), and a limit in a QP's working set is
*held* for the rest of the step, i.e. becomes the row ‖p_a − p_b‖² − b_e² = α_e λ_e (the form of
eq. 2.7, :meth:`InextensibilityConstraints.with_length_rows`, made compliant: beyond its bound the
edge answers with the fabric's tensile stiffness, :meth:`StretchLimits.compliance`). At the end of a
contact step a held upper bound whose multiplier pushes the edge's ends apart (or a lower bound whose
multiplier pulls them together) is released; the others stay held into the next step. Contact-free
steps hold every edge their fast projection leaves beyond its bound and project again, and release
an edge once it is shorter than its bound by more than a band (``Stepper.project_limited``,
``Stepper.release_slack``; docs/design/constraint-model.md §7).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from isocloth.fem.inextensibility import element_sides
from isocloth.mesh.mesh import Mesh

__all__ = ["StretchLimits", "stretch_limits", "DEFAULT_STRETCH_LIMIT"]

DEFAULT_STRETCH_LIMIT = 0.01
"""ε̄ of the default constraint model: 1 % (woven fabrics stretch 0.5–2 % under their own weight)."""


@dataclass(frozen=True, eq=False)
class StretchLimits:
    """Bounds on the lengths of element edges: ‖p_a − p_b‖ ≤ bound (sign +1, stretch) or
    ‖p_a − p_b‖ ≥ bound (sign −1, compression).

    Attributes
    ----------
    pairs : (s, 2) int64, nodes (a, b) of each limited edge (an edge with both bounds appears twice)
    rest_length : (s,) float64 [m], L_e
    sign : (s,) int8, +1 for an upper bound (1 + ε̄) L_e, −1 for a lower bound (1 − ε̄) L_e
    limit : float, ε̄ (dimensionless, > 0)
    """

    pairs: np.ndarray
    rest_length: np.ndarray
    sign: np.ndarray
    limit: float

    @property
    def count(self) -> int:
        return int(self.rest_length.size)

    @cached_property
    def bound(self) -> np.ndarray:
        """(s,) float64 [m], the bounds (1 ± ε̄) L_e."""
        return (1.0 + self.limit * self.sign) * self.rest_length

    def lengths(self, x: np.ndarray) -> np.ndarray:
        """(s,) float64 [m], ‖p_a − p_b‖ at positions x (n, 3) [m]."""
        return np.linalg.norm(x[self.pairs[:, 0]] - x[self.pairs[:, 1]], axis=1)

    def strain(self, x: np.ndarray) -> np.ndarray:
        """(s,) float64, engineering strain ‖p_a − p_b‖ / L_e − 1 of every limited edge."""
        return self.lengths(x) / self.rest_length - 1.0

    def violation(self, x: np.ndarray) -> np.ndarray:
        """(s,) float64, by how much each bound is exceeded at x (n, 3) [m], relative to L_e
        (positive: violated)."""
        return self.sign * (self.lengths(x) - self.bound) / self.rest_length

    def exceeding(self, x: np.ndarray, slack: float) -> np.ndarray:
        """(k,) int64 indices of the bounds exceeded at x (n, 3) [m] by more than ``slack`` (relative)."""
        return np.flatnonzero(self.violation(x) > slack)

    def compliance(self, held: np.ndarray, stiffness: float, dt: float) -> np.ndarray:
        """(h,) float64 [m²/kg], compliance α_e = 4 b_e² / (k dt²) of the squared-length rows
        ‖p_a − p_b‖² − b_e² of the held limits ``held`` (h,) int64, for a tensile stiffness k [N/m]
        and a step dt [s]. A row holding C_e = α_e λ_e, whose multiplier λ_e moves the ends by
        −M⁻¹∇C_eᵀλ_e (force 2 b_e λ_e / dt²), is the spring k (‖p_a − p_b‖ − b_e) ≈ k C_e / (2 b_e):
        beyond its bound the edge answers with the fabric's tensile stiffness per unit width."""
        return 4.0 * self.bound[held] ** 2 / (float(stiffness) * dt * dt)


def stretch_limits(mesh: Mesh, limit: float = DEFAULT_STRETCH_LIMIT, *, exclude: np.ndarray | None = None,
                   free_mask: np.ndarray | None = None, diagonals: bool = True,
                   compression: bool = True) -> StretchLimits:
    """The length limits of the elements of a mesh.

    Parameters
    ----------
    mesh : Mesh
        Triangles and/or quads; rest lengths come from the rest shape of each element
        (``mesh.rest_corners``); an edge whose two elements disagree on it (per-corner rest shapes
        of sewn garments) takes the longer, so that the limits never force a compression.
    limit : float
        ε̄ > 0 (dimensionless).
    exclude : (b, 2) int64, optional
        Edges to leave out (e.g. the boundary edges, whose lengths are equality rows), either order.
    free_mask : (n,) bool, optional
        Edges between two nodes that are both False (held) are left out: nothing can move them.
    diagonals : bool
        Also bound the stretch of both diagonals of every quad: a sheared quad lengthens one of
        them, and shear patterns with zero nodal average otherwise stay free (default True).
    compression : bool
        Also bound the compression of triangle edges: a linear triangle is flat, it folds only
        at its edges, so a shorter edge is in-plane compression, which the nodal averages let a
        sliver triangle take up in full (default True). Quads get no lower bound: a bilinear
        quad bends across its diagonals and its edges stay chords of it.

    Returns
    -------
    StretchLimits: every upper bound, sorted by (min node, max node), then the lower bounds.

    Raises
    ------
    ValueError
        If ``limit`` is not a finite number > 0 (0 would demand exact edge lengths: that locks).
    """
    if not (np.isfinite(limit) and limit > 0):
        raise ValueError(f"stretch limit must be a finite number > 0 (e.g. 0.01 for 1 %), got {limit!r}")
    n = mesh.node_count
    keys, pairs, lengths, corners = element_sides(mesh, diagonals=diagonals)
    if keys.size == 0:
        return StretchLimits(np.zeros((0, 2), np.int64), np.zeros(0), np.zeros(0, np.int8), float(limit))
    pairs = np.sort(pairs, axis=1)
    order = np.lexsort((-lengths, keys))  # by key, longest rest length first
    keys, lengths, pairs, tri = keys[order], lengths[order], pairs[order], corners[order] == 3
    first = np.r_[True, keys[1:] != keys[:-1]]
    in_triangle = np.logical_or.reduceat(tri, np.flatnonzero(first))  # the edge belongs to a triangle
    keys, lengths, pairs = keys[first], lengths[first], pairs[first]
    keep = np.ones(keys.size, dtype=bool)
    if exclude is not None and len(exclude):
        ex = np.asarray(exclude, dtype=np.int64)
        keep &= ~np.isin(keys, np.minimum(ex[:, 0], ex[:, 1]) * n + np.maximum(ex[:, 0], ex[:, 1]))
    if free_mask is not None:
        free = np.asarray(free_mask, dtype=bool)
        keep &= free[pairs[:, 0]] | free[pairs[:, 1]]
    low = keep & in_triangle if compression else np.zeros_like(keep)
    P = np.concatenate([pairs[keep], pairs[low]]).astype(np.int64)
    L = np.concatenate([lengths[keep], lengths[low]]).astype(np.float64)
    sign = np.concatenate([np.ones(int(keep.sum()), np.int8), -np.ones(int(low.sum()), np.int8)])
    return StretchLimits(P, L, sign, float(limit))
