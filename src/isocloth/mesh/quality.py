"""Mesh validation: a report of sizes, topology and defects, and a checker that raises.

Faces are numbered triangles first, then quads (see :mod:`isocloth.mesh.topology`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from isocloth.mesh import topology
from isocloth.mesh.mesh import Mesh, MeshError

__all__ = [
    "MeshReport",
    "validate_mesh",
    "check_mesh",
    "NonManifoldEdgeError",
    "DegenerateFaceError",
    "DuplicateFaceError",
    "UnusedVertexError",
    "InconsistentOrientationError",
    "TwistedQuadError",
    "InvertedFaceError",
    "CoordinateRangeError",
    "DEGENERATE_AREA",
    "DEGENERATE_LENGTH",
    "FOLD_ANGLE",
    "MAX_COORDINATE",
    "CLOTH_AREA",
    "unit_hint",
]

#: elements with rest or current area below this [m²] are degenerate
DEGENERATE_AREA = 1e-14
#: an edge between two distinct nodes shorter than this [m] (rest or current) makes its faces degenerate
DEGENERATE_LENGTH = 1e-7
#: two faces on either side of an edge whose half-planes meet at less than this angle [rad] (current
#: shape, or a per-vertex rest shape) lie folded onto each other: one is inverted relative to the other.
#: The built-in garment meshes have ≥ 0.4 rad at their sharpest crease; a planar fold-over has 0.
FOLD_ANGLE = 1e-2
#: vertices (rest or current) farther than this [m] from the origin are out of range
MAX_COORDINATE = 1e5
_SHOW = 3  # offending elements named in a message
#: rest areas [m²] of cloth pieces: from a 3 cm swatch to a bed sheet (outside, the file's units are suspect)
CLOTH_AREA = (1e-3, 20.0)
_UNITS = (("millimetres", 1e-3), ("centimetres", 1e-2), ("inches", 0.0254), ("decimetres", 1e-1))


def unit_hint(area: float) -> str | None:
    """A sentence when a cloth's rest ``area`` [m²] lies outside :data:`CLOTH_AREA` (a file whose
    coordinates are not in metres), naming the units that bring it inside and the matching
    ``cloth.placement.scale``; None for a cloth-sized area."""
    lo, hi = CLOTH_AREA
    if not (area > 0.0) or lo <= area <= hi:
        return None
    if area > hi:
        fits = [f"in {name} it would be {area * f * f:.3g} m² (cloth.placement.scale = {f:g})"
                for name, f in _UNITS if lo <= area * f * f <= hi]
        guess = "; ".join(fits) if fits else "scale it with cloth.placement.scale"
        return (f"the rest area is {area:.4g} m², larger than any cloth ({lo:g}–{hi:g} m²): the file is probably "
                f"not in metres; {guess}")
    return (f"the rest area is {area:.4g} m², smaller than any cloth ({lo:g}–{hi:g} m²): check the file's units "
            "(isocloth reads coordinates as metres; cloth.placement.scale rescales them)")


class NonManifoldEdgeError(MeshError):
    """An edge is shared by more than two faces."""


class DegenerateFaceError(MeshError):
    """A face repeats a node or has (almost) zero rest or current area."""


class DuplicateFaceError(MeshError):
    """Two faces use the same set of nodes."""


class UnusedVertexError(MeshError):
    """A vertex belongs to no face."""


class InconsistentOrientationError(MeshError):
    """Two faces traverse their shared edge in the same direction."""


class TwistedQuadError(MeshError):
    """A quad whose boundary crosses itself (a "bow-tie"): its two halves face opposite ways."""


class InvertedFaceError(MeshError):
    """Faces folded over onto a neighbour: the two lie on top of each other across their shared edge,
    one inverted relative to the other (a fold-over in the plane, e.g. a node dragged across an edge)."""


class CoordinateRangeError(MeshError):
    """A vertex lies farther than ``MAX_COORDINATE`` from the origin."""


def _ints(shape) -> np.ndarray:
    return np.zeros(shape, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class MeshReport:
    """Sizes, topology and defects of a mesh (from :func:`validate_mesh`).

    Attributes
    ----------
    name : str
    node_count, triangle_count, quad_count, edge_count : int
    boundary_loop_lengths : tuple of int
        Nodes per boundary loop, longest first.
    euler_characteristic : int
        V − E + F over used nodes.
    corner_count : int
        Number of :func:`~isocloth.mesh.topology.corner_nodes` at ``corner_angle_deg``.
    corner_angle_deg : float
    rest_area, current_area : float
        Total element areas [m²] of the rest shape and of the vertices.
    per_corner_rest : bool
        Whether the rest shape is given per element corner.
    non_manifold_edges : (k, 2) int64
        Edges shared by more than two faces; ``non_manifold_edge_faces`` lists their faces.
    degenerate_faces : (k,) int64
        Faces with a repeated node, an edge between distinct nodes shorter than
        ``DEGENERATE_LENGTH`` or a rest/current area < ``DEGENERATE_AREA`` (rest or current
        shape); ``degenerate_reasons`` says which.
    duplicate_faces : (k, 2) int64
        Pairs (first, other) of faces with the same node set.
    unused_vertices : (k,) int64
        Vertices of no face.
    inconsistent_orientation : (k, 2) int64
        Edges ``(a, b)`` that two faces both traverse as ``a -> b``; the faces are in
        ``inconsistent_orientation_faces`` (k, 2).
    non_manifold_vertices : (k,) int64
        Vertices whose faces form several separate fans ("bow-tie"); a warning only.
    twisted_quads : (k,) int64
        Faces (quads) whose boundary crosses itself in the rest or the current shape: the
        triangles on either side of one of its diagonals face opposite ways.
    far_vertices : (k,) int64
        Vertices with a rest or current coordinate beyond ±``MAX_COORDINATE`` m.
    folded_edges : (k, 2) int64
        Edges ``(a, b)`` whose two faces lie folded onto each other (their half-planes meet at less
        than ``FOLD_ANGLE``) in the current shape or in a per-vertex rest shape (``rest_vertices``;
        per-corner rest shapes such as UV layouts are not checked); the faces are in
        ``folded_edge_faces`` (k, 2).
    inverted_faces : (k,) int64
        Faces folded onto more than half of their neighbours: the inverted ones.
    """

    name: str
    node_count: int
    triangle_count: int
    quad_count: int
    edge_count: int
    boundary_loop_lengths: tuple[int, ...]
    euler_characteristic: int
    corner_count: int
    corner_angle_deg: float
    rest_area: float
    current_area: float
    per_corner_rest: bool = False
    non_manifold_edges: np.ndarray = field(default_factory=lambda: _ints((0, 2)))
    non_manifold_edge_faces: tuple[tuple[int, ...], ...] = ()
    degenerate_faces: np.ndarray = field(default_factory=lambda: _ints(0))
    degenerate_reasons: tuple[str, ...] = ()
    duplicate_faces: np.ndarray = field(default_factory=lambda: _ints((0, 2)))
    unused_vertices: np.ndarray = field(default_factory=lambda: _ints(0))
    inconsistent_orientation: np.ndarray = field(default_factory=lambda: _ints((0, 2)))
    inconsistent_orientation_faces: np.ndarray = field(default_factory=lambda: _ints((0, 2)))
    non_manifold_vertices: np.ndarray = field(default_factory=lambda: _ints(0))
    twisted_quads: np.ndarray = field(default_factory=lambda: _ints(0))
    far_vertices: np.ndarray = field(default_factory=lambda: _ints(0))
    folded_edges: np.ndarray = field(default_factory=lambda: _ints((0, 2)))
    folded_edge_faces: np.ndarray = field(default_factory=lambda: _ints((0, 2)))
    inverted_faces: np.ndarray = field(default_factory=lambda: _ints(0))

    @property
    def ok(self) -> bool:
        """True when there is no defect (non-manifold vertices are only a warning)."""
        return not self._errors()

    # ------------------------------------------------------------- messages
    def _face(self, f: int) -> str:
        f = int(f)
        t = self.triangle_count
        return f"face {f} (triangle {f})" if f < t else f"face {f} (quad {f - t})"

    def _errors(self) -> list[tuple[type[MeshError], str]]:
        out: list[tuple[type[MeshError], str]] = []
        k = len(self.far_vertices)
        if k:
            items = [str(int(i)) for i in self.far_vertices]
            out.append((CoordinateRangeError, f"{_count(k, 'vertex', 'vertices')} beyond ±{MAX_COORDINATE:g} m "
                        f"from the origin: {_few(items)}: the file is probably in other units or corrupt "
                        "(scale it, e.g. cloth.placement.scale = 0.001 for millimetres)"))
        k = len(self.degenerate_faces)
        if k:
            items = [f"{self._face(f)}: {r}" for f, r in zip(self.degenerate_faces, self.degenerate_reasons)]
            out.append((DegenerateFaceError, f"{_count(k, 'degenerate face')}: {_few(items)}: "
                        "remove these faces or fix their nodes"))
        k = len(self.twisted_quads)
        if k:
            items = [self._face(f) for f in self.twisted_quads]
            out.append((TwistedQuadError, f"{_count(k, 'self-crossing (bow-tie) quad')}: {_few(items)}: "
                        "list each quad's nodes in order around its boundary"))
        k = len(self.folded_edges)
        if k:
            items = [f"edge {a}–{b} (faces {f} and {g})" for (a, b), (f, g) in zip(self.folded_edges,
                                                                                 self.folded_edge_faces)]
            edges = (f"{_count(k, 'folded-over edge')} (the faces on either side lie on top of each other, one "
                     f"inverted relative to the other): {_few(items)}")
            m = len(self.inverted_faces)
            if m:
                names = _few([self._face(f) for f in self.inverted_faces])
                edges = f"{_count(m, 'inverted face')} (folded over onto neighbouring faces): {names}; {edges}"
            out.append((InvertedFaceError, f"{edges}: move the nodes so that every face lies on its own side of "
                        "the edges it shares"))
        k = len(self.duplicate_faces)
        if k:
            items = [f"{self._face(a)} and {self._face(b)}" for a, b in self.duplicate_faces]
            out.append((DuplicateFaceError, f"{_count(k, 'duplicate face pair')} (same nodes): "
                        f"{_few(items)}: remove one face of each pair"))
        k = len(self.non_manifold_edges)
        if k:
            items = [f"edge {a}–{b} (shared by {len(fs)} faces: {', '.join(map(str, fs))})"
                     for (a, b), fs in zip(self.non_manifold_edges, self.non_manifold_edge_faces)]
            out.append((NonManifoldEdgeError, f"{_count(k, 'non-manifold edge')}: {_few(items)}: "
                        "split or remove the extra faces"))
        k = len(self.inconsistent_orientation)
        if k:
            items = [f"edge {a}→{b} (faces {f} and {g} both traverse it in this direction)"
                     for (a, b), (f, g) in zip(self.inconsistent_orientation,
                                               self.inconsistent_orientation_faces)]
            out.append((InconsistentOrientationError,
                        f"{_count(k, 'inconsistently oriented edge')}: {_few(items)}: reverse the "
                        "node order of the flipped faces so that neighbours traverse shared edges "
                        "in opposite directions"))
        k = len(self.unused_vertices)
        if k:
            items = [str(int(i)) for i in self.unused_vertices]
            out.append((UnusedVertexError, f"{_count(k, 'unused vertex', 'unused vertices')} "
                        f"(in no face): {_few(items)}: delete them from the mesh file "
                        "(read_mesh(path, merge_tolerance=0.0) drops unused vertices)"))
        return out

    def defects(self) -> list[str]:
        """One human-readable message per kind of defect (empty when :attr:`ok`)."""
        return [msg for _, msg in self._errors()]

    def warnings(self) -> list[str]:
        """Messages about features that are allowed but worth knowing (bow-tie vertices)."""
        k = len(self.non_manifold_vertices)
        if not k:
            return []
        items = [str(int(i)) for i in self.non_manifold_vertices]
        return [f"{_count(k, 'non-manifold vertex', 'non-manifold vertices')} (faces around it "
                f"form separate fans): {_few(items)}: split the vertex if the fans should be apart"]

    def to_text(self, extra_defects: Sequence[str] = ()) -> str:
        """A multi-line summary (as printed by ``isocloth info MESH``).

        ``extra_defects``: messages of defects found by checks outside this report (``isocloth info``
        adds faces that pass through each other), listed with the report's own so that a mesh with
        any defect never reads "defects: none"."""
        loops = self.boundary_loop_lengths
        lines = [
            f"mesh {self.name!r}: {self.node_count} vertices, {self.triangle_count} triangles, "
            f"{self.quad_count} quads, {self.edge_count} edges",
            f"boundary loops: {len(loops)}" + (f" (lengths {', '.join(map(str, loops))})" if loops else ""),
            f"Euler characteristic: {self.euler_characteristic}",
            f"corners (boundary turning >= {self.corner_angle_deg:g} deg): {self.corner_count}",
            f"rest area: {self.rest_area:.6g} m^2"
            + (" (per-corner rest shape)" if self.per_corner_rest else "")
            + f"; current area: {self.current_area:.6g} m^2",
        ]
        defects = self.defects() + list(extra_defects)
        lines.append("defects: none" if not defects else "defects:")
        lines += [f"  - {d}" for d in defects]
        lines += [f"warning: {w}" for w in self.warnings()]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()


def _count(k: int, singular: str, plural: str | None = None) -> str:
    return f"{k} {singular if k == 1 else (plural or singular + 's')}"


def _few(items: list[str]) -> str:
    head = "; ".join(items[:_SHOW])
    return head + (f"; and {len(items) - _SHOW} more" if len(items) > _SHOW else "")


# ---------------------------------------------------------------- analysis
def _corner_half_edges(mesh: Mesh):
    """Per corner: node, and the corner that follows it in its face; plus corner -> face."""
    t, q = mesh.triangle_count, mesh.quad_count
    tri_c = np.arange(3 * t).reshape(t, 3)
    quad_c = 3 * t + np.arange(4 * q).reshape(q, 4)
    node = np.concatenate([mesh.triangles.ravel(), mesh.quads.ravel()])
    nxt = np.concatenate([np.roll(tri_c, -1, 1).ravel(), np.roll(quad_c, -1, 1).ravel()])
    face = np.concatenate([np.repeat(np.arange(t), 3), np.repeat(np.arange(t, t + q), 4)])
    return node, nxt, face


def _non_manifold_vertices(mesh: Mesh, node, nxt, face) -> np.ndarray:
    """Vertices whose incident corners fall into several fans linked by 2-face edges."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    c0 = np.flatnonzero(node != node[nxt])
    c1 = nxt[c0]
    a, b = node[c0], node[c1]
    n = max(mesh.node_count, 1)
    key = np.minimum(a, b) * n + np.maximum(a, b)
    order = np.argsort(key, kind="stable")
    ks = key[order]
    _, first, counts = np.unique(ks, return_index=True, return_counts=True)
    pair = first[counts == 2]
    h1, h2 = order[pair], order[pair + 1]
    same = a[h1] == a[h2]  # same direction: start matches start
    s1, e1, s2, e2 = c0[h1], c1[h1], c0[h2], c1[h2]
    link_a = np.stack([s1, np.where(same, s2, e2)], 1)
    link_b = np.stack([e1, np.where(same, e2, s2)], 1)
    links = np.concatenate([link_a, link_b])
    m = node.size
    graph = coo_matrix((np.ones(len(links)), (links[:, 0], links[:, 1])), shape=(m, m))
    _, label = connected_components(graph, directed=False)
    fans = np.unique(node * max(m, 1) + label) // max(m, 1)  # one entry per (node, fan)
    per_node = np.bincount(fans, minlength=mesh.node_count)
    return np.flatnonzero(per_node > 1).astype(np.int64)


def _shapes(mesh: Mesh) -> tuple[tuple[str, np.ndarray, np.ndarray], ...]:
    """("rest" | "current", triangle corners (t, 3, 3), quad corners (q, 4, 3)) [m]."""
    return (("rest", *mesh.rest_corners),
            ("current", mesh.vertices[mesh.triangles], mesh.vertices[mesh.quads]))


def _corner_edges(tri: np.ndarray, quad: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per face corner (triangles first, corner by corner, as :func:`_corner_half_edges`): the
    position p0 (c, 3) of the corner, p1 (c, 3) of the next corner of its face, and the face's
    normal (c, 3) (not normalized; a quad's from its diagonals)."""
    with np.errstate(all="ignore"):  # far-off coordinates (a defect of their own) overflow
        nt = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]).reshape(-1, 3)
        nq = np.cross(quad[:, 2] - quad[:, 0], quad[:, 3] - quad[:, 1]).reshape(-1, 3)
    p0 = np.concatenate([tri.reshape(-1, 3), quad.reshape(-1, 3)])
    p1 = np.concatenate([np.roll(tri, -1, axis=1).reshape(-1, 3), np.roll(quad, -1, axis=1).reshape(-1, 3)])
    normal = np.concatenate([np.repeat(nt, 3, axis=0), np.repeat(nq, 4, axis=0)])
    return p0, p1, normal


def _degenerate(mesh: Mesh) -> tuple[np.ndarray, tuple[str, ...]]:
    repeated = np.concatenate([(np.diff(np.sort(f, axis=1), axis=1) == 0).any(axis=1)
                               for f in (mesh.triangles, mesh.quads)])
    rest = topology.rest_element_areas(mesh) < DEGENERATE_AREA
    cur = topology.element_areas(mesh) < DEGENERATE_AREA
    node, nxt, face = _corner_half_edges(mesh)
    distinct = node != node[nxt]
    # shape -> (c,) bool: a corner whose edge to the next corner has (almost) no length, in a face whose
    # area in that shape does not already say it is degenerate (a quad with two nodes at one point)
    short = {}
    for (label, tri, quad), flat in zip(_shapes(mesh), (rest, cur)):
        p0, p1, _ = _corner_edges(tri, quad)
        with np.errstate(all="ignore"):
            short[label] = distinct & ~flat[face] & (np.linalg.norm(p1 - p0, axis=1) < DEGENERATE_LENGTH)
    either = np.flatnonzero(short["rest"] | short["current"])
    short_faces, first = np.unique(face[either], return_index=True)
    short_corner = dict(zip(short_faces.tolist(), either[first].tolist()))  # face -> its first short edge
    short_face = np.zeros(mesh.face_count, dtype=bool)
    short_face[short_faces] = True
    bad = np.flatnonzero(repeated | rest | cur | short_face)
    reasons = []
    t = mesh.triangle_count
    for f in bad:
        nodes = (mesh.triangles[f] if f < t else mesh.quads[f - t]).tolist()
        why = [w for w, flag in (("repeated node", repeated[f]), ("zero rest area", rest[f]),
                                 ("zero current area", cur[f])) if flag]
        if short_face[f]:
            c = short_corner[int(f)]
            shapes = " and ".join(label for label in ("rest", "current") if short[label][c])
            why.append(f"zero-length edge {int(node[c])}–{int(node[nxt[c]])} (two distinct nodes at one point "
                       f"in the {shapes} shape)")
        reasons.append(f"nodes {nodes}, {' and '.join(why)}")
    return bad.astype(np.int64), tuple(reasons)


def _folded_edges(mesh: Mesh) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges whose two faces lie folded onto each other in the current or a per-vertex rest shape.

    For an edge a–b shared by faces f (traversing a → b) and g (b → a), the vector in each face's
    plane perpendicular to the edge and pointing into the face (normal × edge) points to opposite
    sides when the faces lie side by side and to the same side when one is folded over the other.
    Edges with another number of faces, traversed the same way by both (an orientation defect of its
    own) or of a degenerate face are skipped. The rest shape is checked only when it is given per vertex
    (``rest_vertices``, a flat pattern): a per-corner rest shape (UV coordinates) describes each element
    on its own, and UV layouts often lay mirrored pattern pieces over each other.

    Returns
    -------
    edges : (k, 2) int64 node pairs (a, b) as face f traverses them
    faces : (k, 2) int64 (f, g)
    inverted : (m,) int64, faces folded onto more than half of their neighbours
    """
    node, nxt, face = _corner_half_edges(mesh)
    c0 = np.flatnonzero(node != node[nxt])
    a, b = node[c0], node[nxt[c0]]
    n = max(mesh.node_count, 1)
    key = np.minimum(a, b) * n + np.maximum(a, b)
    order = np.argsort(key, kind="stable")
    _, first, counts = np.unique(key[order], return_index=True, return_counts=True)
    pair = first[counts == 2]
    h1, h2 = c0[order[pair]], c0[order[pair + 1]]
    opposite = node[h1] == node[nxt[h2]]
    h1, h2 = h1[opposite], h2[opposite]
    folded = np.zeros(h1.size, dtype=bool)
    cos_max = np.cos(FOLD_ANGLE)
    for label, tri, quad in _shapes(mesh):
        if label == "rest" and (mesh.rest_vertices is None or mesh.has_per_corner_rest):
            continue  # the geometry (checked as the current shape), or per-element rest shapes (UV layouts)
        p0, p1, normal = _corner_edges(tri, quad)
        with np.errstate(all="ignore"):
            inward = np.cross(normal, p1 - p0)
            length = np.linalg.norm(inward, axis=1)
            w1, w2 = inward[h1] / length[h1, None], inward[h2] / length[h2, None]
            folded |= np.einsum("ij,ij->i", w1, w2) > cos_max  # NaN for a degenerate face: not folded
    edges = np.stack([node[h1], node[nxt[h1]]], axis=1)[folded]
    faces = np.stack([face[h1], face[h2]], axis=1)[folded]
    shared = np.bincount(np.concatenate([face[h1], face[h2]]), minlength=mesh.face_count)
    over = np.bincount(faces.ravel(), minlength=mesh.face_count)
    inverted = np.flatnonzero((over > 0) & (2 * over > shared))
    order = np.lexsort((faces[:, 1], faces[:, 0]))
    return (edges[order].astype(np.int64).reshape(-1, 2), faces[order].astype(np.int64).reshape(-1, 2),
            inverted.astype(np.int64))


def _twisted_quads(mesh: Mesh) -> np.ndarray:
    """Faces (quads, numbered after the triangles) that cross themselves in the rest or the current
    shape: on *both* diagonals the two triangles face opposite ways (a concave quad has one such
    diagonal, a quad folded along a diagonal at most one)."""
    if not mesh.quad_count:
        return _ints(0)
    bad = np.zeros(mesh.quad_count, dtype=bool)
    for c in (mesh.rest_corners[1], mesh.vertices[mesh.quads]):
        a, b, cc, d = c[:, 0], c[:, 1], c[:, 2], c[:, 3]
        crossed = np.ones(mesh.quad_count, dtype=bool)
        for p, q, r, t in ((a, b, cc, d), (b, cc, d, a)):  # diagonal p–r: triangles (p, q, r), (p, r, t)
            crossed &= np.einsum("ij,ij->i", np.cross(q - p, r - p), np.cross(r - p, t - p)) < 0.0
        bad |= crossed
    return (np.flatnonzero(bad) + mesh.triangle_count).astype(np.int64)


def _far_vertices(mesh: Mesh) -> np.ndarray:
    far = (np.abs(mesh.vertices) > MAX_COORDINATE).any(axis=1)
    tri, quad = mesh.rest_corners
    for faces, corners in ((mesh.triangles, tri), (mesh.quads, quad)):
        if len(faces):
            out = (np.abs(corners) > MAX_COORDINATE).any(axis=2)
            far[faces[out]] = True
    return np.flatnonzero(far).astype(np.int64)


def _duplicates(mesh: Mesh) -> np.ndarray:
    out = []
    for faces, offset in ((mesh.triangles, 0), (mesh.quads, mesh.triangle_count)):
        if len(faces) < 2:
            continue
        _, inv, counts = np.unique(np.sort(faces, axis=1), axis=0, return_inverse=True,
                                   return_counts=True)
        inv = inv.ravel()
        order = np.argsort(inv, kind="stable")  # members of a group are consecutive, ascending
        first = np.concatenate([[0], np.cumsum(counts)[:-1]])[inv[order]]
        is_dup = np.arange(order.size) != first
        out += list(zip((order[first[is_dup]] + offset).tolist(), (order[is_dup] + offset).tolist()))
    return np.array(sorted(out), dtype=np.int64).reshape(-1, 2)


def validate_mesh(mesh: Mesh, corner_angle_deg: float = 45.0) -> MeshReport:
    """Sizes, topology and all defects of a mesh; never raises for defects.

    Parameters
    ----------
    mesh : Mesh
    corner_angle_deg : float
        Turning angle [deg] for counting corners (see
        :func:`~isocloth.mesh.topology.corner_nodes`).

    Returns
    -------
    MeshReport
    """
    edge_nodes, inverse, counts, start, end, face = topology._edge_table(mesh)
    # faces per non-manifold edge
    bad_edges = np.flatnonzero(counts > 2)
    nm_faces = []
    if bad_edges.size:
        order = np.argsort(inverse, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(counts)])
        nm_faces = [tuple(int(f) for f in face[order[bounds[e]:bounds[e + 1]]]) for e in bad_edges]
    # same-direction traversal of 2-face edges
    order = np.argsort(inverse, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(counts)])[:-1]
    two = np.flatnonzero(counts == 2)
    h1, h2 = order[bounds[two]], order[bounds[two] + 1]
    flipped = start[h1] == start[h2]
    incon = np.stack([start[h1][flipped], end[h1][flipped]], 1)
    incon_faces = np.stack([face[h1][flipped], face[h2][flipped]], 1)
    used = topology.used_nodes(mesh)
    unused = np.setdiff1d(np.arange(mesh.node_count), used)
    degenerate, reasons = _degenerate(mesh)
    folded, folded_faces, inverted = _folded_edges(mesh)
    return MeshReport(
        name=mesh.name,
        node_count=mesh.node_count,
        triangle_count=mesh.triangle_count,
        quad_count=mesh.quad_count,
        edge_count=int(edge_nodes.shape[0]),
        boundary_loop_lengths=tuple(int(len(l)) for l in topology.boundary_loops(mesh)),
        euler_characteristic=int(used.size - edge_nodes.shape[0] + mesh.face_count),
        corner_count=int(topology.corner_nodes(mesh, corner_angle_deg).size),
        corner_angle_deg=float(corner_angle_deg),
        rest_area=float(topology.rest_element_areas(mesh).sum()),
        current_area=float(topology.element_areas(mesh).sum()),
        per_corner_rest=mesh.has_per_corner_rest,
        non_manifold_edges=edge_nodes[bad_edges],
        non_manifold_edge_faces=tuple(nm_faces),
        degenerate_faces=degenerate,
        degenerate_reasons=reasons,
        duplicate_faces=_duplicates(mesh),
        unused_vertices=unused.astype(np.int64),
        inconsistent_orientation=incon.astype(np.int64),
        inconsistent_orientation_faces=incon_faces.astype(np.int64),
        non_manifold_vertices=_non_manifold_vertices(mesh, *_corner_half_edges(mesh)),
        twisted_quads=_twisted_quads(mesh),
        far_vertices=_far_vertices(mesh),
        folded_edges=folded,
        folded_edge_faces=folded_faces,
        inverted_faces=inverted,
    )


def check_mesh(mesh: Mesh, corner_angle_deg: float = 45.0) -> MeshReport:
    """Validate a mesh and raise on the first kind of defect.

    Checked in this order: vertices out of range, degenerate faces (also zero-length edges), self-crossing
    quads, faces folded over onto a neighbour (inverted), duplicate faces, non-manifold edges, inconsistent
    orientation, unused vertices. Non-manifold ("bow-tie") vertices are allowed. Faces that pass through
    each other without sharing an edge are not checked here (``isocloth info`` lists them, with
    :func:`isocloth.contact.intersection.face_intersections`).

    Parameters
    ----------
    mesh : Mesh
    corner_angle_deg : float
        Passed to :func:`validate_mesh`.

    Returns
    -------
    MeshReport
        The report of a mesh without defects.

    Raises
    ------
    CoordinateRangeError, DegenerateFaceError, TwistedQuadError, InvertedFaceError, DuplicateFaceError,
    NonManifoldEdgeError, InconsistentOrientationError, UnusedVertexError
        (all :class:`~isocloth.mesh.mesh.MeshError`) naming the first few offending elements,
        their count and the fix.
    """
    report = validate_mesh(mesh, corner_angle_deg)
    errors = report._errors()
    if errors:
        cls, msg = errors[0]
        raise cls(f"mesh {mesh.name!r}: {msg}")
    return report
