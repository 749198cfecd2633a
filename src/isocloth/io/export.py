"""Per-frame mesh export (Wavefront OBJ, binary PLY) for external viewers such as Blender.

Frames are written by :func:`isocloth.mesh.io.write_mesh` (OBJ with the shortest exact decimal
form of every float64, PLY through meshio with double coordinates), so both formats store the
positions losslessly; :func:`read_frame` reads them back with :func:`isocloth.mesh.io.read_mesh`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from isocloth.io.atomic import atomic_path
from isocloth.io.trajectory import Trajectory, require_frames

__all__ = ["EXPORT_FORMATS", "export_frames", "read_frame"]

EXPORT_FORMATS = ("obj", "ply")


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
        If ``fmt`` is unknown, ``every`` < 1, or the trajectory has no frame or a non-finite
        position (:func:`~isocloth.io.trajectory.require_frames`; nothing is written then).
    OSError
        On file system errors, e.g. ``folder`` is an existing file.
    """
    from isocloth.mesh.io import write_mesh
    from isocloth.mesh.mesh import Mesh

    fmt = str(fmt).lower().lstrip(".")
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; allowed: {', '.join(EXPORT_FORMATS)}")
    if int(every) < 1:
        raise ValueError(f"every must be >= 1, got {every}")
    require_frames(traj)
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for i in range(0, traj.frame_count, int(every)):
        path = out / f"frame_{i:05d}.{fmt}"
        mesh = Mesh(traj.positions[i], traj.triangles, traj.quads, name=f"frame {i}")
        with atomic_path(path) as tmp:
            write_mesh(tmp, mesh, comment=f"t = {float(traj.times[i])!r} s")
        written.append(path)
        if progress is not None:
            progress(len(written), -(-traj.frame_count // int(every)))
    return written


def read_frame(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read an exported frame back: (positions (n, 3) float64 [m], triangles (t, 3) int64,
    quads (q, 4) int64), with :func:`isocloth.mesh.io.read_mesh` (the file's geometry).

    Raises
    ------
    ValueError
        For a suffix other than .obj or .ply.
    FileNotFoundError
        If the file does not exist.
    """
    from isocloth.mesh.io import read_mesh

    path = Path(path)
    if path.suffix.lower().lstrip(".") not in EXPORT_FORMATS:
        raise ValueError(f"unsupported suffix {path.suffix!r}; read_frame reads the exported {', '.join(EXPORT_FORMATS)}")
    mesh = read_mesh(path, rest="geometry")
    return mesh.vertices, mesh.triangles, mesh.quads
