"""The comparison of shape representations on the simulated folding database and sequences
(Coltraro et al. thesis §7.4.3, Table 7.1), as written by ``isocloth dgli --database``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np

from isocloth.perception.database import (REPRESENTATIONS, build_database, class_medoids, load_database,
                                          representation_distances, representation_index)
from isocloth.perception.folding import NODES, SEQUENCES, simulate_sequence

__all__ = ["SEQUENCE_COLUMNS", "STORED", "THESIS_TABLE", "build_sequences", "compare_folder", "load_sequence",
           "stored_database", "stored_sequences"]

SEQUENCE_COLUMNS = {"fold-two-corners": "Sequence I", "fold-four-corners": "Sequence II",
                    "fold-in-half": "Sequence III"}
"""Column of Table 7.1 of each folding sequence of :data:`~isocloth.perception.folding.SEQUENCES`."""

THESIS_TABLE = {
    "dGLI": {"Database": 0.73, "Sequence I": 0.27, "Sequence II": 0.18, "Sequence III": 0.21},
    "Edges": {"Database": 1.60, "Sequence I": 0.68, "Sequence II": 0.77, "Sequence III": 0.51},
    "Corners": {"Database": 2.49, "Sequence I": 0.98, "Sequence II": 1.61, "Sequence III": 3.14},
    "Fréchet": {"Database": 0.99, "Sequence I": 0.69, "Sequence II": 0.76, "Sequence III": 0.48},
    "Hausdorff": {"Database": 1.45, "Sequence I": 0.71, "Sequence II": 0.84, "Sequence III": 0.49},
}
"""Davies–Bouldin indices of thesis Table 7.1 (its database and sequences, not public)."""


def _sequence_path(folder: Path, name: str) -> Path:
    return Path(folder) / "sequences" / f"{name}.npz"


def build_sequences(folder, *, nodes: int = NODES) -> dict[str, Path]:
    """Simulate the folding sequences into ``folder``/sequences/<name>.npz (times, x, stages and the
    sheet's segments, corners and boundary), skipping those already written. Returns {name: path}."""
    from isocloth.io.atomic import atomic_path
    from isocloth.perception.dgli import sheet_segments

    out = {}
    for name in SEQUENCES:
        path = _sequence_path(folder, name)
        if not path.is_file():
            times, x, stages, mesh = simulate_sequence(name, nodes=nodes)
            segments, corners, boundary = sheet_segments(mesh)
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(path) as tmp:
                np.savez(tmp, times=times, x=x, stages=stages, segments=segments, corners=corners, boundary=boundary)
        out[name] = path
    return out


def load_sequence(path) -> dict:
    """The arrays of a sequence file written by :func:`build_sequences` (times (F,), x (F, n, 3),
    stages (F,), segments (8, 2), corners (4,), boundary (b,)).

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    """
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def compare_folder(folder, *, samples: int = 10, workers: int = 1, nodes: int = NODES,
                   progress: bool = False) -> tuple[dict, dict]:
    """Build (or complete) the database and the sequences in ``folder``, then compute Table 7.1:
    returns ({representation: {column: Davies–Bouldin index}}, {"table": csv path, "matrices":
    folder of the distance-matrix images, "classes": image}). Written: ``table.csv``, ``table.json``,
    ``matrices/<column>-<representation>.png`` and ``classes.png`` (each class's medoid next to its
    dGLI coordinates).

    Raises
    ------
    OSError
        If the folder cannot be written.
    ValueError
        If samples or workers is not a positive integer.
    """
    from isocloth.io.atomic import atomic_write_text
    from isocloth.viz.figures import plot_class_distance_matrix, plot_distance_matrix, plot_states_and_coordinates

    folder = Path(folder)
    build_database(folder, samples=samples, workers=workers, nodes=nodes, progress=progress)
    db = load_database(folder)
    sets = {"Database": (db.x, db.labels)}
    times = {}
    for name, path in build_sequences(folder, nodes=nodes).items():
        seq = load_sequence(path)
        sets[SEQUENCE_COLUMNS[name]] = (seq["x"], seq["stages"])
        times[SEQUENCE_COLUMNS[name]] = seq["times"]
    matrices = folder / "matrices"
    table, classes = {}, None
    for rep in REPRESENTATIONS:
        table[rep] = {}
        label = "Spearman distance" if rep in ("dGLI", "Edges", "Corners") else "distance [m]"
        for column, (x, labels) in sets.items():
            D, v = representation_distances(rep, x, db.segments, db.corners, db.boundary)
            table[rep][column] = representation_index(D, v, labels)
            slug = f"{column.replace(' ', '-').lower()}-{rep.lower()}.png"
            if column == "Database":
                plot_class_distance_matrix(D, labels, matrices / slug, title=f"{rep}, {column}", label=label)
                if rep == "dGLI":
                    classes = class_medoids(D, labels)
            else:
                plot_distance_matrix(D, times[column], matrices / slug, title=f"{rep}, {column}", label=label)
    text = io.StringIO()
    w = csv.writer(text)
    columns = list(sets)
    w.writerow(["representation"] + columns + [f"thesis {c}" for c in columns])
    for rep, row in table.items():
        w.writerow([rep] + [f"{row[c]:.4f}" for c in columns] + [THESIS_TABLE[rep][c] for c in columns])
    atomic_write_text(folder / "table.csv", text.getvalue())
    atomic_write_text(folder / "table.json", json.dumps({"table": table, "thesis": THESIS_TABLE,
                                                         "samples": int(db.labels.size),
                                                         "nodes": int(db.x.shape[1])}, indent=2))
    names, medoids = classes
    image = plot_states_and_coordinates(db.x[medoids], [f"class {c}" for c in names], db.boundary, db.segments,
                                        folder / "classes.png")
    return table, {"table": folder / "table.csv", "matrices": matrices, "classes": image}


STORED = Path(__file__).resolve().parents[1] / "data" / "perception"
"""Folder of the databases simulated with the package (12 × 12 nodes; see docs/perception.md):
``fold-database.npz`` (10 samples per class, seed 0), ``fold-heldout.npz`` (3 per class, seed 1) and
``fold-sequences.npz`` (the three sequences)."""


def stored_database(which: str = "database"):
    """The stored :class:`~isocloth.perception.database.FoldDatabase` ``which`` ("database" or
    "heldout").

    Raises
    ------
    ValueError
        If ``which`` is neither.
    """
    if which not in ("database", "heldout"):
        raise ValueError(f"which must be 'database' or 'heldout', got {which!r}")
    return load_database(STORED / f"fold-{which}.npz")


def stored_sequences() -> dict[str, dict]:
    """{sequence name: {times, x, stages}} of the stored sequences (float64 positions)."""
    out = {}
    with np.load(STORED / "fold-sequences.npz") as z:
        for name in SEQUENCES:
            out[name] = {k: (z[f"{name}/{k}"].astype(np.float64) if k == "x" else z[f"{name}/{k}"])
                         for k in ("times", "x", "stages")}
    return out
