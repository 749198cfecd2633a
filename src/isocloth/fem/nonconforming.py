"""Nonconforming (Crouzeix–Raviart) discretisation of the isometry constraints.

Source: English & Bridson, "Animating developable surfaces using nonconforming elements",
SIGGRAPH 2008 (per-element rows on midpoint unknowns, the ghost surface); Crouzeix & Raviart 1973
(the P1 nonconforming element); bending: the thesis' energy (Coltraro et al., §2.5; Bergou et al.
2006) of the ghost surface.

The unknowns are the positions y_e of the **edge midpoints** of a triangle mesh (quads are split
into two triangles along their shorter rest diagonal). Inside a triangle the deformation is the
affine map through its three midpoints, so the triangle's first fundamental form (E, F, G, or
equivalently its three edge lengths) is held **exactly** by three rows on its *medial triangle*:

    C_{t,k}(y) = ‖y_{e_i} − y_{e_j}‖² − (½ l_k)² = 0,                       (thesis eq. 2.7's form)

where e_i, e_j are the two edges of t adjacent to corner k and l_k is the rest length of the edge
opposite corner k (taken from the triangle's own rest corners, so garments with per-corner rest
coordinates keep their panels' metric). Rows of different triangles share an unknown only through
a midpoint: a mesh of F triangles has about 1.5 F edges, so 4.5 F unknowns against 3 F rows.

The **ghost surface** is the conforming mesh on the original vertices with positions

    x_v = (1 / |T(v)|) Σ_{t ∋ v} (y_{e_a} + y_{e_b} − y_{e_o}),

the mean over the triangles t around v of the value of t's affine map at v (e_a, e_b the edges of
t at v, e_o the one opposite). It is a fixed sparse linear map G (n, E) with G P = I, where P maps
vertex positions to edge midpoints, so the ghost of a state built from vertex positions is those
positions exactly.

The **simulated mesh** of the solver is the *rectified* mesh: its nodes are the midpoints, its
faces the medial triangles and, around every vertex, the fan of the midpoints of its edges. It is
a conforming triangle mesh through the unknowns, on which obstacles, self-collisions and thin
obstacles act node-wise with the usual rows.

The medial triangles are joined only at their corners, so the rows leave floppy modes (the
triangles counter-rotate and the surface shrinks or shears with every row met). The **jump energy**
½ k yᵀ J y (:func:`conformity_matrix`) penalises the mismatch of neighbouring elements at the
vertices; it vanishes on every conforming state y = P x, so no isometry of the ghost pays for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from isocloth.mesh.mesh import Mesh

__all__ = ["CrouzeixRaviart", "crouzeix_raviart", "split_quads", "jump_operator", "conformity_matrix", "JUMP_WEIGHT",
           "CONFORMITY_STIFFNESS", "edge_jump_operator", "EDGE_JUMP_WEIGHT"]

CONFORMITY_STIFFNESS = 1000.0
"""k [N/m] of the jump energy ½ k yᵀ J y (:func:`conformity_matrix`) in models built by
``ModelBuilder`` (docs/design/nonconforming.md)."""


def split_quads(mesh: Mesh) -> tuple[np.ndarray, np.ndarray]:
    """The triangles of a mesh with every quad split along its shorter rest diagonal.

    Returns
    -------
    triangles : (t, 3) int64, counter-clockwise (mesh triangles first, then two per quad)
    rest_corners : (t, 3, 3) float64 [m], each triangle's own rest corners (per-corner rest kept)

    Ties (squares) alternate between the two diagonals from quad to quad, so a regular grid is not
    biased towards folds along one diagonal.
    """
    tri_c, quad_c = mesh.rest_corners
    tris, corners = [mesh.triangles], [tri_c]
    if mesh.quad_count:
        q, qc = mesh.quads, quad_c
        d02 = np.linalg.norm(qc[:, 2] - qc[:, 0], axis=1)
        d13 = np.linalg.norm(qc[:, 3] - qc[:, 1], axis=1)
        tie = np.isclose(d02, d13, rtol=1e-9, atol=0.0)
        use02 = np.where(tie, np.arange(len(q)) % 2 == 0, d02 < d13)
        a = np.where(use02[:, None], np.array([0, 1, 2]), np.array([0, 1, 3]))
        b = np.where(use02[:, None], np.array([0, 2, 3]), np.array([1, 2, 3]))
        for sel in (a, b):
            tris.append(np.take_along_axis(q, sel, axis=1))
            corners.append(np.take_along_axis(qc, sel[:, :, None], axis=1))
    return np.concatenate(tris).astype(np.int64), np.concatenate(corners)


@dataclass(frozen=True, eq=False)
class CrouzeixRaviart:
    """The nonconforming element of one mesh (module docstring).

    Attributes
    ----------
    mesh : Mesh, the conforming (ghost) mesh as given, n vertices
    triangles : (t, 3) int64, its triangles with quads split (:func:`split_quads`)
    rest_corners : (t, 3, 3) float64 [m], each triangle's rest corners
    edges : (E, 2) int64, vertex pairs (a < b) of the triangles' edges; edge e's midpoint is unknown e
    face_edges : (t, 3) int64, the edge opposite corner k of triangle t
    midpoint_map : (E, n) csr float64, P: midpoints y = P x of vertex positions x
    ghost_map : (n, E) csr float64, G: ghost vertices x = G y (G P = I)
    """

    mesh: Mesh
    triangles: np.ndarray
    rest_corners: np.ndarray
    edges: np.ndarray
    face_edges: np.ndarray
    midpoint_map: sp.csr_matrix
    ghost_map: sp.csr_matrix

    @property
    def unknown_count(self) -> int:
        """E, the number of edge midpoints."""
        return int(self.edges.shape[0])

    @property
    def vertex_count(self) -> int:
        return self.mesh.node_count

    @cached_property
    def ghost_mesh(self) -> Mesh:
        """The ghost surface's mesh: the vertices of :attr:`mesh` with its triangles and its quads split
        as the element splits them (:attr:`triangles`, each with its rest corners), so that a quad
        folded along its diagonal is drawn, checked and measured as the model folds it."""
        m = self.mesh
        return Mesh(m.vertices, triangles=self.triangles, rest_triangle_corners=self.rest_corners,
                    name=m.name, rest_source=m.rest_source)

    def midpoints(self, x: np.ndarray) -> np.ndarray:
        """Edge midpoints (E, 3) float64 [m] of vertex positions x (n, 3) [m]."""
        return np.asarray(self.midpoint_map @ x)

    def ghost(self, y: np.ndarray) -> np.ndarray:
        """Ghost vertex positions (n, 3) float64 [m] of midpoint positions y (E, 3) [m]."""
        return np.asarray(self.ghost_map @ y)

    def rest_areas(self) -> np.ndarray:
        """(t,) float64 [m²], rest areas of the triangles."""
        c = self.rest_corners
        return 0.5 * np.linalg.norm(np.cross(c[:, 1] - c[:, 0], c[:, 2] - c[:, 0]), axis=1)

    def lumped_mass(self) -> np.ndarray:
        """(E,) float64 [m²]: the Crouzeix–Raviart mass matrix, which is diagonal (∫_t φ_i φ_j dA =
        A_t/3 δ_ij): a third of each adjacent triangle's rest area. Sums to the rest area."""
        m = np.zeros(self.unknown_count)
        np.add.at(m, self.face_edges.ravel(), np.repeat(self.rest_areas() / 3.0, 3))
        return m

    def medial_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows' midpoint pairs and targets: ((3t, 2) int64, (3t,) float64 [m]); row 3t + k
        joins the two edges adjacent to corner k of triangle t, at half the rest length of the edge
        opposite corner k."""
        fe, c = self.face_edges, self.rest_corners
        pairs = np.stack([fe[:, [1, 2, 0]], fe[:, [2, 0, 1]]], axis=2).reshape(-1, 2)
        opposite = np.linalg.norm(c[:, [2, 0, 1]] - c[:, [1, 2, 0]], axis=2)  # |X_{k+2} − X_{k+1}|
        return pairs, 0.5 * opposite.ravel()

    def element_edge_lengths(self, y: np.ndarray) -> np.ndarray:
        """(t, 3) float64 [m]: the edge lengths of every triangle's affine map at midpoints y,
        twice its medial triangle's sides (edge opposite corner k in column k)."""
        pairs, _ = self.medial_pairs()
        return 2.0 * np.linalg.norm(y[pairs[:, 0]] - y[pairs[:, 1]], axis=1).reshape(-1, 3)

    def element_strain(self, y: np.ndarray) -> np.ndarray:
        """(t, 3) float64: relative edge-length change of every triangle against its rest."""
        _, target = self.medial_pairs()
        return self.element_edge_lengths(y) / (2.0 * target.reshape(-1, 3)) - 1.0

    def bending_matrix(self) -> sp.csr_matrix:
        """K_y = Gᵀ K G (E, E) csr float64 [m⁻²]: the thesis' isometric bending energy ½ κ xᵀ K x
        (Bergou et al. 2006, thesis §2.5; :func:`isocloth.fem.bending.bending_matrix` on the mesh
        as given, quads as bilinear elements) of the ghost surface x = G y. On states y = P x it is
        the thesis' energy of x (G P = I); zero on every affine map of the flat rest. (Why not the
        squared Crouzeix–Raviart Laplacian: docs/design/nonconforming.md §1.)"""
        from isocloth.fem.bending import bending_matrix

        G = self.ghost_map
        K = (G.T @ bending_matrix(self.mesh) @ G).tocsr()
        K.sum_duplicates()
        return K

    def rectified_faces(self) -> np.ndarray:
        """(f, 3) int64: faces of the rectified mesh on the midpoints, counter-clockwise like the
        triangles: every medial triangle, then around every vertex the fan of its edges' midpoints
        (ordered around the vertex; open at boundary vertices)."""
        fe = self.face_edges
        medial = fe[:, [2, 0, 1]]  # (m_01, m_12, m_20): counter-clockwise
        # around corner k of triangle t the medial side runs m_{k,k+1} -> m_{k+2,k}; the vertex fan
        # runs the other way: m_{k+2,k} -> m_{k,k+1}... link "from" -> "to" per (vertex, triangle)
        tri = self.triangles
        rest = self.mesh.rest_vertices if self.mesh.rest_vertices is not None else self.mesh.vertices
        y = self.midpoints(rest)
        src = fe[:, [1, 2, 0]].ravel()  # edge (k, k+2) = opposite corner k+1
        dst = fe[:, [2, 0, 1]].ravel()  # edge (k, k+1) = opposite corner k+2
        vert = tri.ravel()
        order = np.lexsort((src, vert))
        vert, src, dst = vert[order], src[order], dst[order]
        faces = [medial]
        _, starts = np.unique(vert, return_index=True)
        for lo, hi in zip(starts, np.append(starts[1:], vert.size)):
            nxt = dict(zip(src[lo:hi].tolist(), dst[lo:hi].tolist()))
            if len(nxt) < 2:
                continue
            heads = set(nxt) - set(nxt.values())
            start = min(heads) if heads else int(src[lo])
            chain, e = [start], nxt.get(start)
            while e is not None and e != start and len(chain) <= len(nxt):
                chain.append(e)
                e = nxt.get(e)
            faces.extend(_best_fan(chain, y))
        return np.vstack([faces[0], np.array(faces[1:], dtype=np.int64).reshape(-1, 3)]).astype(np.int64)

    def rectified_mesh(self, positions: np.ndarray | None = None) -> Mesh:
        """The rectified mesh (:meth:`rectified_faces`) with vertices at the midpoints of
        ``positions`` (n, 3) [m] (default: the mesh's vertices); rest shape: the midpoints of the
        ghost mesh's rest vertices (per-corner rest shapes only matter for the rows, which come
        from :meth:`medial_pairs`)."""
        x = self.mesh.vertices if positions is None else positions
        rest = self.mesh.rest_vertices
        return Mesh(self.midpoints(x), triangles=self.rectified_faces(),
                    rest_vertices=None if rest is None else self.midpoints(rest),
                    name=f"{self.mesh.name} (edge midpoints)", rest_source=self.mesh.rest_source)

    def star_edges(self, vertex: int) -> np.ndarray:
        """Edges incident to a vertex (k,) int64: the midpoints a grasp of that vertex holds."""
        return np.flatnonzero((self.edges[:, 0] == vertex) | (self.edges[:, 1] == vertex))


def _best_fan(chain: list, y: np.ndarray) -> list:
    """Fan triangles (reversed chain order) of the polygon ``chain`` of midpoint indices, from the
    apex that maximises the smallest triangle area at positions y (midpoints of a vertex's edges
    may be collinear, e.g. around a vertex of a split quad grid)."""
    k = len(chain)
    best, best_area = None, -1.0
    for a in range(k if k > 3 else 1):
        c = chain[a:] + chain[:a]
        fan = [[c[0], c[i + 1], c[i]] for i in range(1, k - 1)]
        p = y[np.array(fan)]
        area = 0.5 * np.linalg.norm(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]), axis=1).min()
        if area > best_area * (1 + 1e-9):
            best, best_area = fan, area
    return best


def crouzeix_raviart(mesh: Mesh) -> CrouzeixRaviart:
    """Build the nonconforming element of a triangle/quad mesh (module docstring).

    Raises
    ------
    ValueError
        If the mesh has no faces or a triangle of zero rest area.
    """
    tri, corners = split_quads(mesh)
    if tri.shape[0] == 0:
        raise ValueError("the nonconforming model needs a mesh with faces")
    area = 0.5 * np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]), axis=1)
    if np.any(area <= 0):
        raise ValueError(f"triangle {int(np.argmin(area))} has zero rest area: remove degenerate faces")
    n = mesh.node_count
    opp = np.stack([tri[:, [1, 2]], tri[:, [2, 0]], tri[:, [0, 1]]], axis=1)  # (t, 3, 2): edge opposite corner k
    key = np.sort(opp.reshape(-1, 2), axis=1)
    edges, inverse = np.unique(key, axis=0, return_inverse=True)
    face_edges = inverse.reshape(-1, 3).astype(np.int64)
    E = edges.shape[0]
    P = sp.csr_matrix((np.full(2 * E, 0.5), (np.repeat(np.arange(E), 2), edges.ravel())), shape=(E, n))
    # ghost: corner k of t from its two adjacent edges (+1) and the opposite one (−1), averaged
    t = tri.shape[0]
    rows = np.repeat(tri.ravel(), 3)
    adj1 = face_edges[:, [1, 2, 0]].ravel()
    adj2 = face_edges[:, [2, 0, 1]].ravel()
    own = face_edges.ravel()
    cols = np.stack([adj1, adj2, own], axis=1).ravel()
    vals = np.tile([1.0, 1.0, -1.0], 3 * t)
    valence = np.bincount(tri.ravel(), minlength=n).astype(np.float64)
    vals = vals / np.repeat(valence[tri.ravel()], 3)
    G = sp.csr_matrix((vals, (rows, cols)), shape=(n, E))
    G.sum_duplicates()
    return CrouzeixRaviart(mesh=mesh, triangles=tri, rest_corners=corners, edges=edges.astype(np.int64),
                           face_edges=face_edges, midpoint_map=P, ghost_map=G)


def jump_operator(cr: CrouzeixRaviart) -> sp.csr_matrix:
    """D (3t, E) csr float64 [dimensionless]: the jump of every triangle's affine map at its corner k
    against the ghost vertex v there, c_{t,k}(y) − x_v(y) with c_{t,k} = y_a + y_b − y_o (a, b the
    edges of t at the corner, o the one opposite), in row 3t + k (apply it to each coordinate of y)."""
    fe, tri = cr.face_edges, cr.triangles
    t = tri.shape[0]
    rows = np.repeat(np.arange(3 * t), 3)
    cols = np.stack([fe[:, [1, 2, 0]].ravel(), fe[:, [2, 0, 1]].ravel(), fe.ravel()], axis=1).ravel()
    C = sp.csr_matrix((np.tile([1.0, 1.0, -1.0], 3 * t), (rows, cols)), shape=(3 * t, cr.unknown_count))
    return (C - cr.ghost_map[tri.ravel()]).tocsr()


JUMP_WEIGHT = 1.0 / 6.0
"""(A_t / 3) / h_t² with h_t² = 2 A_t: the weight of every squared corner jump in :func:`conformity_matrix`."""


def edge_jump_operator(cr: CrouzeixRaviart) -> sp.csr_matrix:
    """D (i, E) csr float64 [dimensionless]: the jump across every interior edge, one row per edge
    shared by two triangles t1, t2 (in ascending edge index): the difference of their affine maps at
    the edge's first vertex v, c_{t1,v}(y) − c_{t2,v}(y), with c_{t,v} = y_a + y_b − y_o (a, b the
    edges of t at v, o the one opposite). Apply it to each coordinate of y.

    The two maps agree at the edge's midpoint (both pass through y_e), so the jump at the other end
    is the negative of this one: the row measures the whole mismatch along the edge (the jump of
    the Crouzeix–Raviart interior penalty), on the four other midpoints of t1 and t2."""
    fe = cr.face_edges
    owner = np.repeat(np.arange(fe.shape[0]), 3)
    order = np.argsort(fe.ravel(), kind="stable")
    e_sorted = fe.ravel()[order]
    interior = np.flatnonzero(np.bincount(fe.ravel(), minlength=cr.unknown_count) == 2)
    first = np.searchsorted(e_sorted, interior)
    sides = []
    v = cr.edges[interior, 0]
    for j in (0, 1):  # the two triangles of each interior edge
        tri = owner[order[first + j]]
        k = np.argmax(cr.triangles[tri] == v[:, None], axis=1)  # the corner of t at v
        sides.append(np.stack([fe[tri, (k + 1) % 3], fe[tri, (k + 2) % 3], fe[tri, k]], axis=1))
    rows = np.repeat(np.arange(interior.size), 6)
    cols = np.concatenate(sides, axis=1).ravel()
    vals = np.tile([1.0, 1.0, -1.0, -1.0, -1.0, 1.0], interior.size)
    D = sp.csr_matrix((vals, (rows, cols)), shape=(interior.size, cr.unknown_count))
    D.eliminate_zeros()  # y_e, in both maps, cancels
    return D


EDGE_JUMP_WEIGHT = 1.0 / 12.0
"""Weight w_e of every squared edge jump (:func:`edge_jump_operator`) in the contact QPs' jump rows.
With it a field that alternates by ±a from triangle to triangle around a vertex of N triangles (the
medial triangles' counter-rotation) costs ½ k N a² / 6 there, as under :func:`conformity_matrix`."""


def conformity_matrix(cr: CrouzeixRaviart) -> sp.csr_matrix:
    """J (E, E) csr float64 [dimensionless]: ½ k yᵀ J y = ½ k Σ_t (A_t/3) Σ_k ‖c_{t,k} − x_v‖² / h_t²
    (h_t² = 2 A_t, so every term has the weight :data:`JUMP_WEIGHT`; :func:`jump_operator`), the
    mismatch of neighbouring elements at the vertices measured as a strain, with a membrane stiffness
    k [N/m]. Zero on every conforming field (y = P x)."""
    D = jump_operator(cr)
    return (JUMP_WEIGHT * (D.T @ D)).tocsr()
