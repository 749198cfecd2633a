"""Offscreen rendering: images look like a cloth, and videos have the expected frames."""

import numpy as np
import pytest

from isocloth.io.trajectory import Trajectory
from isocloth.viz import render
from isocloth.viz.render import (
    FrameRenderer,
    render_frame,
    render_png,
    render_video,
    trajectory_bounds,
    video_frame_indices,
)


def sheet(n=5, size=0.5):
    xs, ys = np.meshgrid(np.linspace(0, size, n + 1), np.linspace(0, size, n + 1), indexing="ij")
    x = np.stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)], axis=1)
    idx = np.arange(x.shape[0]).reshape(n + 1, n + 1)
    quads = np.stack([idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]], -1).reshape(-1, 4)
    return x, quads


def flapping_trajectory(frames, dt):
    x0, quads = sheet()
    times = np.arange(frames) * dt
    pos = np.repeat(x0[None], frames, axis=0)
    pos[:, :, 2] = 0.15 * np.sin(2 * np.pi * (times[:, None] - 2 * x0[None, :, 0]))
    pos[:, :, 2] *= x0[None, :, 0] / 0.5
    tris = np.zeros((0, 3), dtype=np.int64)
    return Trajectory(times, pos, tris, quads, {})


def blue_pixels(img):
    """Count pixels of the (shaded) front cloth colour: clearly bluer than red."""
    rgb = img.astype(int)
    return int(np.count_nonzero((rgb[..., 2] - rgb[..., 0] > 40) & (rgb[..., 2] > 60)))


def red_pixels(img):
    rgb = img.astype(int)
    return int(np.count_nonzero((rgb[..., 0] > 180) & (rgb[..., 1] < 70) & (rgb[..., 2] < 70)))


def test_frame_shape_and_cloth_colour():
    traj = flapping_trajectory(4, 0.1)
    img = render_frame(traj.positions[1], traj.triangles, traj.quads, time=0.1, title="flap")
    assert img.shape == (480, 640, 3) and img.dtype == np.uint8
    assert img.reshape(-1, 3).std(axis=0).max() > 10  # not uniform
    assert blue_pixels(img) > 2000  # the cloth covers a good part of the image
    # shading: the cloth is not one flat colour
    cloth = img[(img[..., 2].astype(int) - img[..., 0] > 40)]
    assert len(np.unique(cloth[:, 2])) > 5


def test_back_side_has_another_colour():
    x, quads = sheet()
    front = render_frame(x, None, quads)
    back = render_frame(x, None, quads[:, ::-1])  # reversed orientation: back faces up
    assert blue_pixels(front) > 2000
    assert blue_pixels(back) < 100


def test_image_changes_when_positions_move_and_size_is_respected():
    traj = flapping_trajectory(4, 0.1)
    bounds = trajectory_bounds(traj.positions)
    r = FrameRenderer(traj.triangles, traj.quads, bounds, size=(321, 203))
    a = r.render(traj.positions[0])
    b = r.render(traj.positions[2])
    assert a.shape == (203, 321, 3)
    assert np.count_nonzero(np.any(a != b, axis=-1)) > 500
    assert np.array_equal(r.render(traj.positions[0]), a)  # re-rendering is deterministic


def test_highlight_nodes_are_drawn_where_the_camera_sees_them():
    from isocloth.sensors import PinholeCamera, look_at

    x, quads = sheet()
    plain = render_frame(x, None, quads)
    marked = render_frame(x, None, quads, highlight_nodes=[0, 5])
    assert red_pixels(plain) == 0
    assert red_pixels(marked) > 20
    # a camera pose instead of the orbit: node 35 (the sheet's far corner) lands on its projection
    cam = PinholeCamera(200, 150, 150.0, 150.0, 100.0, 75.0, pose=look_at((0.25, -0.6, 0.6), (0.25, 0.25, 0.0)))
    img = render_frame(x, None, quads, highlight_nodes=[35], camera=cam)
    assert img.shape == (150, 200, 3)
    u, v = cam.project(x[[35]])[0]
    ys, xs = np.nonzero((img[..., 0] > 180) & (img[..., 1] < 70) & (img[..., 2] < 70))
    assert abs(xs.mean() - u) < 1.5 and abs(ys.mean() - v) < 1.5


def test_near_surfaces_hide_far_ones_whatever_their_size():
    """Ray casting, not a painter's sort of whole faces: one big quad in front of a fine sheet hides it, and the
    fine sheet in front of the big quad hides that."""
    x, quads = sheet(n=20, size=1.0)  # fine sheet in z = 0, front side up (blue)
    big = np.array([[0.2, 0.2, 0.1], [0.8, 0.2, 0.1], [0.8, 0.8, 0.1], [0.2, 0.8, 0.1]])
    both = np.vstack([x, big])
    k = x.shape[0]
    top = render_frame(both, None, np.vstack([quads, [[k, k + 1, k + 2, k + 3]]]), elev=90.0)
    under = render_frame(both, None, np.vstack([quads, [[k + 3, k + 2, k + 1, k]]]), elev=90.0)  # back side up
    h, w = top.shape[:2]
    centre = (slice(h // 2 - 10, h // 2 + 10), slice(w // 2 - 10, w // 2 + 10))
    assert blue_pixels(top[centre]) == 400  # the big quad (front up) covers the centre
    assert blue_pixels(under[centre]) == 0  # its back side (orange) covers the centre
    below = both.copy()
    below[k:, 2] = -0.1  # the big quad under the sheet: the sheet's front everywhere
    assert blue_pixels(render_frame(below, None, np.vstack([quads, [[k + 3, k + 2, k + 1, k]]]), elev=90.0)[centre]) == 400


def test_render_png(tmp_path):
    from PIL import Image

    x, quads = sheet()
    path = render_png(x, None, quads, tmp_path / "sub" / "f.png", time=1.23, size=(200, 150))
    img = np.asarray(Image.open(path))
    assert img.shape[:2] == (150, 200)
    assert blue_pixels(img[..., :3]) > 100


def test_video_frame_indices_pick_nearest():
    times = np.arange(101) * 0.01  # 1 s at 100 Hz
    assert np.array_equal(video_frame_indices(times, 25), np.arange(26) * 4)
    assert np.array_equal(video_frame_indices(times, 25, max_frames=3), [0, 4, 8])
    uneven = np.array([0.0, 0.03, 0.05, 0.2])
    assert np.array_equal(video_frame_indices(uneven, 20), [0, 2, 2, 3, 3])
    assert np.array_equal(video_frame_indices([0.5], 25), [0])
    with pytest.raises(ValueError):
        video_frame_indices(times, 0)


def test_render_mp4_and_gif(tmp_path):
    iio = pytest.importorskip("imageio.v3")
    traj = flapping_trajectory(13, 0.02)  # 0.24 s at 50 Hz -> 7 frames at 25 fps
    seen = []
    mp4 = render_video(traj, tmp_path / "v.mp4", fps=25, size=(160, 120), highlight_nodes=[0],
                       progress=lambda i, total: seen.append((i, total)))
    assert mp4 == tmp_path / "v.mp4" and mp4.stat().st_size > 0
    assert seen == [(i, 7) for i in range(1, 8)]
    frames = _ffmpeg_frames(mp4)
    assert len(frames) == 7 and frames[0].shape[:2] == (120, 160)

    gif = render_video(traj, tmp_path / "v.gif", fps=25, size=(161, 121), max_frames=5)
    frames = iio.imread(gif, index=None)
    assert frames.shape[:3] == (5, 121, 161)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.gif", "v.mp4"]


def test_mp4_falls_back_to_gif(tmp_path, monkeypatch):
    def no_ffmpeg(path, frames, fps):
        raise RuntimeError("no ffmpeg here")

    monkeypatch.setattr(render, "_write_mp4", no_ffmpeg)
    traj = flapping_trajectory(3, 0.04)
    out = render_video(traj, tmp_path / "v.mp4", size=(80, 60))
    assert out == tmp_path / "v.gif" and out.is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["v.gif"]


def test_bad_video_suffix(tmp_path):
    with pytest.raises(ValueError, match=".mp4"):
        render_video(flapping_trajectory(2, 0.1), tmp_path / "v.avi")


def _ffmpeg_frames(path):
    """Decode every frame of a video with imageio's ffmpeg plugin."""
    import imageio.v2 as imageio

    with imageio.get_reader(path, format="FFMPEG") as reader:
        assert reader.get_meta_data()["codec"] == "h264"
        return [frame for frame in reader]
