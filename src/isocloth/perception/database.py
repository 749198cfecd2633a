"""The simulated folding database (Coltraro et al. thesis §7.4.2: 12 classes × 10 samples of a 1 m
square sheet with 400 nodes) and the comparison of shape representations by their Davies–Bouldin
index (§7.4.3, Table 7.1).

A database lives in a folder: ``samples/<class>-<k>.npz`` holds one sample's final positions with
its class, sub-class, drawn parameters and the sheet's segments, corners and boundary. Samples are
written one by one, atomically; building again skips the samples already there, so an interrupted
build loses at most the samples being simulated.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from isocloth.perception.folding import FOLD_CLASSES, NODES, FoldSample, simulate_sample

__all__ = ["FoldDatabase", "REPRESENTATIONS", "build_database", "class_medoids", "davies_bouldin_medoids",
           "draw_sample", "load_database", "representation_distances", "representation_index", "representation_table"]

ATTEMPTS = 3
"""Draws tried per sample until its final state is free of intersecting faces."""


def draw_sample(label: str, k: int, seed: int) -> tuple[FoldSample, int]:
    """Sample ``k`` of class ``label`` of the database with ``seed`` — the same whatever else is
    built — and the seed of its sheet's random shape. A retry (attempt a > 0) is the draw of
    ``k + 1000 a``."""
    index = [c.label for c in FOLD_CLASSES].index(label)
    rng = np.random.default_rng([int(seed), index, int(k)])
    return FOLD_CLASSES[index].sample(rng), int(1_000_000 * seed + 1000 * index + k)


def _simulate(label: str, k: int, seed: int, nodes: int, max_wall: float | None = None) -> dict | None:
    """One sample, redrawn (up to :data:`ATTEMPTS`) while its final state has intersecting faces, its
    simulation diverges or takes longer than ``max_wall`` [s]; None when every draw failed."""
    from isocloth.contact.intersection import face_intersections
    from isocloth.perception.dgli import sheet_segments
    from isocloth.step.stepper import SimulationDiverged

    start = time.perf_counter()
    simulated, x = 0.0, None
    for attempt in range(ATTEMPTS):
        sample, shape_seed = draw_sample(label, k + 1000 * attempt, seed)
        try:
            x, mesh, seconds, unconverged = simulate_sample(sample, seed=shape_seed, nodes=nodes, max_wall=max_wall)
        except (SimulationDiverged, TimeoutError):
            x = None
            continue
        simulated += seconds
        crossing = len(face_intersections(x, mesh.triangles, mesh.quads))
        if crossing == 0:
            break
    if x is None:
        return None
    segments, corners, boundary = sheet_segments(mesh)
    return dict(x=x, label=label, subclass=sample.subclass, params=json.dumps(sample.params),
                rotation=sample.rotation, turn_over=sample.turn_over, attempts=attempt + 1,
                intersections=crossing, unconverged=unconverged, simulated=simulated,
                wall=time.perf_counter() - start, segments=segments, corners=corners, boundary=boundary)


def _sample_path(folder: Path, label: str, k: int) -> Path:
    return folder / "samples" / f"{label}-{k:02d}.npz"


def build_database(folder, *, samples: int = 10, seed: int = 0, nodes: int = NODES, workers: int = 1,
                   labels=None, max_wall: float | None = None, progress: bool = False) -> list[Path]:
    """Simulate the database into ``folder`` (``samples`` per class of :data:`FOLD_CLASSES`, or of
    ``labels``), skipping samples already written. ``workers`` > 1 simulates in that many processes.
    A draw whose simulation diverges, takes longer than ``max_wall`` seconds (None: no limit) or
    ends with intersecting faces is replaced by another (up to :data:`ATTEMPTS`); a sample whose
    draws all fail is left out and listed in ``failed.txt``. Returns the paths of the samples written.

    Raises
    ------
    ValueError
        If samples or workers is not a positive integer, or a label is unknown.
    """
    from concurrent.futures import ProcessPoolExecutor

    from tqdm import tqdm

    from isocloth.io.atomic import atomic_path, remove_temporaries

    known = [c.label for c in FOLD_CLASSES]
    labels = known if labels is None else list(labels)
    if unknown := [lab for lab in labels if lab not in known]:
        raise ValueError(f"unknown fold classes {unknown}; the classes are {', '.join(known)}")
    for name, value in (("samples", samples), ("workers", workers)):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    folder = Path(folder)
    (folder / "samples").mkdir(parents=True, exist_ok=True)
    jobs = [(lab, k) for k in range(int(samples)) for lab in labels]
    remove_temporaries(folder / "samples", [_sample_path(folder, lab, k).name for lab, k in jobs])
    todo = [(lab, k) for lab, k in jobs if not _sample_path(folder, lab, k).is_file()]

    failed = []

    def write(lab, k, result):
        if result is None:
            failed.append(f"{lab}-{k:02d}")
            return
        with atomic_path(_sample_path(folder, lab, k)) as tmp:
            np.savez(tmp, **result)

    bar = tqdm(total=len(todo), disable=not progress, unit="sample")
    if workers == 1:
        for lab, k in todo:
            write(lab, k, _simulate(lab, k, seed, nodes, max_wall))
            bar.update()
    else:
        from concurrent.futures import as_completed

        with ProcessPoolExecutor(max_workers=int(workers)) as pool:
            futures = {pool.submit(_simulate, lab, k, seed, nodes, max_wall): (lab, k) for lab, k in todo}
            for fut in as_completed(futures):
                write(*futures[fut], fut.result())
                bar.update()
    bar.close()
    if failed:
        from isocloth.io.atomic import atomic_write_text

        atomic_write_text(folder / "failed.txt", "\n".join(sorted(failed)) + "\n")
    return [p for p in (_sample_path(folder, lab, k) for lab, k in jobs) if p.is_file()]


@dataclass
class FoldDatabase:
    """Final states of a folding database.

    Attributes
    ----------
    x : (s, n, 3) float64 [m], positions
    labels, subclasses : (s,) str
    segments : (8, 2) int64, corners : (4,) int64, boundary : (b,) int64 — of the sheet's mesh
    simulated, wall : (s,) float64 [s], simulated and wall-clock time per sample
    intersections : (s,) int64, intersecting face pairs of each final state
    """

    x: np.ndarray
    labels: np.ndarray
    subclasses: np.ndarray
    segments: np.ndarray
    corners: np.ndarray
    boundary: np.ndarray
    simulated: np.ndarray
    wall: np.ndarray
    intersections: np.ndarray

    def save(self, path) -> Path:
        """Write the database as one npz file (atomically)."""
        from isocloth.io.atomic import atomic_path

        with atomic_path(path) as tmp:
            np.savez_compressed(tmp, x=self.x.astype(np.float32), labels=self.labels, subclasses=self.subclasses,
                                segments=self.segments, corners=self.corners, boundary=self.boundary,
                                simulated=self.simulated, wall=self.wall, intersections=self.intersections)
        return Path(path)


def load_database(path) -> FoldDatabase:
    """A database folder written by :func:`build_database` (its samples, sorted by class and index) or
    a file written by :meth:`FoldDatabase.save`.

    Raises
    ------
    FileNotFoundError
        If there is no such file or the folder holds no samples.
    ValueError
        If the samples were simulated on different meshes.
    """
    path = Path(path)
    if path.is_file():
        with np.load(path) as z:
            return FoldDatabase(z["x"].astype(np.float64), z["labels"], z["subclasses"], z["segments"], z["corners"],
                                z["boundary"], z["simulated"], z["wall"], z["intersections"])
    files = sorted((path / "samples").glob("*.npz"))
    if not files:
        raise FileNotFoundError(f"{path} holds no database samples (samples/*.npz): build it with "
                                f"'isocloth dgli --database {path}'")
    rows = []
    for f in files:
        with np.load(f) as z:
            rows.append({k: z[k] for k in z.files})
    first = rows[0]
    for f, r in zip(files, rows):
        if r["x"].shape != first["x"].shape or not np.array_equal(r["segments"], first["segments"]):
            raise ValueError(f"{f.name} was simulated on another mesh than {files[0].name}: rebuild the database "
                             "in an empty folder")
    return FoldDatabase(np.stack([r["x"] for r in rows]), np.array([str(r["label"]) for r in rows]),
                        np.array([str(r["subclass"]) for r in rows]), first["segments"], first["corners"],
                        first["boundary"], np.array([float(r["simulated"]) for r in rows]),
                        np.array([float(r["wall"]) for r in rows]), np.array([int(r["intersections"]) for r in rows]))


# ---------------------------------------------------------------- representations (§7.4.3)
REPRESENTATIONS = ("dGLI", "Edges", "Corners", "Fréchet", "Hausdorff")
"""The shape representations of Table 7.1: dGLI cloth coordinates, minimal distances between the
same eight edges, pairwise corner distances (Spearman's distance for the three), and the discrete
Fréchet and Hausdorff distances between rigidly aligned boundary curves."""


def _vectors(name: str, x: np.ndarray, db_segments, corners) -> np.ndarray:
    from isocloth.perception.baselines import corner_distances, edge_distances
    from isocloth.perception.dgli import sequence_coordinates

    if name == "dGLI":
        return sequence_coordinates(x, db_segments)
    if name == "Edges":
        return np.array([edge_distances(xi, db_segments) for xi in x])
    return np.array([corner_distances(xi, corners) for xi in x])


def representation_distances(name: str, x, segments, corners, boundary) -> tuple[np.ndarray, np.ndarray | None]:
    """(distance matrix (s, s) float64, feature vectors (s, d) or None) of the configurations x (s, n, 3)
    [m] in representation ``name`` (:data:`REPRESENTATIONS`).

    Raises
    ------
    ValueError
        If the name is not one of :data:`REPRESENTATIONS`.
    """
    from isocloth.perception.baselines import boundary_frechet, boundary_hausdorff
    from isocloth.perception.metrics import spearman_distance_matrix

    x = np.asarray(x, dtype=np.float64)
    if name in ("dGLI", "Edges", "Corners"):
        v = _vectors(name, x, segments, corners)
        return spearman_distance_matrix(v), v
    if name not in REPRESENTATIONS:
        raise ValueError(f"unknown representation {name!r}; choose from {', '.join(REPRESENTATIONS)}")
    curve = boundary_frechet if name == "Fréchet" else boundary_hausdorff
    curves = x[:, np.asarray(boundary)]
    s = len(curves)
    D = np.zeros((s, s))
    for i in range(s):
        for j in range(i + 1, s):
            D[i, j] = D[j, i] = curve(curves[i], curves[j])
    return D, None


def class_medoids(D, labels) -> tuple[np.ndarray, np.ndarray]:
    """(classes (c,), medoids (c,) int64): for each label of ``labels`` (s,) in sorted order, the index of
    the member with the smallest summed distance D (s, s) to the other members."""
    labels = np.asarray(labels)
    classes = np.unique(labels)
    members = [np.flatnonzero(labels == c) for c in classes]
    return classes, np.array([m[np.argmin(D[np.ix_(m, m)].sum(axis=1))] for m in members], dtype=np.int64)


def davies_bouldin_medoids(D, labels) -> float:
    """Davies–Bouldin index (thesis eq. 7.10) from a distance matrix D (s, s): each class's centre is
    its medoid (:func:`class_medoids`), σ_i the mean distance of its members to it — for
    representations compared by a distance between curves, where a mean is not defined.

    Raises
    ------
    ValueError
        If there are fewer than two classes, D is not (s, s) for s labels, or two medoids coincide.
    """
    D = np.asarray(D, dtype=np.float64)
    labels = np.asarray(labels)
    if D.shape != (labels.size, labels.size):
        raise ValueError(f"distance matrix {D.shape} for {labels.size} labels")
    classes, medoid = class_medoids(D, labels)
    if classes.size < 2:
        raise ValueError("the Davies–Bouldin index needs at least two classes")
    sigma = np.array([D[labels == c, m].mean() for c, m in zip(classes, medoid)])
    apart = D[np.ix_(medoid, medoid)]
    off = ~np.eye(classes.size, dtype=bool)
    if not (apart[off] > 0).all():
        raise ValueError("two classes have medoids at distance 0: the index is undefined")
    ratio = np.where(off, (sigma[:, None] + sigma[None, :]) / np.where(off, apart, 1.0), -np.inf)
    return float(ratio.max(axis=1).mean())


def representation_index(D, vectors, labels) -> float:
    """The Davies–Bouldin index of Table 7.1 of one representation: class means of the feature
    vectors (s, d) (:func:`~isocloth.perception.metrics.davies_bouldin`, Spearman's distance) when
    there are vectors, else class medoids of the distances D (s, s) (:func:`davies_bouldin_medoids`);
    infinite where two class centres coincide (the representation cannot tell them apart)."""
    from isocloth.perception.metrics import davies_bouldin

    try:
        return davies_bouldin(vectors, labels) if vectors is not None else davies_bouldin_medoids(D, labels)
    except ValueError as exc:
        if "distance 0" not in str(exc):
            raise
        return float("inf")


def representation_table(sets: dict, segments, corners, boundary) -> dict:
    """{representation: {set name: Davies–Bouldin index}} for ``sets`` = {name: (x (s, n, 3), labels
    (s,))}: :func:`representation_index` of every representation of :data:`REPRESENTATIONS` on every
    set, as thesis Table 7.1."""
    return {name: {set_name: representation_index(*representation_distances(name, x, segments, corners, boundary),
                                                  labels)
                   for set_name, (x, labels) in sets.items()}
            for name in REPRESENTATIONS}
