"""Simulation trajectories on disk: one ``.npz`` of arrays plus a JSON metadata file.

Layout of a trajectory folder::

    folder/trajectory.npz   times (F,), positions (F, n, 3), triangles (t, 3), quads (q, 4)
                            and optionally velocities (F, n, 3); uncompressed, exact dtypes
    folder/metadata.json    JSON object (indent 2, sorted keys)

    folder/trajectory.part-00001.npz, ...   (while a run is being written) times, positions and
                            velocities of the frames after those of trajectory.npz, listed in order by
                            the metadata's "parts", which also records "base_frames" (the frames of
                            trajectory.npz they follow)

Every file is written atomically (see :mod:`isocloth.io.atomic`), arrays before metadata, so a
reader never sees a half-written file. :class:`TrajectoryWriter` writes trajectory.npz at its first
flush and each later flush only the new frames as a part (the run's I/O stays linear in its
length); closing it merges everything into trajectory.npz. A part the metadata does not list (a
crash between the two writes) is ignored.
"""

from __future__ import annotations

import copy
import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from isocloth.io.atomic import atomic_path, atomic_write_text

__all__ = ["ARRAYS_FILE", "METADATA_FILE", "PART_FILES", "RUN_FOLDER_FIX", "Trajectory", "TrajectoryWriter",
           "load_trajectory", "metadata_json_text", "require_frames", "save_trajectory"]

ARRAYS_FILE = "trajectory.npz"
METADATA_FILE = "metadata.json"
PART_FILES = "trajectory.part-*.npz"
"""Glob of the part files of a trajectory being written."""


def _json_default(obj: Any) -> Any:
    """Convert numpy scalars/arrays and paths for :func:`json.dumps`."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"metadata value of type {type(obj).__name__} is not JSON-serialisable")


def metadata_json_text(metadata: dict) -> str:
    """Return the JSON text (indent 2, sorted keys, trailing newline) of ``metadata``.

    Numpy scalars and arrays are converted to Python numbers and lists, paths to strings.

    Raises
    ------
    TypeError
        If ``metadata`` is not a dict or holds a value that cannot be serialised.
    ValueError
        If it holds NaN or infinity (not valid JSON) or a circular reference.
    """
    if not isinstance(metadata, dict):
        raise TypeError(f"metadata must be a dict, got {type(metadata).__name__}")
    return json.dumps(
        metadata, indent=2, sort_keys=True, default=_json_default, allow_nan=False
    ) + "\n"


def _faces_array(a: Any, k: int, name: str) -> np.ndarray:
    arr = np.asarray(a if a is not None else np.zeros((0, k), dtype=np.int64))
    if arr.size == 0:
        return np.zeros((0, k), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != k:
        raise ValueError(f"{name} must have shape (count, {k}); got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must hold integer node indices; got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _float_array(a: Any, name: str) -> np.ndarray:
    arr = np.asarray(a)
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{name} must be numeric; got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=np.float64)


@dataclass(eq=False)
class Trajectory:
    """A recorded cloth motion: node positions at a sequence of times.

    Attributes
    ----------
    times : (F,) float64
        Frame times [s], non-decreasing.
    positions : (F, n, 3) float64
        Node positions [m] of each frame.
    triangles : (t, 3) int64
        Triangle node indices (0-based), counter-clockwise.
    quads : (q, 4) int64
        Quadrilateral node indices (0-based), counter-clockwise.
    metadata : dict
        JSON-serialisable description (scene, parameters, versions, ...).
    velocities : (F, n, 3) float64 or None
        Node velocities [m/s] of each frame, if recorded.

    The constructor converts the arrays to the dtypes above (copying only when needed).

    Raises
    ------
    ValueError
        If an array has the wrong shape or dtype, times are not finite and non-decreasing,
        or a face index is out of range.
    TypeError
        If ``metadata`` is not a dict.
    """

    times: np.ndarray
    positions: np.ndarray
    triangles: np.ndarray = field(default=None)  # type: ignore[assignment]
    quads: np.ndarray = field(default=None)  # type: ignore[assignment]
    metadata: dict = field(default_factory=dict)
    velocities: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.times = _float_array(self.times, "times")
        self.positions = _float_array(self.positions, "positions")
        if self.times.ndim != 1:
            raise ValueError(f"times must have shape (F,); got {self.times.shape}")
        frames = self.times.shape[0]
        if self.positions.ndim != 3 or self.positions.shape[2] != 3:
            raise ValueError(f"positions must have shape (F, n, 3); got {self.positions.shape}")
        if self.positions.shape[0] != frames:
            raise ValueError(
                f"positions has {self.positions.shape[0]} frames but times has {frames}"
            )
        if not np.all(np.isfinite(self.times)):
            raise ValueError("times must be finite")
        if frames > 1 and np.any(np.diff(self.times) < 0):
            raise ValueError("times must be non-decreasing")
        if self.velocities is not None:
            self.velocities = _float_array(self.velocities, "velocities")
            if self.velocities.shape != self.positions.shape:
                raise ValueError(
                    f"velocities must have the shape of positions {self.positions.shape}; "
                    f"got {self.velocities.shape}"
                )
        self.triangles = _faces_array(self.triangles, 3, "triangles")
        self.quads = _faces_array(self.quads, 4, "quads")
        n = self.positions.shape[1]
        for name, faces in (("triangles", self.triangles), ("quads", self.quads)):
            if faces.size and (faces.min() < 0 or faces.max() >= n):
                raise ValueError(
                    f"{name} index out of range [0, {n}): min {faces.min()}, max {faces.max()}"
                )
        if not isinstance(self.metadata, dict):
            raise TypeError(f"metadata must be a dict, got {type(self.metadata).__name__}")

    @property
    def frame_count(self) -> int:
        """Number of frames F."""
        return int(self.times.shape[0])

    @property
    def node_count(self) -> int:
        """Number of nodes n."""
        return int(self.positions.shape[1])


RUN_FOLDER_FIX = "the run folder is damaged: run the scene again into a new folder (isocloth run ... --out DIR)"
"""The remedy named by :func:`load_trajectory` for a trajectory it refuses."""


def require_frames(traj: Trajectory, where: str = "the trajectory", fix: str | None = None) -> Trajectory:
    """``traj`` itself when it can be shown, checked or exported: at least one frame, and finite
    positions (and velocities, when recorded) in every frame.

    Parameters
    ----------
    traj : Trajectory
    where : str
        What the message names (a file, "the trajectory").
    fix : str or None
        The remedy appended to the message.

    Raises
    ------
    ValueError
        Naming the empty trajectory, or the first frame (index and time), node and array holding
        NaN or inf, and how many frames do.
    """
    tail = f"; {fix}" if fix else ""
    if traj.frame_count == 0:
        raise ValueError(f"{where} holds no frame (an emptied or damaged trajectory){tail}")
    for name in ("positions", "velocities"):
        arr = getattr(traj, name)
        if arr is None:
            continue
        bad = ~np.isfinite(arr).all(axis=2)  # (F, n)
        if bad.any():
            frames = np.flatnonzero(bad.any(axis=1))
            f = int(frames[0])
            node = int(np.flatnonzero(bad[f])[0])
            more = f" (and {frames.size - 1} later frame{'s' * (frames.size > 2)})" if frames.size > 1 else ""
            raise ValueError(f"{where}: the {name} of frame {f} (t = {float(traj.times[f]):.6g} s) are not finite "
                             f"(NaN or inf at node {node}){more}{tail}")
    return traj


def _write_npz(path: Path, arrays: dict) -> None:
    """The arrays, uncompressed, atomically at ``path``."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)


def _frame_arrays(frames: list) -> dict:
    """times (F,), positions (F, n, 3) and, when recorded, velocities (F, n, 3) of (t, x, v) frames."""
    out = {"times": np.array([f[0] for f in frames], dtype=np.float64),
           "positions": np.stack([f[1] for f in frames])}
    if frames[0][2] is not None:
        out["velocities"] = np.stack([f[2] for f in frames])
    return out


def save_trajectory(folder: str | os.PathLike, traj: Trajectory) -> Path:
    """Save a trajectory to ``folder/trajectory.npz`` and ``folder/metadata.json``.

    Parameters
    ----------
    folder : str or os.PathLike
        Output folder, created (with parents) if missing. Existing files are replaced.
    traj : Trajectory
        The trajectory; arrays are stored uncompressed with their exact float64 / int64
        values.

    Returns
    -------
    pathlib.Path
        The folder.

    Raises
    ------
    TypeError, ValueError
        If the metadata is not JSON-serialisable (nothing is written then).
    OSError
        On file system errors.
    """
    out = Path(folder)
    arrays = {name: getattr(traj, name) for name in ("times", "positions", "triangles", "quads")}
    if traj.velocities is not None:
        arrays["velocities"] = traj.velocities
    text = metadata_json_text(traj.metadata)  # fail before touching any file
    out.mkdir(parents=True, exist_ok=True)
    _write_npz(out / ARRAYS_FILE, arrays)
    atomic_write_text(out / METADATA_FILE, text)
    return out


def load_trajectory(folder: str | os.PathLike) -> Trajectory:
    """Load a trajectory saved by :func:`save_trajectory` or :class:`TrajectoryWriter`.

    Parameters
    ----------
    folder : str or os.PathLike
        Folder holding ``trajectory.npz`` and ``metadata.json``.

    Returns
    -------
    Trajectory

    Raises
    ------
    FileNotFoundError
        If the folder or one of the two files is missing (the message names it).
    ValueError
        If a file is corrupt, an array is missing or has the wrong shape/dtype (the
        message names the array), the metadata is not a JSON object, or the trajectory has no
        frame or a non-finite position or velocity (:func:`require_frames`): every reader of a run
        folder (render, export, check, dgli, resume) refuses it with that message.
    """
    base = Path(folder)
    arrays_path = base / ARRAYS_FILE
    meta_path = base / METADATA_FILE
    for p in (arrays_path, meta_path):
        if not p.is_file():
            raise FileNotFoundError(f"trajectory file missing: {p}")
    try:
        metadata = json.loads(meta_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{meta_path} is not valid JSON: {exc}") from exc
    if not isinstance(metadata, dict):
        raise ValueError(f"{meta_path} must hold a JSON object, got {type(metadata).__name__}")
    try:
        with np.load(arrays_path, allow_pickle=False) as npz:
            data = {key: npz[key] for key in npz.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise ValueError(f"{arrays_path} is not a readable .npz archive: {exc}") from exc
    for key in ("times", "positions", "triangles", "quads"):
        if key not in data:
            raise ValueError(f"{arrays_path} lacks the array '{key}' (has {sorted(data)})")
    parts = metadata.get("parts") or []
    if parts and int(metadata.get("base_frames", -1)) == len(data["times"]):
        # (a base with another frame count was merged after the metadata listed the parts)
        data = _with_parts(base, data, parts)
    metadata = {k: v for k, v in metadata.items() if k not in ("parts", "base_frames")}
    try:
        traj = Trajectory(data["times"], data["positions"], data["triangles"], data["quads"],
                          metadata, data.get("velocities"))
    except ValueError as exc:
        raise ValueError(f"{arrays_path}: {exc}") from exc
    return require_frames(traj, str(arrays_path), RUN_FOLDER_FIX)


def _with_parts(base: Path, data: dict, parts: list) -> dict:
    """``data`` (arrays of trajectory.npz) with the frames of the part files appended."""
    keys = ("times", "positions") + (("velocities",) if "velocities" in data else ())
    chunks = {k: [data[k]] for k in keys}
    for name in parts:
        path = base / str(name)
        if path.parent != base or not path.is_file():
            raise FileNotFoundError(f"trajectory part missing: {path} (listed in {base / METADATA_FILE})")
        try:
            with np.load(path, allow_pickle=False) as npz:
                for k in keys:
                    chunks[k].append(npz[k])
        except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as exc:
            raise ValueError(f"{path} is not a readable trajectory part: {exc}") from exc
    try:
        return dict(data, **{k: np.concatenate(v) for k, v in chunks.items()})
    except ValueError as exc:
        raise ValueError(f"{base}: the parts do not fit trajectory.npz: {exc}") from exc


class TrajectoryWriter:
    """Incrementally record a trajectory, saving it to disk every few frames.

    The first :meth:`flush` writes ``folder/trajectory.npz`` and ``folder/metadata.json``
    atomically; each later one writes only the frames since the previous flush, as a part file
    listed by the metadata (see the module docstring), so a long run's I/O grows linearly with
    its length; :meth:`close` merges everything into ``trajectory.npz``. The metadata gains
    ``"frames"`` (F) and ``"complete"`` (False until :meth:`close` with ``complete=True``). A run interrupted at
    any point (e.g. by ``KeyboardInterrupt``) leaves the last flushed state on disk, and the
    writer stays consistent, so calling :meth:`flush` or :meth:`close` afterwards saves every
    frame whose :meth:`append` returned.

    Parameters
    ----------
    folder : str or os.PathLike
        Output folder, created if missing.
    triangles : (t, 3) int array
        Triangle node indices.
    quads : (q, 4) int array
        Quadrilateral node indices.
    metadata : dict or None
        JSON-serialisable metadata (copied; ``"frames"`` and ``"complete"`` are overwritten).
    flush_every : int, default 50
        Flush automatically after every ``flush_every`` appended frames; 0 disables this.

    Raises
    ------
    ValueError
        If the faces are malformed or ``flush_every`` is negative.
    TypeError
        If the metadata is not JSON-serialisable.

    It is also a context manager: leaving the block closes it, with ``complete`` telling
    whether the block ended without an exception.
    """

    def __init__(
        self,
        folder: str | os.PathLike,
        triangles: np.ndarray | None,
        quads: np.ndarray | None,
        metadata: dict | None = None,
        flush_every: int = 50,
    ) -> None:
        if int(flush_every) < 0:
            raise ValueError(f"flush_every must be >= 0, got {flush_every}")
        self.folder = Path(folder)
        self.flush_every = int(flush_every)
        self._triangles = _faces_array(triangles, 3, "triangles")
        self._quads = _faces_array(quads, 4, "quads")
        self._metadata = copy.deepcopy(dict(metadata or {}))
        metadata_json_text(self._metadata)  # fail early on unserialisable metadata
        # One tuple (t, x, v) per frame, added by a single list.append: a frame is either
        # fully recorded or absent, whenever an interrupt strikes.
        self._frames: list[tuple[float, np.ndarray, np.ndarray | None]] = []
        self._closed = False
        self._base_frames = 0  # frames in trajectory.npz (0: not written yet)
        self._parts: list[str] = []  # part files after it, in order
        self._on_disk = 0  # frames written (base + parts)

    @property
    def frame_count(self) -> int:
        """Number of frames appended so far."""
        return len(self._frames)

    def append(
        self, t: float, positions: np.ndarray, velocities: np.ndarray | None = None
    ) -> None:
        """Record one frame (the arrays are copied) and flush every ``flush_every`` frames.

        Parameters
        ----------
        t : float
            Frame time [s]; must not be smaller than the previous frame's.
        positions : (n, 3) float array
            Node positions [m].
        velocities : (n, 3) float array or None
            Node velocities [m/s]; give them for every frame or for none.

        Raises
        ------
        RuntimeError
            If the writer is closed.
        ValueError
            On a shape mismatch, a non-finite or decreasing time, or velocities given for
            some frames only.
        """
        if self._closed:
            raise RuntimeError("TrajectoryWriter is closed")
        t = float(t)
        x = np.array(positions, dtype=np.float64, copy=True)
        v = None if velocities is None else np.array(velocities, dtype=np.float64, copy=True)
        if x.ndim != 2 or x.shape[1] != 3:
            raise ValueError(f"positions must have shape (n, 3); got {x.shape}")
        if v is not None and v.shape != x.shape:
            raise ValueError(f"velocities must have shape {x.shape}; got {v.shape}")
        if not np.isfinite(t):
            raise ValueError(f"time must be finite, got {t}")
        if self._frames:
            t_prev, x_prev, v_prev = self._frames[-1]
            if x.shape != x_prev.shape:
                raise ValueError(f"positions has {len(x)} nodes; earlier frames {len(x_prev)}")
            if (v is None) != (v_prev is None):
                raise ValueError("velocities must be given for every frame or for none")
            if t < t_prev:
                raise ValueError(f"time {t} is before the previous frame's {t_prev}")
        else:
            for name, faces in (("triangles", self._triangles), ("quads", self._quads)):
                if faces.size and faces.max() >= x.shape[0]:
                    raise ValueError(f"{name} index {faces.max()} >= node count {x.shape[0]}")
        self._frames.append((t, x, v))
        if self.flush_every and len(self._frames) % self.flush_every == 0:
            self.flush()

    def trajectory(self, complete: bool = False) -> Trajectory:
        """Return the frames recorded so far as a :class:`Trajectory` (arrays copied).

        ``metadata`` gets ``"frames"`` and ``"complete"`` (the argument).

        Raises
        ------
        ValueError
            If no frame has been appended.
        """
        frames = list(self._frames)
        if not frames:
            raise ValueError("no frame has been appended")
        meta = copy.deepcopy(self._metadata)
        meta["frames"] = len(frames)
        meta["complete"] = bool(complete)
        arrays = _frame_arrays(frames)
        return Trajectory(
            times=arrays["times"],
            positions=arrays["positions"],
            triangles=self._triangles.copy(),
            quads=self._quads.copy(),
            metadata=meta,
            velocities=arrays.get("velocities"),
        )

    def flush(self, complete: bool = False) -> None:
        """Write the frames appended since the last flush (the first flush: trajectory.npz with
        all frames so far; later ones: a part file), then the metadata, atomically.

        Does nothing if no frame has been appended yet.

        Parameters
        ----------
        complete : bool, default False
            Value recorded as ``metadata["complete"]``.

        Raises
        ------
        OSError
            On file system errors (the previous files are then left intact).
        """
        if not self._frames:
            return
        if not self._base_frames:
            self._merge(complete)
            return
        new = self._frames[self._on_disk:]
        if new:
            name = f"trajectory.part-{len(self._parts) + 1:05d}.npz"
            _write_npz(self.folder / name, _frame_arrays(new))
            self._parts.append(name)
            self._on_disk = len(self._frames)
        meta = copy.deepcopy(self._metadata)
        meta.update(frames=self._on_disk, complete=bool(complete), base_frames=self._base_frames,
                    parts=list(self._parts))
        atomic_write_text(self.folder / METADATA_FILE, metadata_json_text(meta))

    def _merge(self, complete: bool) -> None:
        """Write every frame into trajectory.npz (and metadata without parts), then delete the
        part files (also those of an earlier writer in the folder)."""
        save_trajectory(self.folder, self.trajectory(complete=complete))
        self._base_frames = self._on_disk = len(self._frames)
        self._parts = []
        for p in self.folder.glob(PART_FILES):
            p.unlink(missing_ok=True)

    def close(self, complete: bool = True) -> None:
        """Flush all frames, recording ``complete``, and close the writer.

        Calling it again does nothing.

        Parameters
        ----------
        complete : bool, default True
            Whether the run finished normally.
        """
        if self._closed:
            return
        if self._frames:
            self._merge(complete)
        self._closed = True

    def __enter__(self) -> TrajectoryWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(complete=exc_type is None)
