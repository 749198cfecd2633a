"""Per-frame OBJ/PLY export must re-import bit-identically."""

import numpy as np
import pytest

from isocloth.io.export import export_frames, read_frame
from isocloth.io.trajectory import Trajectory


def mixed_sheet_trajectory(frames=5, seed=1):
    """A 5 x 5 quad sheet whose first row of quads is split into triangles."""
    n = 6
    xs, ys = np.meshgrid(np.linspace(0, 0.5, n), np.linspace(0, 0.5, n), indexing="ij")
    x0 = np.stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)], axis=1)
    idx = np.arange(n * n).reshape(n, n)
    quads = np.stack([idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]], -1).reshape(-1, 4)
    split, quads = quads[:5], quads[5:]
    tris = np.concatenate([split[:, [0, 1, 2]], split[:, [0, 2, 3]]])
    rng = np.random.default_rng(seed)
    times = np.linspace(0.0, 0.2, frames)
    pos = np.repeat(x0[None], frames, axis=0)
    pos[:, :, 2] = 0.1 * np.sin(2 * np.pi * (5 * times[:, None] - x0[None, :, 0]))
    pos *= 1 + rng.normal(scale=1e-7, size=pos.shape)  # full-precision mantissas
    pos[0, 0] = [1e-300, -np.pi * 1e10, 5e-324]  # extreme values survive too
    return Trajectory(times, pos, tris, quads, {})


@pytest.mark.parametrize("fmt", ["obj", "ply"])
def test_export_round_trip_is_bit_identical(tmp_path, fmt):
    traj = mixed_sheet_trajectory()
    paths = export_frames(traj, tmp_path / fmt, fmt=fmt)
    assert [p.name for p in paths] == [f"frame_{i:05d}.{fmt}" for i in range(5)]
    for i, path in enumerate(paths):
        x, tris, quads = read_frame(path)
        assert x.dtype == np.float64
        assert np.array_equal(x, traj.positions[i])
        assert np.array_equal(tris, traj.triangles)
        assert np.array_equal(quads, traj.quads)


def test_every_picks_frames_by_index(tmp_path):
    traj = mixed_sheet_trajectory(frames=5)
    calls = []
    paths = export_frames(traj, tmp_path, fmt="ply", every=2, progress=lambda done, total: calls.append((done, total)))
    assert [p.name for p in paths] == ["frame_00000.ply", "frame_00002.ply", "frame_00004.ply"]
    assert calls == [(1, 3), (2, 3), (3, 3)]
    assert np.array_equal(read_frame(paths[2])[0], traj.positions[4])


def test_obj_faces_are_one_based(tmp_path):
    traj = mixed_sheet_trajectory(frames=1)
    path = export_frames(traj, tmp_path)[0]
    faces = [line.split()[1:] for line in path.read_text().splitlines() if line.startswith("f ")]
    assert len(faces) == len(traj.triangles) + len(traj.quads)
    assert min(int(i) for f in faces for i in f) == 1
    assert max(int(i) for f in faces for i in f) == traj.node_count


def test_ply_is_readable_by_meshio(tmp_path):
    meshio = pytest.importorskip("meshio")
    traj = mixed_sheet_trajectory(frames=1)
    path = export_frames(traj, tmp_path, fmt="ply")[0]
    mesh = meshio.read(path)
    assert np.array_equal(mesh.points, traj.positions[0])
    cells = {block.type: block.data for block in mesh.cells}
    assert np.array_equal(cells["quad"], traj.quads)
    assert np.array_equal(cells["triangle"], traj.triangles)


def test_bad_arguments(tmp_path):
    traj = mixed_sheet_trajectory(frames=1)
    with pytest.raises(ValueError, match="obj, ply"):
        export_frames(traj, tmp_path, fmt="stl")
    with pytest.raises(ValueError, match="every"):
        export_frames(traj, tmp_path, every=0)
    (tmp_path / "x.stl").write_text("solid")
    with pytest.raises(ValueError, match="suffix"):
        read_frame(tmp_path / "x.stl")
    with pytest.raises(FileNotFoundError):
        read_frame(tmp_path / "missing.obj")


def test_export_refuses_an_empty_or_non_finite_trajectory_before_writing(tmp_path):
    """NaN positions used to fail in the mesh writer ("fix ... in the mesh file") after earlier frames were written."""
    traj = mixed_sheet_trajectory(frames=3)
    traj.positions[2, 0, 0] = np.nan
    with pytest.raises(ValueError, match=r"positions of frame 2 .* not finite"):
        export_frames(traj, tmp_path / "a")
    empty = Trajectory(traj.times[:0], traj.positions[:0], traj.triangles, traj.quads)
    with pytest.raises(ValueError, match="no frame"):
        export_frames(empty, tmp_path / "b")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
