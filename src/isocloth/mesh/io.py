"""Reading and writing meshes: OBJ by our own reader/writer, other formats through meshio.

The OBJ reader understands the UC Berkeley Garment Library / ARCSim files: per-corner ``vt``
rest coordinates, the ``X-m.obj`` (material space) / ``X-w.obj`` (world space) pairs whose
panels are sewn by merging coincident vertices, and ARCSim-only lines (``vv``, ``t``, ``nl``,
``ny``, ...) that are skipped. Coordinates are taken as metres whatever a file's comments say;
axes are left as they are (use :meth:`Mesh.transformed` to turn a y-up file z-up).
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from pathlib import Path

import numpy as np

from isocloth.mesh.mesh import Mesh, MeshError

__all__ = ["read_mesh", "write_mesh", "merged_vertices", "REST_MODES"]

REST_MODES = ("auto", "vt", "m", "geometry")
#: largest merge tolerance [m] used for ``-w.obj`` files when none is given
W_FILE_MERGE_TOLERANCE = 0.01
#: the default merge tolerance of ``-w.obj`` files is at most this fraction of their shortest edge
MERGE_EDGE_FRACTION = 0.5
#: rest="auto" takes the ``vt`` as the rest shape only when their total area is within this
#: relative difference of the geometry's (an inextensible garment is modelled near its rest area)
VT_AREA_MATCH = 0.2
_TRIANGLE_ONLY = (".stl", ".off")  # formats written with quads split along their 0-2 diagonal


# ------------------------------------------------------------------- OBJ read
def _index(token: str, count: int, what: str, where: str) -> int:
    i = int(token)
    if i > 0 and i <= count:
        return i - 1
    if i < 0 and -i <= count:
        return count + i
    raise MeshError(f"{where}: {what} index {i} is outside 1..{count} (or -1..-{count}); "
                    f"fix the face in the file")


def _parse_obj(path: Path):
    """Vertices (n, 3), vt (m, 2) and the faces as lists of (vertex, vt) index pairs."""
    verts: list[list[float]] = []
    uvs: list[list[float]] = []
    faces: list[tuple[list[int], list[int]]] = []
    with open(path, "r", encoding="utf-8-sig", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            tok = line.split()
            if not tok:
                continue
            key = tok[0]
            where = f"{path}:{lineno}"
            try:
                if key == "v":
                    verts.append([float(t) for t in tok[1:4]])
                    if len(verts[-1]) != 3:
                        raise MeshError(f"{where}: vertex line needs 3 coordinates: {line.strip()!r}")
                elif key == "vt":
                    uv = [float(t) for t in tok[1:3]]
                    uvs.append(uv + [0.0] * (2 - len(uv)))
                elif key == "f":
                    vi, ti = [], []
                    for corner in tok[1:]:
                        parts = corner.split("/")
                        vi.append(_index(parts[0], len(verts), "vertex", where))
                        has_t = len(parts) > 1 and parts[1] != ""
                        ti.append(_index(parts[1], len(uvs), "vt", where) if has_t else -1)
                    if len(vi) < 3:
                        raise MeshError(f"{where}: face with {len(vi)} corners; a face needs at "
                                        f"least 3: remove the line")
                    faces.append((vi, ti))
            except ValueError as exc:
                if isinstance(exc, MeshError):
                    raise
                raise MeshError(f"{where}: cannot read {line.strip()!r} ({exc}); fix the line") from exc
    v = np.array(verts, dtype=np.float64).reshape(-1, 3)
    vt = np.array(uvs, dtype=np.float64).reshape(-1, 2)
    return v, vt, faces


def _split_faces(faces):
    """Triangles (t, 3), quads (q, 4) and their vt indices (-1 where missing); polygons with
    more than 4 corners are fan-triangulated."""
    tri, tri_t, quad, quad_t = [], [], [], []
    for vi, ti in faces:
        k = len(vi)
        if k == 3:
            tri.append(vi)
            tri_t.append(ti)
        elif k == 4:
            quad.append(vi)
            quad_t.append(ti)
        else:
            for j in range(1, k - 1):
                tri.append([vi[0], vi[j], vi[j + 1]])
                tri_t.append([ti[0], ti[j], ti[j + 1]])

    def arr(x, k):
        return np.array(x, dtype=np.int64).reshape(-1, k)

    return arr(tri, 3), arr(tri_t, 3), arr(quad, 4), arr(quad_t, 4)


def _sibling_m(path: Path) -> Path | None:
    if path.name.endswith("-w.obj"):
        return path.with_name(path.name[: -len("-w.obj")] + "-m.obj")
    return None


def _rest_from_m(path: Path, n: int, tri: np.ndarray, quad: np.ndarray):
    m_path = _sibling_m(path)
    if m_path is None or not m_path.exists():
        raise MeshError(f"rest='m' needs a material-space file next to {path.name} "
                        f"(X-w.obj -> X-m.obj); {m_path or 'no -w.obj name'} not found")
    mv, _, mfaces = _parse_obj(m_path)
    mtri, _, mquad, _ = _split_faces(mfaces)
    if mv.shape[0] != n or not (np.array_equal(mtri, tri) and np.array_equal(mquad, quad)):
        raise MeshError(f"{m_path.name} does not match {path.name}: {mv.shape[0]} vs {n} vertices, "
                        f"{len(mtri)}+{len(mquad)} vs {len(tri)}+{len(quad)} faces with equal "
                        f"indices needed; use rest='vt' or rest='geometry'")
    return mv[tri], mv[quad]


def _read_obj(path: Path, rest: str):
    v, vt, faces = _parse_obj(path)
    if not faces:
        raise MeshError(f"{path}: no faces ('f' lines); a cloth mesh needs triangles or quads")
    tri, tri_t, quad, quad_t = _split_faces(faces)
    all_vt = bool((tri_t >= 0).all() and (quad_t >= 0).all())
    note = f"rest = {rest!r}"
    if rest == "auto":
        m_path = _sibling_m(path)
        if m_path is not None and m_path.exists():
            rest, note = "m", f"rest = 'auto' chose 'm': the material-space file {m_path.name}"
        elif path.name.endswith("-m.obj"):
            rest, note = "geometry", "rest = 'auto' chose 'geometry': a material-space (-m.obj) file"
        elif all_vt and _REST_VT_MARK in _header(path):
            rest, note = "vt", "rest = 'auto' chose 'vt': rest coordinates written by isocloth"
        elif all_vt:
            rest, note = _vt_or_geometry(v, vt, tri, tri_t, quad, quad_t)
        else:
            rest, note = "geometry", "rest = 'auto' chose 'geometry': not every face corner has a vt"
    rest_tri = rest_quad = None
    if rest == "vt":
        if not all_vt:
            f = int(np.flatnonzero(np.concatenate([(tri_t < 0).any(1), (quad_t < 0).any(1)]))[0])
            raise MeshError(f"{path}: rest='vt' but face {f} has a corner without a vt index; "
                            f"use rest='geometry'")
        uvw = np.concatenate([vt, np.zeros((vt.shape[0], 1))], axis=1)
        rest_tri, rest_quad = uvw[tri_t], uvw[quad_t]
    elif rest == "m":
        rest_tri, rest_quad = _rest_from_m(path, v.shape[0], tri, quad)
    return v, tri, quad, rest_tri, rest_quad, note


_REST_VT_MARK = "# isocloth: vt are rest coordinates [m]"


def _header(path: Path, lines: int = 5) -> str:
    """The first few lines of a text file."""
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        return "".join(fh.readline() for _ in range(lines))


def _polygon_areas(corners: np.ndarray) -> np.ndarray:
    """Areas (f,) of planar-ish polygons given by their corners (f, k, 3) (shoelace via cross products)."""
    if corners.shape[0] == 0:
        return np.zeros(0)
    c = corners - corners[:, :1]
    total = sum(np.cross(c[:, i], c[:, i + 1]) for i in range(1, corners.shape[1] - 1))
    return 0.5 * np.linalg.norm(total, axis=1)


def _vt_or_geometry(v, vt, tri, tri_t, quad, quad_t) -> tuple[str, str]:
    """rest="auto" for an OBJ whose every corner has a vt: the vt are the rest shape [m] when no
    vt face is degenerate and their total area is within ``VT_AREA_MATCH`` of the geometry's;
    otherwise they are texture coordinates (an atlas in [0, 1], or another scale) and the
    geometry is the rest shape. Returns (mode, the reason in words)."""
    uvw = np.concatenate([vt, np.zeros((vt.shape[0], 1))], axis=1)
    rest_areas = np.concatenate([_polygon_areas(uvw[tri_t]), _polygon_areas(uvw[quad_t])])
    geo_areas = np.concatenate([_polygon_areas(v[tri]), _polygon_areas(v[quad])])
    ratio = rest_areas.sum() / geo_areas.sum() if geo_areas.sum() > 0 else np.inf
    flat = int(np.count_nonzero(rest_areas <= 1e-12 * max(rest_areas.max(initial=0.0), 1e-300)))
    if flat == 0 and abs(ratio - 1.0) <= VT_AREA_MATCH:
        return "vt", f"rest = 'auto' chose 'vt': their area is {ratio:.3g} x the geometry's"
    why = (f"{flat} vt faces are degenerate" if flat else f"their area is {ratio:.3g} x the geometry's")
    return "geometry", (f"rest = 'auto' chose 'geometry': the vt look like texture coordinates, not a rest shape "
                        f"({why}); set rest = 'vt' to use them anyway")


# ----------------------------------------------------------- other formats
def _read_other(path: Path):
    errors = []
    try:
        import meshio

        # meshio prints its read errors ("Expected ply", "Couldn't read file ...") before raising: they are
        # reported once, in the MeshError below
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            m = meshio.read(path)
        pts = np.asarray(m.points, dtype=np.float64)
        tri, quad = [], []
        for block in m.cells:
            data = np.asarray(block.data, dtype=np.int64)
            if block.type == "triangle":
                tri.append(data)
            elif block.type == "quad":
                quad.append(data)
            elif block.type == "polygon" and data.ndim == 2 and data.shape[1] > 4:
                k = data.shape[1]
                tri += [data[:, [0, j, j + 1]] for j in range(1, k - 1)]
        if tri or quad:
            return pts, tri, quad
        errors.append("meshio: no triangle or quad cells")
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - any reader failure falls back to trimesh
        # (meshio's PLY reader calls sys.exit(1) on some malformed files)
        errors.append("meshio: cannot parse it" if isinstance(exc, SystemExit) else f"meshio: {exc}")
    try:
        import trimesh

        tm = trimesh.load(path, force="mesh", process=False)
        return np.asarray(tm.vertices, dtype=np.float64), [np.asarray(tm.faces, dtype=np.int64)], []
    except Exception as exc:  # noqa: BLE001
        errors.append(f"trimesh: {exc}")
    raise MeshError(f"cannot read mesh {path} ({'; '.join(errors)}); convert it to OBJ or PLY")


# --------------------------------------------------------------- merging
def merged_vertices(vertices: np.ndarray, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    """Clusters of vertices closer than ``tolerance`` (transitively), for sewing panels.

    Parameters
    ----------
    vertices : (n, 3) float64 [m]
    tolerance : float
        Merge distance [m], >= 0 (pairs at distance <= tolerance are joined).

    Returns
    -------
    new_vertices : (m, 3) float64
        The mean position of each cluster, clusters ordered by their smallest old index.
    old_to_new : (n,) int64
        Cluster index of every old vertex.

    Raises
    ------
    MeshError
        For a negative or non-finite tolerance.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial import cKDTree

    if not (np.isfinite(tolerance) and tolerance >= 0):
        raise MeshError(f"merge tolerance must be a finite length >= 0 m, got {tolerance}")
    n = vertices.shape[0]
    pairs = cKDTree(vertices).query_pairs(tolerance, output_type="ndarray")
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    _, label = connected_components(graph, directed=False)
    # renumber clusters by their smallest member so that the order follows the file
    first = np.full(label.max() + 1 if n else 0, n, dtype=np.int64)
    np.minimum.at(first, label, np.arange(n))
    rank = np.empty_like(first)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    old_to_new = rank[label].astype(np.int64)
    counts = np.bincount(old_to_new, minlength=first.size)
    new = np.stack([np.bincount(old_to_new, vertices[:, c], first.size) for c in range(3)], 1)
    return new / counts[:, None], old_to_new


def _sewn(v, tri, quad, tolerance):
    """Merge close vertices, remap the faces and drop vertices no face uses."""
    v, old_to_new = merged_vertices(v, tolerance)
    tri, quad = old_to_new[tri], old_to_new[quad]
    used = np.unique(np.concatenate([tri.ravel(), quad.ravel()]))
    remap = np.full(v.shape[0], -1, dtype=np.int64)
    remap[used] = np.arange(used.size)
    return v[used], remap[tri], remap[quad]


# ------------------------------------------------------------------ public
def read_mesh(path: str | os.PathLike, *, rest: str = "auto", merge_tolerance: float | None = None,
              name: str | None = None) -> Mesh:
    """Read a cloth mesh from a file.

    OBJ files are parsed here: ``v``, ``vt`` and ``f`` lines (1-based or negative relative
    indices, ``v``, ``v/vt``, ``v//vn``, ``v/vt/vn`` corners; triangles and quads kept,
    larger polygons fan-triangulated); all other lines are skipped. Other formats (PLY, STL,
    OFF, VTK, ...) are read by meshio (trimesh as fallback), keeping quads.

    Parameters
    ----------
    path : str or path-like
    rest : {"auto", "vt", "m", "geometry"}
        Rest (material) shape of an OBJ file. "vt": per-corner rest positions (u, v, 0) [m]
        from the ``vt`` of each face corner. "m": per-corner rest positions from the
        material-space file ``X-m.obj`` next to ``X-w.obj`` (same vertex count and faces).
        "geometry": the file's positions. "auto": "m" for an ``X-w.obj`` with an ``X-m.obj``
        beside it (the ``vt`` of Garment Library ``-w``/``-m`` files may be texture
        coordinates in [0, 1], not metres), "geometry" for an ``X-m.obj`` (material space
        already), else "vt" when every face corner has a ``vt`` and they look like a rest
        shape (no degenerate vt face, total area within ``VT_AREA_MATCH`` of the geometry's;
        a texture atlas does not), else "geometry". Non-OBJ files always use "geometry".
        The choice and its reason are in ``mesh.rest_source``.
    merge_tolerance : float, optional
        Sew panels: merge vertices at most this far apart [m] (clusters joined transitively,
        placed at their mean), remap the faces and drop unused vertices. Per-corner rest
        data survive. Default for files named ``*-w.obj``: the smaller of 0.01 m and
        half the shortest edge (``MERGE_EDGE_FRACTION``); no merging otherwise. A merge that
        collapses a face is an error naming the tolerance.
    name : str, optional
        Mesh name; default the file name without extension.

    Returns
    -------
    Mesh

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    MeshError
        For an unknown rest mode, unreadable lines or files, bad indices, a missing or
        mismatched ``-m.obj``, or ``rest="vt"`` with corners lacking ``vt``.
    """
    path = Path(path)
    if rest not in REST_MODES:
        raise MeshError(f"rest must be one of {REST_MODES}, got {rest!r}")
    if not path.exists():
        raise FileNotFoundError(f"mesh file {path} not found")
    rest_tri = rest_quad = None
    note = "rest = 'geometry' (not an OBJ file)"
    if path.suffix.lower() == ".obj":
        v, tri, quad, rest_tri, rest_quad, note = _read_obj(path, rest)
    else:
        v, tris, quads = _read_other(path)
        if v.ndim == 2 and v.shape[1] == 2:
            v = np.concatenate([v, np.zeros((v.shape[0], 1))], axis=1)
        tri = np.concatenate(tris).reshape(-1, 3) if tris else np.zeros((0, 3), np.int64)
        quad = np.concatenate(quads).reshape(-1, 4) if quads else np.zeros((0, 4), np.int64)
    if merge_tolerance is None and path.name.endswith("-w.obj"):
        merge_tolerance = min(W_FILE_MERGE_TOLERANCE, MERGE_EDGE_FRACTION * _shortest_edge(v, tri, quad))
    if merge_tolerance is not None:
        before = tri.shape[0] + quad.shape[0]
        v, tri, quad = _sewn(v, tri, quad, float(merge_tolerance))
        collapsed = _collapsed_faces(tri, quad)
        if collapsed:
            raise MeshError(f"{path}: merging vertices closer than {merge_tolerance:g} m (merge_tolerance) collapsed "
                            f"{collapsed} of {before} faces: pass a smaller merge_tolerance (cloth.mesh."
                            "merge_tolerance, isocloth info --merge-tolerance)")
        note += f"; vertices within {merge_tolerance:.3g} m merged"
    return Mesh(v, tri, quad, rest_triangle_corners=rest_tri, rest_quad_corners=rest_quad, name=name or path.stem,
                rest_source=note)


def _shortest_edge(v: np.ndarray, tri: np.ndarray, quad: np.ndarray) -> float:
    """Length [m] of the shortest non-zero face edge (inf without faces)."""
    edges = [np.stack([f, np.roll(f, -1, axis=1)], axis=-1).reshape(-1, 2) for f in (tri, quad) if f.size]
    if not edges:
        return np.inf
    e = np.concatenate(edges)
    length = np.linalg.norm(v[e[:, 0]] - v[e[:, 1]], axis=1)
    length = length[length > 0]
    return float(length.min()) if length.size else np.inf


def _collapsed_faces(tri: np.ndarray, quad: np.ndarray) -> int:
    """Faces with a repeated node (collapsed by a merge)."""
    t = (tri[:, 0] == tri[:, 1]) | (tri[:, 1] == tri[:, 2]) | (tri[:, 0] == tri[:, 2]) if tri.size else np.zeros(0, bool)
    q = np.array([len(set(f)) < 4 for f in quad.tolist()], dtype=bool)
    return int(t.sum() + q.sum())


def _flat_rest_uv(mesh: Mesh):
    """Per-corner 2-D rest coordinates when the rest shape lies in a coordinate plane
    (z = 0, y = 0 or x = 0, in that order of preference), else None."""
    if mesh.rest_vertices is None and not mesh.has_per_corner_rest:
        return None
    tri_c, quad_c = mesh.rest_corners
    allc = np.concatenate([tri_c.reshape(-1, 3), quad_c.reshape(-1, 3)])
    for zero, keep in ((2, [0, 1]), (1, [0, 2]), (0, [1, 2])):
        if not allc[:, zero].any():
            return tri_c[..., keep], quad_c[..., keep]
    return None


def _fmt(a: np.ndarray) -> str:
    return "\n".join(" ".join(repr(float(x)) for x in row) for row in a)


def write_mesh(path: str | os.PathLike, mesh: Mesh, positions: np.ndarray | None = None, *,
               comment: str | None = None) -> None:
    """Write a mesh; OBJ by our writer, other formats (PLY, VTK, STL, ...) through meshio.

    OBJ: ``v`` lines with the shortest exact decimal form of each float64, so reading the
    file gives bit-identical positions; triangles, then quads. When the rest shape is flat
    and lies in a coordinate plane (z = 0: (x, y); y = 0: (x, z); x = 0: (y, z)) and differs
    from the positions (``rest_vertices`` or per-corner rest given), one ``vt`` per face
    corner stores it, which :func:`read_mesh` turns back into per-corner rest positions
    (the same metric). Other rest shapes are not stored. PLY is written binary with double
    coordinates (exact); STL (float32) and OFF get the faces triangulated.

    Parameters
    ----------
    path : str or path-like
    mesh : Mesh
    positions : (n, 3) float64 [m], optional
        Positions to write instead of ``mesh.vertices``.
    comment : str, optional
        A comment line put at the top of an OBJ file (e.g. the frame's time).

    Raises
    ------
    MeshError
        If ``positions`` has the wrong shape or is not finite, or meshio cannot write the
        format.
    """
    path = Path(path)
    x = mesh.vertices if positions is None else np.asarray(positions, dtype=np.float64)
    if x.shape != mesh.vertices.shape or not np.isfinite(x).all():
        raise MeshError(f"positions must be finite with shape {mesh.vertices.shape}; got {x.shape}")
    if path.suffix.lower() == ".obj":
        _write_obj(path, mesh, x, comment)
        return
    import meshio

    ext = path.suffix.lower()
    if ext in _TRIANGLE_ONLY:
        cells = [("triangle", mesh.triangulated_faces().astype(np.int32))]
    else:
        cells = [(k, f.astype(np.int32)) for k, f in (("triangle", mesh.triangles), ("quad", mesh.quads))
                 if len(f)]
    kwargs = {"binary": True} if ext in (".ply", ".stl") else {}
    try:
        meshio.write(path, meshio.Mesh(np.ascontiguousarray(x, dtype=np.float64), cells), **kwargs)
    except Exception as exc:  # noqa: BLE001
        raise MeshError(f"cannot write {path} ({exc}); use .obj or .ply") from exc


def _write_obj(path: Path, mesh: Mesh, x: np.ndarray, comment: str | None = None) -> None:
    uv = _flat_rest_uv(mesh)
    lines = [f"# isocloth mesh {mesh.name!r}: {mesh.node_count} vertices, {mesh.triangle_count} "
             f"triangles, {mesh.quad_count} quads; units m"]
    if uv is not None:
        lines.append(_REST_VT_MARK)  # read_mesh(rest="auto") takes these vt as the rest shape
    if comment:
        lines += [f"# {line}" for line in comment.splitlines()]
    if x.shape[0]:
        lines.append("\n".join("v " + r for r in _fmt(x).split("\n")))
    k = 0
    face_lines = []
    for faces, corners in zip((mesh.triangles, mesh.quads), uv or (None, None)):
        if uv is not None and len(faces):
            lines.append("\n".join("vt " + r for r in _fmt(corners.reshape(-1, 2)).split("\n")))
        for row in faces:
            if uv is None:
                face_lines.append("f " + " ".join(str(i + 1) for i in row))
            else:
                face_lines.append("f " + " ".join(f"{i + 1}/{k + j + 1}" for j, i in enumerate(row)))
                k += len(row)
    lines.append("\n".join(face_lines))
    path.write_text("\n".join(s for s in lines if s) + "\n", encoding="utf-8")
