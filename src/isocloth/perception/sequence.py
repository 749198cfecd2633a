"""The dGLI cloth coordinates of a simulated run, frame by frame, and their distance matrix (thesis
§7.4.1: the confusion matrices of the folding sequences, Fig. 7.3)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from isocloth.perception.dgli import sequence_coordinates, sheet_segments
from isocloth.perception.metrics import spearman_distance_matrix

__all__ = ["run_coordinates", "write_run_coordinates"]


def run_coordinates(folder) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times (F,) [s], dGLI cloth coordinates (F, 28) float64 [1/m] of every saved frame, segments
    (8, 2) int64) of the run folder written by ``isocloth run``: the eight segments next to the corners
    of the scene's sheet (:func:`~isocloth.perception.dgli.sheet_segments` of the scene's mesh, rebuilt
    from ``metadata.json``).

    Raises
    ------
    FileNotFoundError
        If the folder has no trajectory.
    ValueError
        If the trajectory has no frame or a non-finite position (as
        :func:`~isocloth.io.trajectory.load_trajectory`), or the scene's cloth is not a sheet with one
        boundary and four corners.
    """
    from isocloth.io.trajectory import load_trajectory
    from isocloth.scenes.loader import build_mesh, config_from_dict

    folder = Path(folder)
    if not (folder / "trajectory.npz").is_file():
        raise FileNotFoundError(f"{folder} has no trajectory.npz: is it a run folder written by 'isocloth run'?")
    traj = load_trajectory(folder)  # refuses an empty trajectory and non-finite positions
    meta = traj.metadata
    if not isinstance(meta.get("scene"), dict):
        raise ValueError(f"{folder / 'metadata.json'} has no scene: it is not the metadata of a run written by "
                         "'isocloth run'; run the scene again")
    mesh = build_mesh(config_from_dict(meta["scene"], str(folder / "metadata.json")),
                      Path(meta.get("scene_base_dir", ".")))
    segments, _, _ = sheet_segments(mesh)
    return np.asarray(traj.times, dtype=np.float64), sequence_coordinates(traj.positions, segments), segments


def write_run_coordinates(folder, out=None) -> dict[str, Path]:
    """Write the run's coordinates and distance matrix into ``out`` (default the run folder):
    ``dgli.csv`` (time and the 28 coordinates g_i_j of segment pairs i < j, a row per frame),
    ``dgli.npz`` (times, coordinates, segments, Spearman distance matrix) and ``dgli_distances.png``
    (the frames × frames Spearman distance matrix, eq. 7.9); each written atomically. Returns
    {name: path}.

    Raises
    ------
    FileNotFoundError, ValueError
        As :func:`run_coordinates`.
    """
    from isocloth.io.atomic import atomic_path, atomic_write_text
    from isocloth.viz.figures import plot_distance_matrix

    folder = Path(folder)
    out = Path(out) if out is not None else folder
    times, coords, segments = run_coordinates(folder)  # a refused run folder leaves nothing behind
    out.mkdir(parents=True, exist_ok=True)
    D = spearman_distance_matrix(coords)
    m = segments.shape[0]
    header = ["t"] + [f"g_{i}_{j}" for i in range(m) for j in range(i + 1, m)]
    text = io.StringIO()
    text.write(",".join(header) + "\n")
    np.savetxt(text, np.column_stack([times, coords]), delimiter=",", fmt="%.10g")
    paths = {"csv": atomic_write_text(out / "dgli.csv", text.getvalue())}
    with atomic_path(out / "dgli.npz") as tmp:
        np.savez(tmp, times=times, coordinates=coords, segments=segments, distances=D)
    paths["npz"] = out / "dgli.npz"
    paths["png"] = plot_distance_matrix(D, times, out / "dgli_distances.png",
                                        title=f"dGLI cloth coordinates, {folder.name}: Spearman distances")
    return paths
