"""Inextensibility constraints: the FEM metric tensors T_E, T_F, T_G and boundary-edge lengths.

Source: Coltraro et al., thesis §2.4 (eq. 2.7, 2.11–2.16, Algorithm 1); paper `003`/`002` §5.

Every constraint row r is a quadratic form of the node positions p (n, 3):

    C_r(φ) = Σ_ij T^{r i j} ⟨p_i, p_j⟩ − C0_r                      (eq. 2.15)

- metric rows: T = T_E, T_G at interior nodes and T_F at interior nodes and corners
  (eq. 2.12–2.14), C0 = T ⊗ P(0) taken from the rest shape element by element;
- boundary rows: T^{r a a} = T^{r b b} = 1, T^{r a b} = T^{r b a} = −1 for a boundary edge (a, b)
  so that C_r = ‖p_a − p_b‖² − l_r² (eq. 2.7).

T is symmetric in (i, j), hence the Jacobian is ∂C_r/∂p_i = 2 Σ_j T^{r i j} p_j (eq. 2.16) and
C = ½ ∇C·φ − C0 (thesis §2.4.5), so the Gram matrix P is never formed.

Layout: positions are node-major (n, 3); the Jacobian has shape (m, 3n) with column 3i + d for
coordinate d of node i (the thesis writes the block layout (x | y | z); the two differ only by a
permutation of columns).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from isocloth.fem.mass import _element_blocks, lumped_mass
from isocloth.fem.quadrature import element_metric
from isocloth.mesh.mesh import Mesh

__all__ = ["RowKind", "InextensibilityConstraints", "inextensibility_constraints", "length_constraints",
           "local_metric_tensors"]


class RowKind:
    """Codes of constraint rows."""

    E = 0
    F = 1
    G = 2
    EDGE = 3
    STRETCH_LIMIT = 4  # an element edge held at its stretch bound (isocloth.fem.stretch_limits)
    ELEMENT = 5  # a side of a medial triangle (isocloth.fem.nonconforming): one element's metric
    NAMES = ("E", "F", "G", "edge", "stretch-limit", "element")


def local_metric_tensors(corners: np.ndarray, ref):
    """Element tensors t_E, t_F, t_G of Algorithm 1 (lines 5–15).

    Parameters
    ----------
    corners : (e, k, 3) float64
        Rest corner positions [m].
    ref : ReferenceElement

    Returns
    -------
    tE, tF, tG : (e, k, k, k) float64
        t^{kij} = Σ_l N_k ∂N_i ∂N_j dA_l [m²], with t_F symmetrised in (i, j) (eq. 2.14).
        (Algorithm 1 line 11 prints t_F where t_E is meant: a known typo.)
    """
    _, _, _, dA = element_metric(corners, ref)
    N, dx, de = ref.N, ref.dN_dxi, ref.dN_deta
    tE = np.einsum("el,lk,li,lj->ekij", dA, N, dx, dx)
    tG = np.einsum("el,lk,li,lj->ekij", dA, N, de, de)
    tF = 0.5 * (np.einsum("el,lk,li,lj->ekij", dA, N, dx, de) + np.einsum("el,lk,li,lj->ekij", dA, N, de, dx))
    return tE, tF, tG


@dataclass(frozen=True, eq=False)
class InextensibilityConstraints:
    """Quadratic constraint rows C(φ) = T ⊗ P(t) − C0 (metric rows and boundary edges).

    Attributes
    ----------
    row_count : int
        m, the number of rows.
    row_kind : (m,) int8
        RowKind code of each row (E, F, G or EDGE).
    row_node : (m,) int64
        Node k of a metric row; −1 for edge rows.
    row_edge : (m, 2) int64
        Nodes (a, b) of an edge row; −1 for metric rows.
    C0 : (m,) float64
        Rest values [m²]: T ⊗ P(0) for metric rows, l² for edge rows.
    scale : (m,) float64
        Reference magnitude [m²] used for the relative residual |C_r| / scale_r: ½(E0_k + G0_k)
        at the row's node for metric rows (F0 is often 0), l² for edge rows.
    pair_row, pair_node : (P,) int64
        The (r, i) pairs with a non-zero T^{r i ·}, sorted by r then i.
    A : scipy.sparse.csr_matrix (P, n) float64
        A[p, j] = T^{pair_row[p], pair_node[p], j} [dimensionless].
    """

    row_count: int
    node_count: int
    row_kind: np.ndarray
    row_node: np.ndarray
    row_edge: np.ndarray
    C0: np.ndarray
    scale: np.ndarray
    pair_row: np.ndarray
    pair_node: np.ndarray
    A: sp.csr_matrix
    _jac_indptr: np.ndarray = field(repr=False, default=None)  # type: ignore[assignment]
    _jac_indices: np.ndarray = field(repr=False, default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        counts = np.bincount(self.pair_row, minlength=self.row_count) * 3
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        indices = (3 * self.pair_node[:, None] + np.arange(3)[None, :]).ravel().astype(np.int32)
        object.__setattr__(self, "_jac_indptr", indptr)
        object.__setattr__(self, "_jac_indices", indices)

    # ----------------------------------------------------------------- evaluation
    def value_and_jacobian(self, x: np.ndarray):
        """Constraint values and Jacobian at positions x.

        Parameters
        ----------
        x : (n, 3) float64
            Node positions [m].

        Returns
        -------
        C : (m,) float64 [m²]
            C(φ) = ½ ∇C(φ)·φ − C0 (thesis eq. 2.15 and §2.4.5).
        J : scipy.sparse.csr_matrix (m, 3n) float64 [m]
            ∇C(φ) = 2 [T⊗x, T⊗y, T⊗z] (eq. 2.16), columns node-major.
        """
        AX = self.A @ x  # (P, 3): Σ_j T^{r i j} p_j
        C = np.bincount(self.pair_row, weights=np.einsum("pd,pd->p", AX, x[self.pair_node]),
                        minlength=self.row_count) - self.C0
        J = sp.csr_matrix((2.0 * AX.ravel(), self._jac_indices, self._jac_indptr),
                          shape=(self.row_count, 3 * self.node_count))
        return C, J

    def value(self, x: np.ndarray) -> np.ndarray:
        """Constraint values C(φ), (m,) float64 [m²] (eq. 2.15)."""
        return self.value_from(self.A @ x, x)

    def value_from(self, AX: np.ndarray, x: np.ndarray) -> np.ndarray:
        """C(φ) from precomputed AX = A @ x (P, 3): Σ_(r,i) ⟨(Ax)_(r,i), p_i⟩ − C0_r."""
        return np.bincount(self.pair_row, weights=np.einsum("pd,pd->p", AX, x[self.pair_node]),
                           minlength=self.row_count) - self.C0

    def relative_residual(self, C: np.ndarray, rows: np.ndarray | None = None) -> float:
        """max_r |C_r| / scale_r over ``rows`` (all rows when None); 0 for no rows."""
        r = np.abs(C) / self.scale
        if rows is not None:
            r = r[rows]
        return float(r.max()) if r.size else 0.0

    def rows_touching(self, free: np.ndarray) -> np.ndarray:
        """Rows that involve at least one node with ``free[i]`` True: (k,) int64.

        Rows whose nodes are all prescribed (grasped) cannot be changed by the solver.
        """
        hit = np.zeros(self.row_count, dtype=bool)
        hit[self.pair_row[free[self.pair_node]]] = True
        return np.flatnonzero(hit)

    def count_by_kind(self) -> dict[str, int]:
        """Number of rows of each kind, e.g. {'E': 49, 'F': 53, 'G': 49, 'edge': 32}."""
        c = np.bincount(self.row_kind, minlength=4)
        return {RowKind.NAMES[k]: int(c[k]) for k in range(c.size) if k < 4 or c[k]}

    def with_length_rows(self, pairs: np.ndarray, lengths: np.ndarray, kind: int) -> "InextensibilityConstraints":
        """These rows followed by squared-length rows ‖p_a − p_b‖² − l² (eq. 2.7's form) for
        ``pairs`` (s, 2) int64 with target lengths ``lengths`` (s,) float64 [m], of RowKind ``kind``;
        row m + i is pair i."""
        n, m0, s = self.node_count, self.row_count, len(lengths)
        # the new rows come after every row: their pairs follow the existing ones
        pair_row, pair_node, AA = _stack_blocks([(self.pair_row, self.pair_node, self.A.tocsr()),
                                                 _pair_matrix(*_length_triplets(m0 + np.arange(s), pairs[:, 0],
                                                                                pairs[:, 1]), n)], n)
        sq = np.asarray(lengths, dtype=np.float64) ** 2
        return InextensibilityConstraints(
            row_count=m0 + s, node_count=n,
            row_kind=np.concatenate([self.row_kind, np.full(s, kind, dtype=np.int8)]),
            row_node=np.concatenate([self.row_node, np.full(s, -1, dtype=np.int64)]),
            row_edge=np.concatenate([self.row_edge, np.asarray(pairs, dtype=np.int64)]),
            C0=np.concatenate([self.C0, sq]), scale=np.concatenate([self.scale, sq]),
            pair_row=pair_row, pair_node=pair_node, A=AA)


def element_sides(mesh: Mesh, diagonals: bool = False):
    """Every side of every element, once per element that has it.

    Returns
    -------
    keys : (s,) int64, min(i, j)·n + max(i, j), equal for the occurrences of one edge
    pairs : (s, 2) int64, nodes (i, j) in the element's orientation
    lengths : (s,) float64 [m], rest lengths from that element's rest shape
    corners : (s,) int64, the element's corner count (3 or 4)

    With ``diagonals`` the two diagonals of every quad follow its four sides.
    """
    keys, lengths, pairs, corners_of = [], [], [], []
    n = mesh.node_count
    for faces, corners, _ in _element_blocks(mesh):
        k = faces.shape[1]
        sides = [(a, (a + 1) % k) for a in range(k)] + ([(0, 2), (1, 3)] if diagonals and k == 4 else [])
        for a, b in sides:
            i, j = faces[:, a], faces[:, b]
            keys.append(np.minimum(i, j) * n + np.maximum(i, j))
            pairs.append(np.stack([i, j], axis=1))
            lengths.append(np.linalg.norm(corners[:, a] - corners[:, b], axis=1))
            corners_of.append(np.full(i.size, k, dtype=np.int64))
    if not keys:
        return np.zeros(0, np.int64), np.zeros((0, 2), np.int64), np.zeros(0), np.zeros(0, np.int64)
    return tuple(np.concatenate(v) for v in (keys, pairs, lengths, corners_of))


def _boundary_edges_with_rest_length(mesh: Mesh):
    """Boundary edges (b, 2) int64 and their rest lengths (b,) [m], from each edge's only face."""
    keys, pairs, lengths, _ = element_sides(mesh)
    uniq, first, counts = np.unique(keys, return_index=True, return_counts=True)
    sel = first[counts == 1]
    return pairs[sel], lengths[sel]


def _length_triplets(r: np.ndarray, a: np.ndarray, b: np.ndarray):
    """(rows, nodes i, nodes j, values) of the squared-length rows r of edges (a, b), eq. 2.7:
    T^{r a a} = T^{r b b} = 1, T^{r a b} = T^{r b a} = −1."""
    one = np.ones(r.size)
    return [r, r, r, r], [a, a, b, b], [a, b, a, b], [one, -one, -one, one]


def _metric_block(parts, n: int):
    """(pair_row, pair_node, A) of the metric rows of one kind from its elements' local tensors
    ``parts`` [(rows (e, k) int64, -1 where the node has no row; faces (e, k); t (e, k, k, k))]:
    the pairs (row of node a, node i) with a non-zero T^{a i j} for some j, sorted, and A[(r, i), j]
    the sum of those entries over the elements. Built pair list first, then A, without the
    (row, i, j) triplets of every element at once (a 100k-node sheet's triplets took 2 GB)."""
    keys = []
    for rows, faces, t in parts:
        nz = (t != 0.0).any(axis=3) & (rows >= 0)[:, :, None]  # (e, a, i)
        keys.append((rows[:, :, None] * n + faces[:, None, :])[nz])
    uniq = np.sort(np.concatenate(keys)) if keys else np.zeros(0, np.int64)
    uniq = uniq[np.r_[True, uniq[1:] != uniq[:-1]]] if uniq.size else uniq  # (np.unique hashes: 10x slower here)
    index = np.int32 if max(uniq.size, n) < 2 ** 31 else np.int64
    P, C, V = [], [], []
    for rows, faces, t in parts:
        keep = (t != 0.0) & (rows >= 0)[:, :, None, None]  # (e, a, i, j)
        # (e, a, i); unused where no row. 32-bit indices, as scipy keeps them: half the memory of the entries
        pair = np.searchsorted(uniq, rows[:, :, None] * n + faces[:, None, :]).astype(index)
        P.append(np.broadcast_to(pair[:, :, :, None], t.shape)[keep])
        C.append(np.broadcast_to(faces.astype(index)[:, None, None, :], t.shape)[keep])
        V.append(t[keep])
        del keep, pair
    if P:
        def joined(parts):
            return parts[0] if len(parts) == 1 else np.concatenate(parts)

        A = sp.csr_matrix((joined(V), (joined(P), joined(C))), shape=(uniq.size, n))
    else:
        A = sp.csr_matrix((0, n))
    A.sum_duplicates()
    return (uniq // n).astype(np.int64), (uniq % n).astype(np.int64), A


def _stack_blocks(blocks, n: int):
    """One (pair_row, pair_node, A) of blocks whose rows follow each other (block b's rows after
    block b − 1's)."""
    if not blocks:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), sp.csr_matrix((0, n))
    return (np.concatenate([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks]),
            sp.vstack([b[2] for b in blocks], format="csr"))


def _pair_matrix(R, I, Jn, V, n: int):
    """(pair_row, pair_node, A csr (P, n)) from tensor triplets T^{R I Jn} = V (lists of arrays)."""
    R, I, Jn, V = (np.concatenate(v) for v in (R, I, Jn, V))
    uniq, pair_index = np.unique(R * n + I, return_inverse=True)
    A = sp.csr_matrix((V, (pair_index, Jn)), shape=(uniq.size, n))
    A.sum_duplicates()
    return (uniq // n).astype(np.int64), (uniq % n).astype(np.int64), A


def inextensibility_constraints(
    mesh: Mesh,
    *,
    corner_nodes: np.ndarray,
    interior_nodes: np.ndarray,
    use_F: bool = True,
    use_boundary: bool = True,
) -> InextensibilityConstraints:
    """Assemble the constraint tensors of a mesh (thesis Algorithm 1 and eq. 2.7).

    Parameters
    ----------
    mesh : Mesh
        Triangles (P1) and/or quads (Q1); the rest shape (``mesh.rest_corners``) defines the
        lumped masses, the quadrature weights dA and C0.
    corner_nodes : (c,) int64
        Boundary nodes that get an F row (Remark 2.4.2); see ``isocloth.mesh.topology.corner_nodes``.
    interior_nodes : (k,) int64
        Nodes that get E, F and G rows.
    use_F : bool
        False drops every F row (quasi-inextensible model, thesis Definition 2).
    use_boundary : bool
        False drops the boundary-edge rows.

    Returns
    -------
    InextensibilityConstraints
        Rows ordered E (interior), F (interior then corners), G (interior), then edges.

    Raises
    ------
    ValueError
        If a node has zero lumped area (degenerate elements).
    """
    n = mesh.node_count
    mk = lumped_mass(mesh)
    interior_nodes = np.asarray(interior_nodes, dtype=np.int64)
    corner_nodes = np.setdiff1d(np.asarray(corner_nodes, dtype=np.int64), interior_nodes)
    used = np.unique(np.concatenate([interior_nodes, corner_nodes]))
    if used.size and np.any(mk[used] <= 0):
        bad = used[mk[used] <= 0][0]
        raise ValueError(f"node {bad} has zero lumped area: remove degenerate faces around it")

    # Row numbering: kind -> node -> row.
    f_nodes = np.concatenate([interior_nodes, corner_nodes]) if use_F else np.zeros(0, np.int64)
    blocks = [(RowKind.E, interior_nodes), (RowKind.F, f_nodes), (RowKind.G, interior_nodes)]
    row_of = np.full((3, n), -1, dtype=np.int64)
    row_kind, row_node = [], []
    start = 0
    for kind, nodes in blocks:
        row_of[kind, nodes] = start + np.arange(nodes.size)
        row_kind.append(np.full(nodes.size, kind, dtype=np.int8))
        row_node.append(nodes)
        start += nodes.size
    metric_rows = start

    # Element loop (vectorised per element type): the local tensors T^{a i j} / m_a of each element
    # and kind (rows of its nodes a), and the C0 contributions.
    local = {RowKind.E: [], RowKind.F: [], RowKind.G: []}  # kind -> [(rows (e, k), faces (e, k), t (e, k, k, k))]
    C0 = np.zeros(metric_rows)
    nodal = np.zeros((3, n))  # nodal E0, F0, G0 at every node (for the scale)
    for faces, corners, ref in _element_blocks(mesh):
        gram = np.einsum("eid,ejd->eij", corners, corners)  # rest ⟨X_i, X_j⟩ per element
        for kind, t in zip((RowKind.E, RowKind.F, RowKind.G), local_metric_tensors(corners, ref)):
            t /= mk[faces][:, :, None, None]  # Algorithm 1, lines 17–19 (in place: 50 MB a kind at 100k nodes)
            contrib = np.einsum("ekij,eij->ek", t, gram)
            np.add.at(nodal[kind], faces, contrib)
            rows = row_of[kind][faces]  # (e, k)
            np.add.at(C0, rows[rows >= 0], contrib[rows >= 0])
            local[kind].append((rows, faces, t))
    rk = np.concatenate(row_kind)
    rn = np.concatenate(row_node)
    scale = 0.5 * (nodal[RowKind.E, rn] + nodal[RowKind.G, rn])
    row_edge = np.full((metric_rows, 2), -1, dtype=np.int64)

    blocks = [_metric_block(local.pop(kind), n) for kind in (RowKind.E, RowKind.F, RowKind.G)]  # each freed once used
    if use_boundary:
        be, length = _boundary_edges_with_rest_length(mesh)
        r = metric_rows + np.arange(be.shape[0])
        blocks.append(_pair_matrix(*_length_triplets(r, be[:, 0], be[:, 1]), n))
        C0 = np.concatenate([C0, length ** 2])
        scale = np.concatenate([scale, length ** 2])
        rk = np.concatenate([rk, np.full(be.shape[0], RowKind.EDGE, dtype=np.int8)])
        rn = np.concatenate([rn, np.full(be.shape[0], -1, dtype=np.int64)])
        row_edge = np.concatenate([row_edge, be])
    m = C0.size

    # rows are numbered kind by kind, so the (row, node) pairs of the blocks follow each other in order
    pair_row, pair_node, A = _stack_blocks(blocks, n)
    A.eliminate_zeros()
    return InextensibilityConstraints(
        row_count=m,
        node_count=n,
        row_kind=rk,
        row_node=rn,
        row_edge=row_edge,
        C0=C0,
        scale=scale,
        pair_row=pair_row,
        pair_node=pair_node,
        A=A,
    )


def length_constraints(pairs: np.ndarray, lengths: np.ndarray, node_count: int,
                       kind: int = RowKind.ELEMENT) -> InextensibilityConstraints:
    """Rows ‖p_a − p_b‖² − l² = 0 (eq. 2.7's form) alone, one per pair.

    Parameters
    ----------
    pairs : (s, 2) int64, node pairs (a, b), a ≠ b
    lengths : (s,) float64 [m], target lengths l > 0
    node_count : int, n
    kind : RowKind code of the rows (default ELEMENT: the nonconforming model's rows)
    """
    pairs = np.asarray(pairs, dtype=np.int64)
    s = pairs.shape[0]
    pair_row, pair_node, A = _stack_blocks([_pair_matrix(*_length_triplets(np.arange(s), pairs[:, 0], pairs[:, 1]),
                                                         node_count)], node_count)
    sq = np.asarray(lengths, dtype=np.float64) ** 2
    return InextensibilityConstraints(
        row_count=s, node_count=node_count, row_kind=np.full(s, kind, dtype=np.int8),
        row_node=np.full(s, -1, dtype=np.int64), row_edge=pairs.copy(), C0=sq, scale=sq.copy(),
        pair_row=pair_row, pair_node=pair_node, A=A)
