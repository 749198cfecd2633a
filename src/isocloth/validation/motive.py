"""OptiTrack Motive CSV exports: reader and writer (marker positions).

A Motive CSV export ("Header information" on) looks like::

    Format Version,1.23,Take Name,shake,...,Export Frame Rate,100.000000,...,Length Units,Millimeters,...
    <blank line>
    ,Type,Marker,Marker,Marker,Marker,Marker,Marker
    ,Name,top_left,top_left,top_left,top_right,top_right,top_right
    ,ID,1,1,1,2,2,2
    ,,Position,Position,Position,Position,Position,Position
    Frame,Time (Seconds),X,Y,Z,X,Y,Z
    0,0.000000,-210.1,0.2,1000.3,209.8,0.1,999.7
    1,0.010000,,,,210.0,0.3,999.9          <- first marker occluded: blank cells

Older exports leave out the Type/Name/ID labels in the second column (the rows then start with
two empty cells); both layouts are read. Rigid bodies, skeletons and marker-quality columns are
skipped: only columns of the requested types (default "Marker") with data kind "Position" are
kept. Blank cells are missing samples (NaN); they are never filled here.
"""

from __future__ import annotations

import csv
import io
import warnings
from pathlib import Path

import numpy as np

from isocloth.validation.recordings import Recording, RecordingError, _finish, axes_matrix, length_scale

__all__ = ["read_motive_csv", "write_motive_csv", "MOTIVE_UNITS"]

MOTIVE_UNITS = {"m": "Meters", "cm": "Centimeters", "mm": "Millimeters"}
_AXES = ("X", "Y", "Z")


def _header_pairs(cells: list[str]) -> dict:
    out = {}
    for i in range(0, len(cells) - 1, 2):
        key = cells[i].strip()
        if key:
            out[key] = cells[i + 1].strip()
    return out


def read_motive_csv(path, *, units: str | None = None, up_axis: str = "z", origin=None,
                    marker_types=("Marker",)) -> Recording:
    """Read the marker trajectories of a Motive CSV export.

    Parameters
    ----------
    path : str or Path
    units : length unit of the coordinates when the header has no ``Length Units`` entry
        ("m", "cm", "mm"); an explicit unit contradicting the header is an error.
    up_axis : the export's vertical axis: "z" (default; the thesis calibrated z up with z = 0 at
        the floor or table) or "y" (Motive's default convention), rotated onto +z.
    origin : (3,) [m] subtracted after the rotation.
    marker_types : column types to keep (e.g. ("Marker", "Rigid Body Marker")).

    Returns
    -------
    Recording with times from the ``Time (Seconds)`` column, the frame rate of the header
    (``Export Frame Rate``, else ``Capture Frame Rate``, else the median time step), positions in
    metres and NaN where a marker was not seen.

    Raises
    ------
    RecordingError
        No Motive header (first line ``Format Version,...``) or no ``Frame,Time (Seconds),X,Y,Z``
        row; unknown length unit; a ragged data row or a non-numeric cell (the message names the
        line, the column and the marker); no marker columns.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    src = path.name
    if not rows or not rows[0] or rows[0][0].strip() != "Format Version":
        first = ",".join(rows[0])[:60] if rows else ""
        raise RecordingError(f"{src}:1: not a Motive CSV header (line 1 should start with 'Format Version', got "
                             f"{first!r}); re-export from Motive with 'Header information' enabled, or read a "
                             f"plain table with format='csv'")
    meta = _header_pairs(rows[0])
    h = next((i for i, r in enumerate(rows[:20]) if len(r) > 1 and r[0].strip() == "Frame"
              and r[1].strip().lower().startswith("time")), None)
    if h is None:
        raise RecordingError(f"{src}: no 'Frame,Time (Seconds),X,Y,Z,...' row in the first 20 lines; the column "
                             f"header rows (Type, Name, ID, Position, Frame) are missing or damaged")
    axis_row = [c.strip() for c in rows[h]]
    ncols = len(axis_row)
    labelled = {}
    for i in range(1, h):
        r = rows[i]
        if len(r) > 1 and r[1].strip() in ("Type", "Name", "ID"):
            labelled[r[1].strip()] = i
    if h < 5 and len(labelled) < 3:
        raise RecordingError(f"{src}:{h + 1}: the Type/Name/ID/Position rows above the 'Frame' row are missing")
    idx = {"Type": labelled.get("Type", h - 4), "Name": labelled.get("Name", h - 3),
           "ID": labelled.get("ID", h - 2), "Kind": h - 1}

    def row(key):
        r = [c.strip() for c in rows[idx[key]]]
        return r + [""] * (ncols - len(r))

    types, names, ids, kinds = row("Type"), row("Name"), row("ID"), row("Kind")
    groups: dict[tuple, dict] = {}
    for c in range(2, ncols):
        if types[c] not in marker_types or kinds[c] != "Position":
            continue
        ax = axis_row[c].upper()
        if ax not in _AXES:
            raise RecordingError(f"{src}:{h + 1}: column {c + 1} of marker {names[c]!r} is labelled {axis_row[c]!r}, "
                                 f"expected X, Y or Z")
        g = groups.setdefault((names[c], ids[c]), {})
        if ax in g:
            raise RecordingError(f"{src}:{h + 1}: marker {names[c]!r} has two {ax} columns ({g[ax] + 1} and {c + 1})")
        g[ax] = c
    if not groups:
        found = sorted({t for t in types[2:] if t})
        raise RecordingError(f"{src}: no marker position columns of type {list(marker_types)} (column types found: "
                             f"{found}); re-export with 'Markers' enabled or pass marker_types=")
    label_count: dict[str, int] = {}
    for (name, _), g in groups.items():
        label_count[name] = label_count.get(name, 0) + 1
        if set(g) != set(_AXES):
            raise RecordingError(f"{src}:{h + 1}: marker {name!r} has columns {sorted(g)}, needs X, Y and Z")
    marker_names = [n if label_count[n] == 1 else f"{n} ({i})" for (n, i) in groups]
    cols = np.array([[g[a] for a in _AXES] for g in groups.values()], dtype=np.int64)  # (m, 3)
    col_marker = {int(c): (marker_names[j], _AXES[d]) for j in range(cols.shape[0]) for d, c in enumerate(cols[j])}

    times, frames = [], []
    for i in range(h + 1, len(rows)):
        r = rows[i]
        line = i + 1
        if not r or all(not c.strip() for c in r):
            continue
        if len(r) != ncols:
            raise RecordingError(f"{src}:{line}: {len(r)} cells, expected {ncols} as in the header row at line "
                                 f"{h + 1}; the row is ragged (the export was truncated or edited): fix or delete "
                                 f"line {line}")
        try:
            t = float(r[1])
        except ValueError:
            raise RecordingError(f"{src}:{line}: column 2 (Time) holds {r[1]!r}, not a number") from None
        vals = np.full(cols.size, np.nan)
        for k, c in enumerate(cols.ravel()):
            s = r[c].strip()
            if s:
                try:
                    vals[k] = float(s)
                except ValueError:
                    name, ax = col_marker[int(c)]
                    raise RecordingError(f"{src}:{line}: column {c + 1} ({name} {ax}) holds {s!r}, not a number; "
                                         f"missing samples must be blank cells") from None
        times.append(t)
        frames.append(vals.reshape(-1, 3))
    if not frames:
        raise RecordingError(f"{src}: no data rows after the header row at line {h + 1}")
    x = np.stack(frames)
    # Partially recorded markers (one or two coordinates blank) count as missing.
    x[~np.isfinite(x).all(axis=2)] = np.nan
    t = np.asarray(times)
    rate = None
    for key in ("Export Frame Rate", "Capture Frame Rate"):
        if meta.get(key):
            try:
                rate = float(meta[key])
                break
            except ValueError:
                raise RecordingError(f"{src}:1: {key} is {meta[key]!r}, not a number") from None
    if rate is not None and t.size > 2:
        step = float(np.median(np.diff(t)))
        if abs(step * rate - 1.0) > 0.01:
            warnings.warn(f"{src}: the time column advances {step:.6g} s per frame but the header rate is {rate} Hz; "
                          f"using the times of the file", stacklevel=2)
    file_units = meta.get("Length Units") or None
    if file_units is not None:
        length_scale(file_units)  # unknown unit -> error naming it
    meta["format"] = "motive"
    notes = meta.get("Take Notes", "")
    if notes.startswith("isocloth-synth "):  # written by `isocloth synth`: the true parameters
        import json

        try:
            meta["truth"] = json.loads(notes[len("isocloth-synth "):])
        except ValueError:
            pass
    return _finish(t, x, marker_names, rate, src, meta, units, file_units, up_axis, origin)


def write_motive_csv(path, rec: Recording, *, units: str = "mm", up_axis: str = "z", take_name: str | None = None,
                     notes: str = "", decimals: int = 6) -> Path:
    """Write ``rec`` as a Motive CSV export (format version 1.23, markers only), atomically.

    Parameters
    ----------
    path : destination (.csv)
    rec : Recording (metres, z up)
    units : "m", "cm" or "mm" (Motive's ``Length Units``: Meters, Centimeters, Millimeters)
    up_axis : vertical axis of the written coordinates ("z", or "y" for Motive's default)
    take_name, notes : header fields
    decimals : digits after the decimal point (Motive writes 6)

    Returns
    -------
    Path

    Raises
    ------
    RecordingError
        For an unknown unit.
    """
    from isocloth.io.atomic import atomic_write_text

    scale = length_scale(units)
    unit_name = {1.0: "Meters", 1e-2: "Centimeters", 1e-3: "Millimeters"}[scale]
    x = rec.markers @ axes_matrix(up_axis)  # inverse rotation: p_file = Rᵀ p
    x = x / scale
    f, m = x.shape[:2]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["Format Version", "1.23", "Take Name", take_name or Path(path).stem, "Take Notes", notes,
                "Capture Frame Rate", f"{rec.rate:.6f}", "Export Frame Rate", f"{rec.rate:.6f}",
                "Capture Start Time", "", "Capture Start Frame", "0", "Total Frames in Take", str(f),
                "Total Exported Frames", str(f), "Rotation Type", "Quaternion", "Length Units", unit_name,
                "Coordinate Space", "Global"])
    w.writerow([])
    w.writerow(["", "Type"] + ["Marker"] * (3 * m))
    w.writerow(["", "Name"] + [n for n in rec.names for _ in range(3)])
    w.writerow(["", "ID"] + [str(j + 1) for j in range(m) for _ in range(3)])
    w.writerow(["", ""] + ["Position"] * (3 * m))
    w.writerow(["Frame", "Time (Seconds)"] + list(_AXES) * m)
    fmt = f"{{:.{int(decimals)}f}}"
    for k in range(f):
        cells = [str(k), fmt.format(rec.times[k])]
        cells += [fmt.format(v) if np.isfinite(v) else "" for v in x[k].ravel()]
        w.writerow(cells)
    return atomic_write_text(path, buf.getvalue())
