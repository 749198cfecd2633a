"""Motion-capture recordings of a textile: the :class:`Recording` container and file readers.

A recording is a sequence of frames ϕ⁰ … ϕᵐ of marker positions (thesis §4.2, seed 000 §7.2).
Positions are stored in metres in isocloth's frame (z up, gravity −z, see docs/conventions.md).
A marker that the cameras lost in a frame is NaN there: cloth markers are never interpolated
(thesis Remark 4.2.3 / seed 000 Remark 7.1); rigid markers (e.g. the ends of a stick) may be
filled linearly with :meth:`Recording.filled` (seed 000 Remark 7.3).

Formats (picked by :func:`read_recording`):

- OptiTrack Motive CSV exports (``isocloth.validation.motive``),
- C3D files through ezc3d (``isocloth.validation.c3d``),
- a plain layout: ``.npz`` with ``markers`` (f, m, 3), ``times`` (f,), ``names`` (m,), ``units``;
  or ``.csv`` with a header row ``time,NAME_x,NAME_y,NAME_z,...`` (optional first lines
  ``# units = mm``, ``# rate = 100``), blank or ``nan`` cells for missing samples.

Units and axes are explicit: ``units`` (m, cm, mm; a file's own unit is used when it states
one, and a conflicting explicit unit is an error), ``up_axis`` (the file's vertical axis,
rotated onto +z) and ``origin`` (a point [m] subtracted after rotation, e.g. to put the
table top at z = 0).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["Recording", "RecordingError", "read_recording", "write_recording", "length_scale",
           "axes_matrix", "read_plain_csv", "write_plain_csv", "read_npz", "write_npz"]


class RecordingError(ValueError):
    """A recording file or array is unusable; the message names the line/column and the fix."""


# ------------------------------------------------------------------ units and axes
_UNIT_SCALE = {
    "m": 1.0, "meter": 1.0, "meters": 1.0, "metre": 1.0, "metres": 1.0,
    "cm": 1e-2, "centimeter": 1e-2, "centimeters": 1e-2, "centimetre": 1e-2, "centimetres": 1e-2,
    "mm": 1e-3, "millimeter": 1e-3, "millimeters": 1e-3, "millimetre": 1e-3, "millimetres": 1e-3,
}


def length_scale(unit: str) -> float:
    """Metres per ``unit`` (m, cm, mm and their spelled-out forms, any case).

    Raises
    ------
    RecordingError
        For an unknown unit (the message lists the accepted ones).
    """
    key = str(unit).strip().lower()
    if key not in _UNIT_SCALE:
        raise RecordingError(f"unknown length unit {unit!r}; use one of m, cm, mm (or Meters, Centimeters, "
                             f"Millimeters), e.g. units='mm'")
    return _UNIT_SCALE[key]


def axes_matrix(up_axis: str) -> np.ndarray:
    """Rotation R (3, 3) taking file coordinates to isocloth's z-up frame (p_iso = R p_file).

    ``"z"``: identity. ``"y"`` (Motive's default Y-up): (x, y, z) → (x, −z, y), so the file's
    horizontal x stays x. ``"x"``: (x, y, z) → (y, z, x). All are proper rotations.

    Raises
    ------
    RecordingError
        For another axis name.
    """
    mats = {"z": np.eye(3),
            "y": np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]]),
            "x": np.array([[0, 1.0, 0], [0, 0, 1.0], [1.0, 0, 0]])}
    key = str(up_axis).strip().lower()
    if key not in mats:
        raise RecordingError(f"up_axis must be 'x', 'y' or 'z' (the file's vertical axis), got {up_axis!r}")
    return mats[key]


# ------------------------------------------------------------------ container
@dataclass(frozen=True, eq=False)
class Recording:
    """Recorded marker trajectories.

    Attributes
    ----------
    times : (f,) float64 [s], strictly increasing frame times.
    markers : (f, m, 3) float64 [m], marker positions in isocloth's frame (z up); NaN where a
        marker was not seen.
    names : tuple of m str, unique marker labels.
    rate : float [Hz], nominal frame rate.
    source : str, where the data came from (file name).
    metadata : dict, file header entries (take name, notes, units, ...).

    Raises
    ------
    RecordingError
        On inconsistent shapes, non-increasing or non-finite times, infinite positions,
        duplicate names or a non-positive rate.
    """

    times: np.ndarray
    markers: np.ndarray
    names: tuple
    rate: float
    source: str = ""
    metadata: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        t = np.ascontiguousarray(self.times, dtype=np.float64).reshape(-1)
        x = np.ascontiguousarray(self.markers, dtype=np.float64)
        names = tuple(str(n) for n in self.names)
        if x.ndim != 3 or x.shape[2] != 3:
            raise RecordingError(f"markers must have shape (frames, markers, 3); got {x.shape}")
        if x.shape[0] != t.size:
            raise RecordingError(f"{t.size} times but {x.shape[0]} frames of markers")
        if len(names) != x.shape[1]:
            raise RecordingError(f"{len(names)} names for {x.shape[1]} markers")
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise RecordingError(f"duplicate marker names {dup}; rename them so each label is unique")
        if t.size == 0:
            raise RecordingError("a recording needs at least one frame")
        if not np.isfinite(t).all():
            raise RecordingError(f"frame time {int(np.flatnonzero(~np.isfinite(t))[0])} is not finite")
        if t.size > 1 and np.any(np.diff(t) <= 0):
            k = int(np.flatnonzero(np.diff(t) <= 0)[0])
            raise RecordingError(f"frame times must increase: frame {k + 1} (t = {t[k + 1]:.6g} s) does not "
                                 f"follow frame {k} (t = {t[k]:.6g} s); remove duplicated frames")
        if np.isinf(x).any():
            raise RecordingError("marker positions contain inf; use NaN for missing samples")
        if not (isinstance(self.rate, (int, float, np.floating)) and math.isfinite(self.rate) and self.rate > 0):
            raise RecordingError(f"rate must be a positive frame rate [Hz], got {self.rate!r}")
        object.__setattr__(self, "times", t)
        object.__setattr__(self, "markers", x)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "rate", float(self.rate))
        object.__setattr__(self, "metadata", dict(self.metadata))

    # ------------------------------------------------------------------ queries
    @property
    def frame_count(self) -> int:
        return int(self.times.size)

    @property
    def marker_count(self) -> int:
        return len(self.names)

    @property
    def duration(self) -> float:
        """t_last − t_first [s]."""
        return float(self.times[-1] - self.times[0])

    @property
    def present(self) -> np.ndarray:
        """(f, m) bool, True where the marker was recorded."""
        return np.isfinite(self.markers).all(axis=2)

    def missing_fraction(self) -> float:
        """Fraction of (frame, marker) samples that are missing."""
        return float(1.0 - self.present.mean())

    def index(self, names) -> np.ndarray:
        """Indices (k,) int64 of the named markers.

        Raises
        ------
        KeyError
            For an unknown name (the message lists the recording's names).
        """
        lookup = {n: i for i, n in enumerate(self.names)}
        out = []
        for n in ([names] if isinstance(names, str) else names):
            if n not in lookup:
                raise KeyError(f"no marker named {n!r}; the recording has {', '.join(self.names)}")
            out.append(lookup[n])
        return np.asarray(out, dtype=np.int64)

    # ------------------------------------------------------------------ derived recordings
    def replace(self, **changes) -> "Recording":
        return dataclasses.replace(self, **changes)

    def select(self, names) -> "Recording":
        """The recording restricted to (and reordered as) ``names``."""
        idx = self.index(names)
        return self.replace(markers=self.markers[:, idx], names=tuple(self.names[i] for i in idx))

    def window(self, start: float | None = None, stop: float | None = None, *, rebase: bool = False) -> "Recording":
        """Frames with start ≤ t ≤ stop [s] (times of the file; ``rebase`` shifts them to start at 0).

        Raises
        ------
        RecordingError
            If no frame lies in the window.
        """
        t = self.times
        keep = np.ones(t.size, dtype=bool)
        if start is not None:
            keep &= t >= start - 1e-9
        if stop is not None:
            keep &= t <= stop + 1e-9
        if not keep.any():
            raise RecordingError(f"no frame between {start} and {stop} s (recording covers "
                                 f"{t[0]:.6g}..{t[-1]:.6g} s)")
        times = t[keep] - (t[keep][0] if rebase else 0.0)
        return self.replace(times=times, markers=self.markers[keep])

    def filled(self, names=None) -> "Recording":
        """Linearly interpolate the missing samples of ``names`` (default all markers).

        Only for rigid markers (a stick, a hanger, a grasped corner), as in seed 000 Remark 7.3;
        cloth markers must stay missing. Gaps at the start or end take the nearest recorded
        value.

        Raises
        ------
        RecordingError
            If a named marker has no recorded sample at all.
        """
        idx = np.arange(self.marker_count) if names is None else self.index(names)
        x = self.markers.copy()
        t = self.times
        for j in idx:
            ok = np.isfinite(x[:, j]).all(axis=1)
            if ok.all():
                continue
            if not ok.any():
                raise RecordingError(f"marker {self.names[j]!r} is never recorded; it cannot be interpolated")
            for d in range(3):
                x[~ok, j, d] = np.interp(t[~ok], t[ok], x[ok, j, d])
        return self.replace(markers=x)

    def transformed(self, rotation=None, origin=None) -> "Recording":
        """Positions R·p − origin (R (3, 3), origin (3,) [m])."""
        x = self.markers
        if rotation is not None:
            x = x @ np.asarray(rotation, dtype=float).T
        if origin is not None:
            x = x - np.asarray(origin, dtype=float).reshape(1, 1, 3)
        return self.replace(markers=x)

    def regular(self, tolerance: float = 0.25) -> bool:
        """True when every frame time is within ``tolerance`` frames of t0 + k / rate."""
        k = np.arange(self.frame_count)
        return bool(np.all(np.abs((self.times - self.times[0]) * self.rate - k) <= tolerance))


# ------------------------------------------------------------------ plain formats
def _finish(times, markers, names, rate, source, metadata, units, file_units, up_axis, origin) -> Recording:
    """Apply units, axes and origin; build the Recording."""
    if units is not None and file_units is not None and length_scale(units) != length_scale(file_units):
        raise RecordingError(f"{source}: the file says its lengths are in {file_units!r} but units={units!r} was "
                             f"given; drop the units option or fix the file header")
    unit = units if units is not None else file_units
    if unit is None:
        raise RecordingError(f"{source}: the file does not state its length unit; pass units='m', 'cm' or 'mm'")
    scale = length_scale(unit)
    x = np.asarray(markers, dtype=np.float64) * scale
    x = x @ axes_matrix(up_axis).T
    if origin is not None:
        x = x - np.asarray(origin, dtype=float).reshape(1, 1, 3)
    meta = dict(metadata)
    meta.update({"file_units": str(unit), "up_axis": str(up_axis)})
    if rate is None:
        if len(times) < 2:
            raise RecordingError(f"{source}: one frame and no frame rate; give the rate")
        rate = 1.0 / float(np.median(np.diff(times)))
    return Recording(np.asarray(times, dtype=float), x, tuple(names), float(rate), str(source), meta)


def read_npz(path, *, units: str | None = None, up_axis: str = "z", origin=None) -> Recording:
    """Read the plain ``.npz`` layout (see the module docstring).

    Raises
    ------
    RecordingError
        For missing keys or inconsistent arrays.
    """
    path = Path(path)
    with np.load(path, allow_pickle=False) as d:
        if "markers" not in d.files:
            raise RecordingError(f"{path}: no 'markers' array (frames × markers × 3); keys are {d.files}")
        x = d["markers"]
        if x.ndim != 3 or x.shape[2] != 3:
            raise RecordingError(f"{path}: 'markers' must have shape (frames, markers, 3), got {x.shape}")
        rate = float(d["rate"]) if "rate" in d.files else None
        if "times" in d.files:
            t = d["times"].astype(float)
        elif rate is not None:
            t = np.arange(x.shape[0]) / rate
        else:
            raise RecordingError(f"{path}: neither 'times' nor 'rate' is stored; add one of them")
        names = [str(n) for n in d["names"]] if "names" in d.files else [f"M{j + 1}" for j in range(x.shape[1])]
        file_units = str(d["units"]) if "units" in d.files else None
    return _finish(t, x, names, rate, path.name, {"format": "npz"}, units, file_units, up_axis, origin)


def write_npz(path, rec: Recording) -> Path:
    """Write ``rec`` in the plain ``.npz`` layout (metres, z up), atomically."""
    from isocloth.io.atomic import atomic_path

    path = Path(path)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, markers=rec.markers, times=rec.times, names=np.array(rec.names, dtype=str),
                     rate=np.float64(rec.rate), units=np.array("m"))
    return path


def read_plain_csv(path, *, units: str | None = None, up_axis: str = "z", origin=None,
                   rate: float | None = None) -> Recording:
    """Read the plain CSV layout (see the module docstring).

    Raises
    ------
    RecordingError
        Naming the line and column of a ragged row, a non-numeric cell, or a header that is
        not ``time`` followed by ``NAME_x, NAME_y, NAME_z`` triples.
    """
    path = Path(path)
    text = path.read_text()
    lines = text.splitlines()
    meta, file_units, k = {}, None, 0
    while k < len(lines) and lines[k].lstrip().startswith("#"):
        body = lines[k].lstrip()[1:]
        if "=" in body:
            key, val = (s.strip() for s in body.split("=", 1))
            meta[key] = val
        k += 1
    file_units = meta.get("units")
    if rate is None and "rate" in meta:
        try:
            rate = float(meta["rate"])
        except ValueError:
            raise RecordingError(f"{path}:{k}: rate {meta['rate']!r} is not a number") from None
    rows = list(csv.reader(io.StringIO("\n".join(lines[k:]))))
    if not rows:
        raise RecordingError(f"{path}: no header row; the first row must be time,NAME_x,NAME_y,NAME_z,...")
    header = [h.strip() for h in rows[0]]
    if not header or header[0].lower() not in ("time", "t", "time (seconds)"):
        raise RecordingError(f"{path}:{k + 1}: the header must start with a 'time' column, got {header[:1]}")
    cols = header[1:]
    if len(cols) % 3 or not cols:
        raise RecordingError(f"{path}:{k + 1}: after 'time' the header needs x, y, z column triples; got "
                             f"{len(cols)} columns")
    names = []
    for c in range(0, len(cols), 3):
        trip = cols[c:c + 3]
        base = [h[:-2] for h in trip]
        if [h[-2:].lower() for h in trip] != ["_x", "_y", "_z"] or len(set(base)) != 1:
            raise RecordingError(f"{path}:{k + 1}: columns {c + 2}-{c + 4} must be NAME_x,NAME_y,NAME_z; got {trip}")
        names.append(base[0])
    data = []
    for r, row in enumerate(rows[1:]):
        line = k + r + 2
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise RecordingError(f"{path}:{line}: {len(row)} cells, expected {len(header)} as in the header; the "
                                 f"row is ragged (truncated or edited); fix or delete line {line}")
        vals = []
        for c, cell in enumerate(row):
            s = cell.strip()
            if not s or s.lower() == "nan":
                if c == 0:
                    raise RecordingError(f"{path}:{line}: the time cell (column 1) is empty")
                vals.append(np.nan)
                continue
            try:
                vals.append(float(s))
            except ValueError:
                raise RecordingError(f"{path}:{line}: column {c + 1} ({header[c]}) holds {s!r}, not a number") from None
        data.append(vals)
    if not data:
        raise RecordingError(f"{path}: no data rows after the header")
    a = np.asarray(data)
    return _finish(a[:, 0], a[:, 1:].reshape(a.shape[0], -1, 3), names, rate, path.name, {"format": "csv", **meta},
                   units, file_units, up_axis, origin)


def write_plain_csv(path, rec: Recording) -> Path:
    """Write ``rec`` in the plain CSV layout (metres, z up), atomically; NaN → blank cell."""
    from isocloth.io.atomic import atomic_write_text

    buf = io.StringIO()
    buf.write("# units = m\n")
    buf.write(f"# rate = {rec.rate!r}\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["time"] + [f"{n}_{a}" for n in rec.names for a in "xyz"])
    for t, x in zip(rec.times, rec.markers):
        w.writerow([repr(float(t))] + ["" if not np.isfinite(v) else repr(float(v)) for v in x.ravel()])
    return atomic_write_text(path, buf.getvalue())


# ------------------------------------------------------------------ dispatch
def _sniff(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".c3d":
        return "c3d"
    if suffix == ".npz":
        return "npz"
    if suffix in (".csv", ".txt"):
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            first = fh.readline()
            while first and (first.lstrip().startswith("#") or not first.strip()):
                first = fh.readline()
        if first.startswith("Format Version") or ",Type," in first or first.startswith(",,"):
            return "motive"
        return "csv"
    raise RecordingError(f"{path}: cannot tell the format from the suffix {path.suffix!r}; use .csv (Motive or "
                         f"plain), .c3d or .npz, or pass format=")


def read_recording(path, *, format: str = "auto", units: str | None = None, up_axis: str = "z",
                   origin=None, **options) -> Recording:
    """Read a recording in any supported format.

    Parameters
    ----------
    path : str or Path
    format : "auto" (suffix and first line), "motive", "c3d", "npz" or "csv" (plain).
    units : length unit of the file's coordinates ("m", "cm", "mm"); default: the file's own
        (Motive ``Length Units``, C3D ``POINT:UNITS``, plain ``# units =``). Required when the
        file does not say; an explicit unit that contradicts the file is an error.
    up_axis : the file's vertical axis, "z" (default, as in the thesis' set-up) or "y"
        (Motive's default) or "x"; rotated onto isocloth's +z.
    origin : (3,) [m], subtracted after the rotation (e.g. (0, 0, table_height) to put the table
        top at z = 0).
    options : format-specific (``marker_types`` for Motive, ``rate`` for plain CSV).

    Returns
    -------
    Recording (metres, z up, NaN for missing samples).

    Raises
    ------
    RecordingError
        For malformed files, with the line/column and the fix.
    FileNotFoundError
        If the file does not exist.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"recording {path} does not exist")
    fmt = _sniff(path) if format == "auto" else format
    if fmt == "motive":
        from isocloth.validation.motive import read_motive_csv

        return read_motive_csv(path, units=units, up_axis=up_axis, origin=origin, **options)
    if fmt == "c3d":
        from isocloth.validation.c3d import read_c3d

        return read_c3d(path, units=units, up_axis=up_axis, origin=origin, **options)
    if fmt == "npz":
        return read_npz(path, units=units, up_axis=up_axis, origin=origin, **options)
    if fmt == "csv":
        return read_plain_csv(path, units=units, up_axis=up_axis, origin=origin, **options)
    raise RecordingError(f"unknown recording format {format!r}; use auto, motive, c3d, npz or csv")


def write_recording(path, rec: Recording, *, format: str = "auto", **options) -> Path:
    """Write ``rec`` (format from the suffix: ``.csv`` → Motive unless format="csv", ``.c3d``, ``.npz``).

    Raises
    ------
    RecordingError
        For an unknown format or suffix.
    """
    path = Path(path)
    fmt = format
    if fmt == "auto":
        fmt = {".csv": "motive", ".c3d": "c3d", ".npz": "npz"}.get(path.suffix.lower())
        if fmt is None:
            raise RecordingError(f"cannot tell the format from {path.name!r}; use .csv, .c3d or .npz")
    if fmt == "motive":
        from isocloth.validation.motive import write_motive_csv

        return write_motive_csv(path, rec, **options)
    if fmt == "c3d":
        from isocloth.validation.c3d import write_c3d

        return write_c3d(path, rec, **options)
    if fmt == "npz":
        return write_npz(path, rec)
    if fmt == "csv":
        return write_plain_csv(path, rec)
    raise RecordingError(f"unknown recording format {format!r}; use motive, c3d, npz or csv")
