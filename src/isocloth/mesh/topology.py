"""Connectivity and simple geometry of a :class:`~isocloth.mesh.mesh.Mesh`.

Faces are numbered triangles first, then quads: face ``f < t`` is ``mesh.triangles[f]`` and
face ``f >= t`` is ``mesh.quads[f - t]``. A face's *half-edges* follow its counter-clockwise
node cycle (``a -> b`` for consecutive corners); an *edge* is the unordered node pair. Quad
diagonals are not edges. All functions are pure and vectorised; none of them raises on
topological defects (see :mod:`isocloth.mesh.quality` for those).
"""

from __future__ import annotations

import numpy as np

from isocloth.mesh.mesh import Mesh

__all__ = [
    "edges",
    "edge_face_counts",
    "boundary_edges",
    "boundary_loops",
    "boundary_nodes",
    "interior_nodes",
    "used_nodes",
    "euler_characteristic",
    "corner_angle_sums",
    "corner_nodes",
    "element_areas",
    "rest_element_areas",
]


# ---------------------------------------------------------------- half-edges
def _half_edges(mesh: Mesh) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All half-edges: ``(start, end, face)``, each (h,) int64, self-loops dropped.

    Half-edges are listed face by face (triangles first), corner by corner.
    """
    tri, quad = mesh.triangles, mesh.quads
    start = np.concatenate([tri.ravel(), quad.ravel()])
    end = np.concatenate([np.roll(tri, -1, axis=1).ravel(), np.roll(quad, -1, axis=1).ravel()])
    t, q = tri.shape[0], quad.shape[0]
    face = np.concatenate([np.repeat(np.arange(t, dtype=np.int64), 3),
                           np.repeat(np.arange(t, t + q, dtype=np.int64), 4)])
    keep = start != end
    return start[keep], end[keep], face[keep]


def _edge_table(mesh: Mesh):
    """Unique edges and the map from half-edges to them.

    Returns
    -------
    edge_nodes : (e, 2) int64, sorted pairs in lexicographic order
    inverse : (h,) int64, edge index of every half-edge of :func:`_half_edges`
    counts : (e,) int64, number of half-edges on each edge
    start, end, face : (h,) int64, the half-edges
    """
    start, end, face = _half_edges(mesh)
    lo, hi = np.minimum(start, end), np.maximum(start, end)
    n = max(mesh.node_count, 1)
    keys, inverse, counts = np.unique(lo * n + hi, return_inverse=True, return_counts=True)
    edge_nodes = np.stack([keys // n, keys % n], axis=1).astype(np.int64)
    return edge_nodes, inverse.ravel().astype(np.int64), counts.astype(np.int64), start, end, face


def edges(mesh: Mesh) -> np.ndarray:
    """Unique undirected edges of all faces.

    Returns
    -------
    (e, 2) int64
        Node pairs ``(i, j)`` with ``i < j``, rows in lexicographic order. Quad sides only
        (no diagonals); repeated nodes of degenerate faces give no edge.
    """
    return _edge_table(mesh)[0]


def edge_face_counts(mesh: Mesh) -> np.ndarray:
    """Number of faces using each edge of :func:`edges` (1 boundary, 2 interior, >2 non-manifold).

    Returns
    -------
    (e,) int64
    """
    return _edge_table(mesh)[2]


def boundary_edges(mesh: Mesh) -> np.ndarray:
    """Edges used by exactly one face, oriented as in that face's counter-clockwise cycle.

    The face therefore lies to the left of each edge ``a -> b`` (seen from its front side).

    Returns
    -------
    (b, 2) int64
        ``(a, b)`` rows, in the order of the corresponding rows of :func:`edges`.
    """
    _, inverse, counts, start, end, _ = _edge_table(mesh)
    h = np.flatnonzero(counts[inverse] == 1)
    h = h[np.argsort(inverse[h], kind="stable")]
    return np.stack([start[h], end[h]], axis=1)


def _next_around(mesh: Mesh, start, end, face, a: int, b: int) -> int | None:
    """For boundary half-edge ``a -> b``: the boundary half-edge leaving ``b`` in the same fan.

    Rotates about ``b`` through the faces sharing manifold, consistently oriented edges with
    the face of ``a -> b``. Returns the half-edge index (into ``start``/``end``/``face``) or
    None when the walk leaves that kind of neighbourhood.
    """
    t = mesh.triangle_count
    hit = np.flatnonzero((start == a) & (end == b))
    if hit.size != 1:
        return None
    f = int(face[hit[0]])
    for _ in range(face.size):
        nodes = mesh.triangles[f] if f < t else mesh.quads[f - t]
        k = np.flatnonzero(nodes == b)
        if k.size != 1:
            return None
        c = int(nodes[(k[0] + 1) % nodes.size])
        on_edge = np.flatnonzero(((start == b) & (end == c)) | ((start == c) & (end == b)))
        if on_edge.size == 1:
            return int(on_edge[0])
        back = on_edge[start[on_edge] == c]
        if on_edge.size != 2 or back.size != 1:
            return None
        f = int(face[back[0]])
    return None


def boundary_loops(mesh: Mesh) -> list[np.ndarray]:
    """Closed boundary curves as ordered node lists, the faces on their left.

    Follows the oriented :func:`boundary_edges`. At a node where several boundary curves touch
    (a "bow-tie" node) the loop continues with the boundary edge of the same face fan. Each
    loop starts at its smallest node index. For meshes with inconsistent face orientation the
    edges may not close up; such open chains are returned as well (their first node has no
    incoming boundary edge).

    Returns
    -------
    list of (k,) int64
        One array per loop (the closing node is not repeated), sorted by length descending,
        then by first node.
    """
    be = boundary_edges(mesh)
    if be.shape[0] == 0:
        return []
    out_deg = np.bincount(be[:, 0], minlength=mesh.node_count)
    in_deg = np.bincount(be[:, 1], minlength=mesh.node_count)
    order = np.argsort(be[:, 0], kind="stable")
    first_out = np.searchsorted(be[order, 0], np.arange(mesh.node_count))
    used = np.zeros(be.shape[0], dtype=bool)
    he = None  # half-edge arrays, only computed at ambiguous nodes
    loops: list[np.ndarray] = []

    def successor(e: int) -> int | None:
        """The boundary edge after ``e`` (possibly already used: the loop is then closed)."""
        nonlocal he
        b = int(be[e, 1])
        cands = order[first_out[b]:first_out[b] + out_deg[b]]
        if cands.size <= 1:
            return int(cands[0]) if cands.size else None
        if he is None:
            he = _half_edges(mesh)
        h = _next_around(mesh, *he, int(be[e, 0]), b)
        if h is not None:
            hit = cands[be[cands, 1] == he[1][h]]
            if hit.size:
                return int(hit[0])
        free = cands[~used[cands]]
        return int(free[0]) if free.size else None

    # open chains first (only for inconsistent orientation), then closed loops
    starts = np.flatnonzero(out_deg > in_deg)
    seeds = [int(e) for s in starts for e in order[first_out[s]:first_out[s] + out_deg[s]]]
    seeds += list(range(be.shape[0]))
    for e0 in seeds:
        if used[e0]:
            continue
        chain = [int(be[e0, 0])]
        e: int | None = e0
        while e is not None and not used[e]:
            used[e] = True
            chain.append(int(be[e, 1]))
            e = successor(e)
        if chain[-1] == chain[0] and len(chain) > 1:
            loop = np.asarray(chain[:-1], dtype=np.int64)
            loop = np.roll(loop, -int(np.argmin(loop)))
        else:
            loop = np.asarray(chain, dtype=np.int64)
        loops.append(loop)
    loops.sort(key=lambda l: (-l.size, int(l[0])))
    return loops


def used_nodes(mesh: Mesh) -> np.ndarray:
    """Nodes referenced by at least one face: (k,) int64, ascending."""
    return np.unique(np.concatenate([mesh.triangles.ravel(), mesh.quads.ravel()]))


def boundary_nodes(mesh: Mesh) -> np.ndarray:
    """Nodes on a boundary edge: (k,) int64, ascending."""
    return np.unique(boundary_edges(mesh))


def interior_nodes(mesh: Mesh) -> np.ndarray:
    """Nodes used by some face and not on the boundary: (k,) int64, ascending."""
    return np.setdiff1d(used_nodes(mesh), boundary_nodes(mesh), assume_unique=True)


def euler_characteristic(mesh: Mesh) -> int:
    """χ = V − E + F, V counting used nodes only (1 for a disk, 0 for an annulus, 2 − 2g − b)."""
    return int(used_nodes(mesh).size - edges(mesh).shape[0] + mesh.face_count)


# ------------------------------------------------------------------ geometry
def _corner_angles(corners: np.ndarray) -> np.ndarray:
    """Interior angle [rad] at every corner of (f, k, 3) polygons: (f, k) float64."""
    if corners.shape[0] == 0:
        return np.zeros(corners.shape[:2])
    to_next = np.roll(corners, -1, axis=1) - corners
    to_prev = np.roll(corners, 1, axis=1) - corners
    cross = np.linalg.norm(np.cross(to_next, to_prev), axis=2)
    dot = np.einsum("fkd,fkd->fk", to_next, to_prev)
    return np.arctan2(cross, dot)


def corner_angle_sums(mesh: Mesh) -> np.ndarray:
    """Sum over incident faces of the rest-shape interior angle at each node.

    Uses ``mesh.rest_corners`` (per-element rest positions); a quad contributes the angle
    between its two sides at the corner.

    Returns
    -------
    (n,) float64
        Angle sums [deg]; 0 for unused nodes, 360 for interior nodes of a flat rest shape.
    """
    tri_c, quad_c = mesh.rest_corners
    nodes = np.concatenate([mesh.triangles.ravel(), mesh.quads.ravel()])
    ang = np.concatenate([_corner_angles(tri_c).ravel(), _corner_angles(quad_c).ravel()])
    return np.degrees(np.bincount(nodes, weights=ang, minlength=mesh.node_count))


def corner_nodes(mesh: Mesh, angle_deg: float = 45.0) -> np.ndarray:
    """Boundary nodes where the boundary turns sharply in the rest shape.

    The rule for the corners of a general garment: a boundary node is a corner when the sum
    of the rest interior angles at that node over all incident faces (triangles and quads,
    from ``mesh.rest_corners``, so seams joining separately flat panels are handled) is at
    most ``180 − angle_deg`` degrees, i.e. the boundary turns there by at least
    ``angle_deg``. A rectangle grid gives its 4 corners; a disk or annulus with at least 16
    boundary segments per circle gives none (its boundary turns by 360°/segments at a node).

    Parameters
    ----------
    mesh : Mesh
    angle_deg : float
        Minimum turning angle [deg], in (0, 180).

    Returns
    -------
    (k,) int64
        Corner node indices, ascending.

    Raises
    ------
    ValueError
        If ``angle_deg`` is outside (0, 180).
    """
    if not 0.0 < angle_deg < 180.0:
        raise ValueError(f"angle_deg must be in (0, 180) degrees, got {angle_deg}")
    bn = boundary_nodes(mesh)
    sums = corner_angle_sums(mesh)[bn]
    return bn[sums <= 180.0 - angle_deg + 1e-9]


def _areas(tri_corners: np.ndarray, quad_corners: np.ndarray) -> np.ndarray:
    """Triangle then quad areas [m²] from corner arrays (t, 3, 3) and (q, 4, 3) (numba kernel)."""
    from isocloth.mesh._area_kernels import element_areas_kernel

    out = np.empty(tri_corners.shape[0] + quad_corners.shape[0])
    element_areas_kernel(np.ascontiguousarray(tri_corners, dtype=np.float64).reshape(-1, 3, 3),
                         np.ascontiguousarray(quad_corners, dtype=np.float64).reshape(-1, 4, 3), out)
    return out


def element_areas(mesh: Mesh, positions: np.ndarray | None = None) -> np.ndarray:
    """Areas of all elements in a configuration.

    Triangles: half the norm of the edge cross product. Quads: area of the bilinear surface
    (shape functions N1 = ¼(1−ξ)(1−η), N2 = ¼(1+ξ)(1−η), N3 = ¼(1+ξ)(1+η), N4 = ¼(1−ξ)(1+η)),
    integrated with the 2×2 Gauss rule over [−1, 1]².

    Parameters
    ----------
    mesh : Mesh
    positions : (n, 3) float64 [m], optional
        Node positions; default ``mesh.vertices``.

    Returns
    -------
    (t + q,) float64
        Areas [m²], triangles first, then quads.

    Raises
    ------
    ValueError
        If ``positions`` does not have shape (n, 3).
    """
    x = mesh.vertices if positions is None else np.asarray(positions, dtype=np.float64)
    if x.shape != mesh.vertices.shape:
        raise ValueError(f"positions must have shape {mesh.vertices.shape}; got {x.shape}")
    return _areas(x[mesh.triangles], x[mesh.quads])


def rest_element_areas(mesh: Mesh) -> np.ndarray:
    """Rest areas [m²] of all elements from ``mesh.rest_corners``: (t + q,) float64.

    Same rules and order as :func:`element_areas`.
    """
    return _areas(*mesh.rest_corners)
