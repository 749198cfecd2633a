"""Per-frame mesh export (Wavefront OBJ, binary PLY) for external viewers such as Blender.

Both formats store positions losslessly: OBJ writes each coordinate with 17 significant
digits (``%.17g``, enough to round-trip any float64), PLY stores them as little-endian
``double``. :func:`read_frame` reads either back (for tests and quick checks); it is not a
general-purpose reader.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from isocloth.io.atomic import atomic_write_bytes
from isocloth.io.trajectory import Trajectory

__all__ = ["EXPORT_FORMATS", "export_frames", "read_frame", "frame_obj_text", "frame_ply_bytes"]

EXPORT_FORMATS = ("obj", "ply")

_PLY_SCALARS = {
    "char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1",
    "short": "i2", "int16": "i2", "ushort": "u2", "uint16": "u2",
    "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
    "float": "f4", "float32": "f4", "double": "f8", "float64": "f8",
}


def _faces(triangles: np.ndarray | None, quads: np.ndarray | None):
    tri = np.zeros((0, 3), np.int64) if triangles is None else np.asarray(triangles, np.int64)
    quad = np.zeros((0, 4), np.int64) if quads is None else np.asarray(quads, np.int64)
    return tri.reshape(-1, 3), quad.reshape(-1, 4)


def frame_obj_text(
    positions: np.ndarray,
    triangles: np.ndarray | None,
    quads: np.ndarray | None,
    comment: str | None = None,
) -> str:
    """Return the Wavefront OBJ text of one mesh frame.

    Parameters
    ----------
    positions : (n, 3) float64
        Node positions [m], written with ``%.17g`` (lossless).
    triangles : (t, 3) int or None
        Triangle node indices (0-based; written 1-based).
    quads : (q, 4) int or None
        Quadrilateral node indices (0-based; written 1-based).
    comment : str or None
        Optional comment line(s) put at the top.

    Returns
    -------
    str
        ``v`` lines, then triangle ``f`` lines, then quad ``f`` lines.
    """
    x = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    tri, quad = _faces(triangles, quads)
    parts: list[str] = []
    if comment:
        parts.extend(f"# {line}\n" for line in comment.splitlines())
    parts.extend("v %.17g %.17g %.17g\n" % (a, b, c) for a, b, c in x.tolist())
    parts.extend("f %d %d %d\n" % (a, b, c) for a, b, c in (tri + 1).tolist())
    parts.extend("f %d %d %d %d\n" % (a, b, c, d) for a, b, c, d in (quad + 1).tolist())
    return "".join(parts)


def frame_ply_bytes(
    positions: np.ndarray, triangles: np.ndarray | None, quads: np.ndarray | None
) -> bytes:
    """Return a binary little-endian PLY file of one mesh frame.

    Parameters
    ----------
    positions : (n, 3) float64
        Node positions [m], stored as ``double x, y, z``.
    triangles, quads : (t, 3), (q, 4) int or None
        Faces (0-based), stored as ``list uchar int vertex_indices``, triangles first.

    Returns
    -------
    bytes
    """
    x = np.ascontiguousarray(positions, dtype="<f8").reshape(-1, 3)
    tri, quad = _faces(triangles, quads)
    header = (
        "ply\nformat binary_little_endian 1.0\ncomment isocloth frame\n"
        f"element vertex {x.shape[0]}\n"
        "property double x\nproperty double y\nproperty double z\n"
        f"element face {tri.shape[0] + quad.shape[0]}\n"
        "property list uchar int vertex_indices\nend_header\n"
    )
    chunks = [header.encode("ascii"), x.tobytes()]
    for faces in (tri, quad):
        if faces.shape[0]:
            rec = np.empty(faces.shape[0], dtype=[("k", "u1"), ("v", "<i4", (faces.shape[1],))])
            rec["k"] = faces.shape[1]
            rec["v"] = faces
            chunks.append(rec.tobytes())
    return b"".join(chunks)


def export_frames(
    traj: Trajectory, folder: str | os.PathLike, fmt: str = "obj", every: int = 1, progress=None
) -> list[Path]:
    """Write one mesh file per exported frame: ``frame_00000.obj``, ``frame_00001.obj``...

    Parameters
    ----------
    traj : Trajectory
        Trajectory to export.
    folder : str or os.PathLike
        Output folder, created if missing.
    fmt : {"obj", "ply"}
        File format (see module docstring); both keep float64 positions exactly.
    every : int, default 1
        Export frames 0, every, 2*every, ...; files are named by the frame index.
    progress : callable(done, total) or None
        Called after each written file.

    Returns
    -------
    list of pathlib.Path
        The written files, in frame order.

    Raises
    ------
    ValueError
        If ``fmt`` is unknown or ``every`` < 1.
    OSError
        On file system errors.
    """
    fmt = str(fmt).lower().lstrip(".")
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; allowed: {', '.join(EXPORT_FORMATS)}")
    if int(every) < 1:
        raise ValueError(f"every must be >= 1, got {every}")
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for i in range(0, traj.frame_count, int(every)):
        path = out / f"frame_{i:05d}.{fmt}"
        x = traj.positions[i]
        if fmt == "obj":
            comment = f"t = {float(traj.times[i])!r} s"
            data = frame_obj_text(x, traj.triangles, traj.quads, comment).encode("ascii")
        else:
            data = frame_ply_bytes(x, traj.triangles, traj.quads)
        atomic_write_bytes(path, data)
        written.append(path)
        if progress is not None:
            progress(len(written), -(-traj.frame_count // int(every)))
    return written


def _split_faces(faces: list[list[int]], path: Path):
    sizes = {len(f) for f in faces}
    if sizes - {3, 4}:
        raise ValueError(f"{path}: only triangles and quads are supported, found sizes {sizes}")
    tri = np.array([f for f in faces if len(f) == 3], dtype=np.int64).reshape(-1, 3)
    quad = np.array([f for f in faces if len(f) == 4], dtype=np.int64).reshape(-1, 4)
    return tri, quad


def _read_obj(path: Path):
    verts: list[tuple[float, float, float]] = []
    faces: list[list[int]] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            tok = line.split()
            if not tok:
                continue
            try:
                if tok[0] == "v":
                    verts.append((float(tok[1]), float(tok[2]), float(tok[3])))
                elif tok[0] == "f":
                    idx = [int(t.split("/")[0]) for t in tok[1:]]
                    # negative indices count back from the latest vertex
                    faces.append([i - 1 if i > 0 else len(verts) + i for i in idx])
            except (IndexError, ValueError) as exc:
                raise ValueError(f"{path}:{lineno}: malformed line {line.strip()!r}") from exc
    x = np.array(verts, dtype=np.float64).reshape(-1, 3)
    return (x, *_split_faces(faces, path))


def _read_ply(path: Path):
    raw = path.read_bytes()
    end = raw.find(b"end_header")
    if not raw.startswith(b"ply") or end < 0:
        raise ValueError(f"{path}: not a PLY file")
    body = raw.index(b"\n", end) + 1
    lines = raw[:body].decode("ascii").splitlines()
    if "format binary_little_endian 1.0" not in lines:
        raise ValueError(f"{path}: only binary_little_endian PLY is supported")
    elements: list[list] = []  # [name, count, [(prop, dtype) | (prop, count_t, index_t)]]
    for line in lines:
        tok = line.split()
        if tok[:1] == ["element"]:
            elements.append([tok[1], int(tok[2]), []])
        elif tok[:1] == ["property"] and elements:
            if tok[1] == "list":
                elements[-1][2].append((tok[4], _PLY_SCALARS[tok[2]], _PLY_SCALARS[tok[3]]))
            else:
                elements[-1][2].append((tok[2], _PLY_SCALARS[tok[1]]))
    pos = body
    x = np.zeros((0, 3))
    faces: list[list[int]] = []
    for name, count, props in elements:
        if all(len(p) == 2 for p in props):
            dt = np.dtype([(p[0], "<" + p[1]) for p in props])
            rec = np.frombuffer(raw, dtype=dt, count=count, offset=pos)
            pos += dt.itemsize * count
            if name == "vertex":
                x = np.stack([rec["x"], rec["y"], rec["z"]], axis=1).astype(np.float64)
            continue
        if name != "face" or len(props) != 1:
            raise ValueError(f"{path}: unsupported element {name!r} with list properties")
        _, count_t, index_t = props[0]
        ct, it = np.dtype("<" + count_t), np.dtype("<" + index_t)
        for _ in range(count):
            k = int(np.frombuffer(raw, dtype=ct, count=1, offset=pos)[0])
            pos += ct.itemsize
            faces.append(np.frombuffer(raw, dtype=it, count=k, offset=pos).tolist())
            pos += it.itemsize * k
    return (x, *_split_faces(faces, path))


def read_frame(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read a mesh frame written by :func:`export_frames`.

    Parameters
    ----------
    path : str or os.PathLike
        An ``.obj`` file (``v`` and ``f`` lines; other lines ignored) or a binary
        little-endian ``.ply`` file.

    Returns
    -------
    positions : (n, 3) float64
        Node positions [m].
    triangles : (t, 3) int64
        Triangles (0-based), in file order.
    quads : (q, 4) int64
        Quadrilaterals (0-based), in file order.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        On an unknown suffix, a malformed file, or faces other than triangles and quads.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"mesh frame not found: {p}")
    suffix = p.suffix.lower()
    if suffix == ".obj":
        return _read_obj(p)
    if suffix == ".ply":
        try:
            return _read_ply(p)
        except (KeyError, IndexError, UnicodeDecodeError) as exc:
            raise ValueError(f"{p}: malformed PLY file ({exc})") from exc
    raise ValueError(f"unknown mesh frame suffix {suffix!r}; allowed: .obj, .ply")
