"""Trajectory save/load round trips, atomic writes and the incremental writer."""

import json
from pathlib import Path

import numpy as np
import pytest

from isocloth.io.atomic import atomic_path, atomic_write_bytes, atomic_write_text
from isocloth.io.trajectory import (
    Trajectory,
    TrajectoryWriter,
    load_trajectory,
    save_trajectory,
)


def grid_sheet(nx=5, ny=5, size=0.5):
    """Nodes (n, 3) and counter-clockwise quads (q, 4) of a flat nx x ny sheet at z = 0."""
    xs, ys = np.meshgrid(np.linspace(0, size, nx + 1), np.linspace(0, size, ny + 1), indexing="ij")
    x = np.stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)], axis=1)
    idx = np.arange(x.shape[0]).reshape(nx + 1, ny + 1)
    quads = np.stack([idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]], -1).reshape(-1, 4)
    return x, quads


def flapping(frames=6, seed=0):
    """A small flapping sheet with awkward float64 values (random digits)."""
    x0, quads = grid_sheet()
    rng = np.random.default_rng(seed)
    times = np.arange(frames) * 0.04
    pos = np.repeat(x0[None], frames, axis=0)
    pos[:, :, 2] = 0.1 * np.sin(2 * np.pi * (times[:, None] - x0[None, :, 0]))
    pos += rng.normal(scale=1e-3, size=pos.shape)
    vel = rng.normal(size=pos.shape)
    tris = np.array([[0, 1, 6], [1, 7, 6]])
    return Trajectory(times, pos, tris, quads, {"scene": "flap", "dt": 0.04}, vel)


def test_round_trip_is_bit_identical(tmp_path):
    traj = flapping()
    save_trajectory(tmp_path / "run", traj)
    back = load_trajectory(tmp_path / "run")
    for name in ("times", "positions", "velocities", "triangles", "quads"):
        a, b = getattr(traj, name), getattr(back, name)
        assert a.dtype == b.dtype, name
        assert np.array_equal(a, b), name
    assert back.metadata == {"scene": "flap", "dt": 0.04}
    assert back.frame_count == 6 and back.node_count == 36
    text = (tmp_path / "run" / "metadata.json").read_text()
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


def test_round_trip_without_velocities(tmp_path):
    traj = flapping()
    traj.velocities = None
    save_trajectory(tmp_path, traj)
    assert load_trajectory(tmp_path).velocities is None


def test_load_errors_name_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="trajectory.npz"):
        load_trajectory(tmp_path)
    traj = flapping()
    save_trajectory(tmp_path, traj)
    (tmp_path / "metadata.json").unlink()
    with pytest.raises(FileNotFoundError, match="metadata.json"):
        load_trajectory(tmp_path)
    save_trajectory(tmp_path, traj)
    np.savez(tmp_path / "trajectory.npz", times=traj.times, positions=traj.positions[:, :, :2],
             triangles=traj.triangles, quads=traj.quads)
    with pytest.raises(ValueError, match="positions"):
        load_trajectory(tmp_path)
    np.savez(tmp_path / "trajectory.npz", times=traj.times, positions=traj.positions)
    with pytest.raises(ValueError, match="triangles"):
        load_trajectory(tmp_path)
    (tmp_path / "trajectory.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="trajectory.npz"):
        load_trajectory(tmp_path)


def test_trajectory_validates_shapes():
    traj = flapping()
    with pytest.raises(ValueError, match="frames"):
        Trajectory(traj.times[:-1], traj.positions, traj.triangles, traj.quads)
    with pytest.raises(ValueError, match="quads"):
        Trajectory(traj.times, traj.positions, None, traj.quads + 100)
    with pytest.raises(ValueError, match="non-decreasing"):
        Trajectory(traj.times[::-1], traj.positions, None, traj.quads)


def test_atomic_path_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "data.npz"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            assert tmp.parent == tmp_path and tmp.suffix == ".npz"
            np.savez(tmp, a=np.arange(1000))
            assert tmp.stat().st_size > 0
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []

    atomic_write_text(target, "old")
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(target) as tmp:
            tmp.write_text("partial")
            raise KeyboardInterrupt
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["data.npz"]


def test_atomic_path_works_with_numpy_suffix(tmp_path):
    target = tmp_path / "arrays.npz"
    with atomic_path(target) as tmp:
        np.savez(tmp, a=np.arange(5.0))  # np.savez would append .npz to another suffix
    with np.load(target) as npz:
        assert np.array_equal(npz["a"], np.arange(5.0))
    assert [p.name for p in tmp_path.iterdir()] == ["arrays.npz"]
    atomic_write_bytes(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"


def test_writer_flush_then_close(tmp_path):
    traj = flapping(frames=7)
    out = tmp_path / "run"
    writer = TrajectoryWriter(out, traj.triangles, traj.quads, {"scene": "flap"}, flush_every=3)
    for i in range(7):
        writer.append(traj.times[i], traj.positions[i], traj.velocities[i])
    part = load_trajectory(out)  # auto-flushed after 6 frames
    assert part.frame_count == 6
    assert part.metadata["frames"] == 6 and part.metadata["complete"] is False
    writer.flush()
    part = load_trajectory(out)
    assert part.frame_count == 7 and part.metadata["complete"] is False
    assert np.array_equal(part.positions, traj.positions)
    assert np.array_equal(part.velocities, traj.velocities)
    writer.close()
    done = load_trajectory(out)
    assert done.metadata == {"scene": "flap", "frames": 7, "complete": True}
    assert np.array_equal(done.times, traj.times)
    with pytest.raises(RuntimeError):
        writer.append(1.0, traj.positions[0])


def test_writer_copies_and_grows(tmp_path):
    x0, quads = grid_sheet()
    writer = TrajectoryWriter(tmp_path, None, quads, None, flush_every=0)
    x = x0.copy()
    for i in range(40):  # past the initial buffer capacity
        x[:, 2] = i
        writer.append(i * 0.01, x)  # the same array, mutated: append must copy
    assert not (tmp_path / "trajectory.npz").exists()  # flush_every=0: no auto flush
    writer.close(complete=False)
    back = load_trajectory(tmp_path)
    assert back.frame_count == 40 and back.metadata["complete"] is False
    assert np.array_equal(back.positions[:, 0, 2], np.arange(40.0))
    assert back.velocities is None


def test_writer_flush_after_keyboard_interrupt(tmp_path):
    x0, quads = grid_sheet()
    writer = TrajectoryWriter(tmp_path, None, quads, {}, flush_every=50)
    try:
        for i in range(10):
            writer.append(i * 0.1, x0 + i)
            if i == 4:
                raise KeyboardInterrupt
    except KeyboardInterrupt:
        writer.flush()
    back = load_trajectory(tmp_path)
    assert back.frame_count == 5 and back.metadata["complete"] is False


def test_writer_rejects_inconsistent_frames(tmp_path):
    x0, quads = grid_sheet()
    writer = TrajectoryWriter(tmp_path, None, quads, {}, flush_every=0)
    writer.append(0.0, x0)
    with pytest.raises(ValueError, match="velocities"):
        writer.append(0.1, x0, np.zeros_like(x0))
    with pytest.raises(ValueError, match="before"):
        writer.append(-1.0, x0)
    with pytest.raises(ValueError, match="nodes"):
        writer.append(0.2, x0[:-1])
    with pytest.raises(TypeError):
        TrajectoryWriter(tmp_path, None, quads, {"bad": object()})
    assert writer.frame_count == 1


def test_paths_are_accepted_as_strings(tmp_path):
    save_trajectory(str(tmp_path / "s"), flapping())
    assert isinstance(load_trajectory(str(tmp_path / "s")).metadata, dict)
    assert Path(tmp_path / "s" / "trajectory.npz").is_file()


def test_later_flushes_append_parts_and_close_merges_them(tmp_path):
    """Each flush used to rewrite every frame so far (a 200 s run spent more time writing than stepping)."""
    from isocloth.io.trajectory import PART_FILES

    rng = np.random.default_rng(0)
    frames = [(0.1 * i, rng.standard_normal((4, 3)), rng.standard_normal((4, 3))) for i in range(7)]
    w = TrajectoryWriter(tmp_path, np.array([[0, 1, 2], [1, 3, 2]]), None, {"scene": "x"}, flush_every=0)
    for k, (t, x, v) in enumerate(frames):
        w.append(t, x, v)
        if k in (1, 3, 4):
            w.flush()
    # trajectory.npz holds the first flush's 2 frames, two parts the next 3
    assert sorted(p.name for p in tmp_path.glob(PART_FILES)) == ["trajectory.part-00001.npz",
                                                               "trajectory.part-00002.npz"]
    with np.load(tmp_path / "trajectory.npz") as npz:
        assert npz["times"].size == 2
    got = load_trajectory(tmp_path)
    assert got.times.tolist() == [0.0, 0.1, 0.2, 0.30000000000000004, 0.4] and got.metadata["frames"] == 5
    np.testing.assert_array_equal(got.positions, np.stack([f[1] for f in frames[:5]]))
    np.testing.assert_array_equal(got.velocities, np.stack([f[2] for f in frames[:5]]))
    assert "parts" not in got.metadata and got.metadata["complete"] is False
    # a part written by a process killed before its metadata: not listed, ignored
    (tmp_path / "trajectory.part-00003.npz").write_bytes((tmp_path / "trajectory.part-00002.npz").read_bytes())
    assert load_trajectory(tmp_path).times.size == 5
    w.close()
    assert not list(tmp_path.glob(PART_FILES))
    done = load_trajectory(tmp_path)
    assert done.times.size == 7 and done.metadata["complete"] is True
    np.testing.assert_array_equal(done.positions, np.stack([f[1] for f in frames]))


def test_load_refuses_an_empty_trajectory_and_non_finite_frames_also_in_a_part(tmp_path):
    """render, check, dgli and export used to show or write a trajectory with NaN positions or none at all."""
    from isocloth.io.trajectory import require_frames

    traj = flapping()
    empty = Trajectory(traj.times[:0], traj.positions[:0], traj.triangles, traj.quads, {}, traj.velocities[:0])
    save_trajectory(tmp_path / "empty", empty)
    with pytest.raises(ValueError, match=r"trajectory.npz holds no frame.*run the scene again"):
        load_trajectory(tmp_path / "empty")
    w = TrajectoryWriter(tmp_path / "parts", traj.triangles, traj.quads, {}, flush_every=0)
    for k in range(4):
        x = traj.positions[k].copy()
        if k == 3:
            x[5, 1] = np.inf
        w.append(traj.times[k], x, traj.velocities[k])
        if k in (1, 3):
            w.flush()  # frame 3 goes into a part file
    with pytest.raises(ValueError, match=r"positions of frame 3 \(t = 0.12 s\) are not finite \(NaN or inf at node 5\)"):
        load_trajectory(tmp_path / "parts")
    assert require_frames(traj) is traj
    with pytest.raises(ValueError, match="the trajectory holds no frame"):
        require_frames(empty)
