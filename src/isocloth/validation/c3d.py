"""C3D motion-capture files through ezc3d (https://github.com/pyomeca/ezc3d).

Points are read from the ``POINT`` group: labels (``LABELS``, continued in ``LABELS2``, ...),
``RATE`` and ``UNITS``. Samples that the file flags as invalid (negative residual, which ezc3d
reports as NaN) are missing (NaN).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from isocloth.validation.recordings import Recording, RecordingError, _finish, axes_matrix, length_scale

__all__ = ["read_c3d", "write_c3d"]


def _ezc3d():
    try:
        import ezc3d
    except ImportError:  # pragma: no cover - ezc3d is a dependency
        raise ImportError("reading C3D files needs ezc3d: pip install ezc3d") from None
    return ezc3d


def _param(group: dict, key: str):
    entry = group.get(key)
    return None if entry is None else entry.get("value")


def _header_frame_count(path: Path) -> int | None:
    """Frames announced by the C3D header (words 4–5 of the first block, 1-based first and last
    frame; byte order from the parameter section's processor type, 86 = big-endian MIPS), or None
    when it cannot tell (short file, 65535 = "see the parameters"). ezc3d reports the frames it
    could read instead, so a truncated file would pass unnoticed."""
    import struct

    with open(path, "rb") as fh:
        head = fh.read(512)
        if len(head) < 10 or head[0] < 2:
            return None
        fh.seek((head[0] - 1) * 512)
        params = fh.read(4)
    order = ">" if len(params) == 4 and params[3] == 86 else "<"
    first, last = struct.unpack(order + "HH", head[6:10])
    if last == 0xFFFF or last < first:
        return None
    return last - first + 1


def read_c3d(path, *, units: str | None = None, up_axis: str = "z", origin=None) -> Recording:
    """Read the 3-D points of a C3D file.

    Parameters
    ----------
    path : str or Path
    units : length unit when the file has no ``POINT:UNITS`` ("m", "cm", "mm"); an explicit
        unit that contradicts the file is an error.
    up_axis, origin : see :func:`isocloth.validation.recordings.read_recording`.

    Returns
    -------
    Recording (times k / rate from 0, metres, NaN for invalid samples).

    Raises
    ------
    RecordingError
        If the file has no points, no rate, an unknown unit, or fewer frames than its header
        announces (a truncated file).
    """
    ezc3d = _ezc3d()
    path = Path(path)
    try:
        c = ezc3d.c3d(str(path))
    except Exception as exc:  # ezc3d raises plain RuntimeError/IOError on damaged files
        raise RecordingError(f"{path.name}: not a readable C3D file ({exc})") from None
    point = c["parameters"]["POINT"]
    pts = np.asarray(c["data"]["points"], dtype=float)  # (4, m, f)
    if pts.ndim != 3 or pts.shape[1] == 0:
        raise RecordingError(f"{path.name}: the C3D file has no 3-D points")
    labels = list(_param(point, "LABELS") or [])
    k = 2
    while len(labels) < pts.shape[1] and f"LABELS{k}" in point:
        labels += list(_param(point, f"LABELS{k}"))
        k += 1
    labels = [str(s).strip() or f"P{j + 1}" for j, s in enumerate(labels[:pts.shape[1]])]
    labels += [f"P{j + 1}" for j in range(len(labels), pts.shape[1])]
    rate_v = _param(point, "RATE")
    rate = float(np.ravel(rate_v)[0]) if rate_v is not None and np.size(rate_v) else float(c["header"]["points"]["frame_rate"])
    if not rate > 0:
        raise RecordingError(f"{path.name}: POINT:RATE is {rate}; the frame rate must be positive")
    unit_v = _param(point, "UNITS")
    file_units = str(np.ravel(unit_v)[0]).strip() if unit_v is not None and np.size(unit_v) else None
    if file_units == "":
        file_units = None
    if file_units is not None:
        length_scale(file_units)
    expected = _header_frame_count(path)
    if expected is not None and pts.shape[2] < expected:
        raise RecordingError(f"{path.name}: the header announces {expected} frames but the file holds "
                             f"{pts.shape[2]}: it is truncated (copy it again, or re-export it)")
    x = np.transpose(pts[:3], (2, 1, 0)).copy()  # (f, m, 3)
    resid = c["data"].get("meta_points", {}).get("residuals")
    if resid is not None:
        r = np.asarray(resid)[0].T  # (f, m)
        x[r < 0] = np.nan
    x[~np.isfinite(x).all(axis=2)] = np.nan
    t = np.arange(x.shape[0]) / rate
    return _finish(t, x, labels, rate, path.name, {"format": "c3d"}, units, file_units, up_axis, origin)


def write_c3d(path, rec: Recording, *, units: str = "mm", up_axis: str = "z") -> Path:
    """Write ``rec`` as a C3D file (points only; missing samples flagged invalid), atomically.

    Raises
    ------
    RecordingError
        If the frame times are not regular (C3D stores a rate, not times) or the unit is unknown.
    """
    from isocloth.io.atomic import atomic_path

    ezc3d = _ezc3d()
    if not rec.regular():
        raise RecordingError("C3D stores a fixed frame rate; resample the recording to regular times first")
    scale = length_scale(units)
    x = (rec.markers @ axes_matrix(up_axis)) / scale
    c = ezc3d.c3d()
    c["parameters"]["POINT"]["RATE"]["value"] = [rec.rate]
    c["parameters"]["POINT"]["LABELS"]["value"] = tuple(rec.names)
    c["parameters"]["POINT"]["UNITS"]["value"] = [{1.0: "m", 1e-2: "cm", 1e-3: "mm"}[scale]]
    pts = np.ones((4, rec.marker_count, rec.frame_count))
    pts[:3] = np.transpose(x, (2, 1, 0))
    c["data"]["points"] = pts
    path = Path(path)
    with atomic_path(path) as tmp:
        c.write(str(tmp))
    return path
