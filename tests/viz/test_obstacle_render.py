"""Videos show the scene: obstacles are drawn (at their pose of the frame's time), the camera
follows output.elev / output.azim, and the floor grid sits at z = 0."""

import numpy as np
import pytest

from isocloth.contact import obstacles as ob
from isocloth.contact.obstacles.motion import MotionTranslation
from isocloth.scenes.loader import load_scene
from isocloth.viz.obstacle_meshes import ObstacleGeometry
from isocloth.viz.render import OBSTACLE_RGB, render_frame, scene_bounds


def obstacle_pixels(img):
    """Pixels of the shaded obstacle grey: r ≈ g, b a little lower, darker than the grid lines."""
    rgb = img.astype(int)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return int(np.count_nonzero((np.abs(r - g) <= 6) & (r - b >= 2) & (r - b <= 20) & (r < 175) & (r > 40)))


@pytest.mark.parametrize("name", ["tablecloth", "cylinder-friction"])
def test_frames_of_builtin_scenes_show_their_obstacles(name):
    sc = load_scene(name)
    m, x = sc.model, sc.initial_state.x
    obstacles = list(m.obstacles) + list(m.thin_obstacles)
    plain = render_frame(x, m.mesh.triangles, m.mesh.quads, bounds=scene_bounds(np.stack([x.min(0), x.max(0)])))
    drawn = render_frame(x, m.mesh.triangles, m.mesh.quads, obstacles=obstacles)
    assert obstacle_pixels(plain) < 0.002 * plain[..., 0].size
    assert obstacle_pixels(drawn) > 0.05 * drawn[..., 0].size


def test_camera_elevation_changes_the_image():
    sc = load_scene("tablecloth")
    m, x = sc.model, sc.initial_state.x
    low = render_frame(x, m.mesh.triangles, m.mesh.quads, obstacles=m.obstacles, elev=10.0)
    high = render_frame(x, m.mesh.triangles, m.mesh.quads, obstacles=m.obstacles, elev=80.0)
    assert np.mean(np.any(low != high, axis=2)) > 0.05


def test_geometry_of_solid_and_moving_obstacles():
    bounds = np.array([[-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]])
    sphere = ob.ObstacleSphere(center=(0.1, 0.0, 0.2), radius=0.25,
                               motion=MotionTranslation(velocity=(0.0, 0.0, 0.5)))
    g = ObstacleGeometry([sphere], bounds)
    for t in (0.0, 1.0):
        pts = g.triangles(t).reshape(-1, 3)
        r = np.linalg.norm(pts - [0.1, 0.0, 0.2 + 0.5 * t], axis=1)
        assert np.allclose(r, 0.25, atol=1e-12)  # vertices on the sphere at its pose of time t
    cyl = ob.ObstacleCylinder(center=(0.0, 0.0, 0.5), axis=(1.0, 0.0, 0.0), radius=0.1, half_height=0.4)
    pts = ObstacleGeometry([cyl], bounds).triangles(0.0).reshape(-1, 3)
    assert np.abs(cyl.signed_distance(pts)).max() <= 0.1 * (1 - np.cos(np.pi / 32)) + 1e-12  # 32-gon sections
    assert np.allclose(pts.min(0), [-0.4, -0.1, 0.4], atol=2e-3) and np.allclose(pts.max(0), [0.4, 0.1, 0.6], atol=2e-3)
    # a plane that misses the view is not drawn; one that crosses it covers it
    assert ObstacleGeometry([ob.ObstaclePlane(point=(0.0, 0.0, -5.0))], bounds).empty
    floor = ObstacleGeometry([ob.ObstaclePlane()], bounds).triangles(0.0)
    assert np.allclose(floor[..., 2], 0.0)
    assert np.ptp(floor[..., 0]) >= 2.0 and np.ptp(floor[..., 1]) >= 2.0


def test_cloth_lying_on_a_cylinder_is_not_striped_by_it():
    """Flat faces of a cloth wrapped on a cylinder cut through it by their sag; the cylinder must not show
    through (the painter's sort of the earlier renderer drew stripes of it across the cloth)."""
    cyl = ob.ObstacleCylinder(center=(0.0, 0.0, 0.5), axis=(1.0, 0.0, 0.0), radius=0.1, half_height=0.6)
    ang = np.linspace(0.2, np.pi - 0.2, 9)  # a half-wrap of 9 x 13 nodes on the surface, elements of 3.5 cm
    xs = np.linspace(-0.4, 0.4, 13)
    x = np.array([[a, 0.1 * np.cos(t), 0.5 + 0.1 * np.sin(t)] for t in ang for a in xs])
    idx = np.arange(x.shape[0]).reshape(9, 13)
    quads = np.stack([idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]], -1).reshape(-1, 4)
    img = render_frame(x, None, quads, obstacles=[cyl], elev=90.0, azim=-90.0)
    h, w = img.shape[:2]
    inner = img[int(0.42 * h):int(0.58 * h), int(0.3 * w):int(0.7 * w)]  # well inside the cloth's outline
    assert obstacle_pixels(inner) == 0
    assert obstacle_pixels(img) > 0.01 * h * w  # the cylinder's ends, beside the cloth


def test_video_camera_pose_from_the_scene(tmp_path):
    from PIL import Image

    from isocloth.runner import run_scene
    from isocloth.scenes.loader import SceneError

    cam = ["output.camera={eye=[0.0, -3.0, 1.5], target=[0.0, 0.0, 0.75], fov=30.0}"]
    args = ["simulation.duration=0.04", "output.video='gif'"]
    orbit = run_scene(load_scene("tablecloth", args), tmp_path / "orbit")
    posed = run_scene(load_scene("tablecloth", args + cam), tmp_path / "posed")
    a, b = (np.asarray(Image.open(s.video).convert("RGB")) for s in (orbit, posed))
    assert a.shape == b.shape and np.mean(np.any(a != b, axis=2)) > 0.05
    with pytest.raises(SceneError, match="output.camera"):
        load_scene("tablecloth", ["output.camera={eye=[0.0, 0.0, 1.0], target=[0.0, 0.0, 1.0]}"])


def test_thin_obstacles_are_segments_and_points():
    sticks = ob.ObstacleSegments(np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.3], [0.2, 0.0, 0.0], [0.2, 0.0, 0.3]]),
                                 np.array([[0, 1], [2, 3]]), np.array([1, 3]), radius=0.002)
    segs, pts = ObstacleGeometry([sticks], np.array([[-1.0, -1, -1], [1, 1, 1]])).segments(0.0)
    assert segs.shape == (2, 2, 3) and pts.shape == (2, 3)
    assert np.allclose(pts[:, 2], 0.3)


def test_view_reaches_the_floor_and_obstacles_nearby():
    cloth = np.array([[-0.5, -0.5, 0.2], [0.5, 0.5, 1.0]])
    assert scene_bounds(cloth)[0, 2] == 0.0  # the floor is close below: in view
    assert scene_bounds(cloth + [0.0, 0.0, 10.0])[0, 2] == 10.2  # far below: not
    table = np.array([[-0.4, -0.4, -3.0], [0.4, 0.4, 0.75]])
    b = scene_bounds(cloth, table)
    assert b[0, 2] == pytest.approx(-0.3)  # the table's part within half the cloth's size
    assert OBSTACLE_RGB[0] == OBSTACLE_RGB[1]


def test_run_videos_draw_the_scene_with_its_camera(tmp_path, monkeypatch):
    """A run's video shows its obstacles, with output.elev / output.azim; a video that cannot be
    rendered leaves the results and says so."""
    import isocloth.viz.render as render_module
    from PIL import Image

    from isocloth.runner import render_run, run_scene

    args = ["simulation.duration=0.04", "output.video='gif'", "output.elev=70.0", "output.azim=10.0"]
    summary = run_scene(load_scene("tablecloth", args), tmp_path / "run")
    frame = np.asarray(Image.open(summary.video).convert("RGB"))
    assert obstacle_pixels(frame) > 0.05 * frame[..., 0].size
    seen = {}
    real = render_module.render_video

    def spy(traj, path, **kw):
        seen.update(kw)
        return real(traj, path, **kw)

    monkeypatch.setattr(render_module, "render_video", spy)
    render_run(tmp_path / "run", tmp_path / "again.gif")
    assert (seen["elev"], seen["azim"]) == (70.0, 10.0) and len(seen["obstacles"]) == 1

    def broken(*a, **k):
        raise ValueError("no codec")

    monkeypatch.setattr(render_module, "render_video", broken)
    failed = run_scene(load_scene("tablecloth", args), tmp_path / "failed")
    assert failed.video is None and "no codec" in failed.extra["video_error"]
    assert (tmp_path / "failed" / "summary.json").is_file()


def test_the_ground_grid_is_hidden_by_what_stands_on_it():
    """Grid lines at z = 0 are drawn on the floor and on a floor plane, not across a box standing on the floor."""
    box = ob.ObstacleBox(center=(0.0, 0.0, 0.3), half_extents=(0.3, 0.3, 0.3))
    x, quads = np.array([[-0.1, -0.1, 0.7], [0.1, -0.1, 0.7], [0.1, 0.1, 0.7], [-0.1, 0.1, 0.7]]), np.array([[0, 1, 2, 3]])
    view = np.array([[-0.9, -0.9, 0.0], [0.9, 0.9, 0.8]])
    img = render_frame(x, None, quads, obstacles=[box], elev=10.0, azim=-90.0, bounds=view).astype(int)
    grid = (np.abs(img - 191).max(axis=2) <= 2)  # the grid's grey (0.75)
    box_px = np.abs(img[..., 0] - img[..., 1]) <= 6
    box_px &= (img[..., 0] - img[..., 2] >= 2) & (img[..., 0] < 175) & (img[..., 0] > 40)
    rows = np.flatnonzero(box_px.sum(axis=1) > 20)  # image rows across the box's front face
    cols = np.flatnonzero(box_px[rows].sum(axis=0) > 0.9 * rows.size)  # columns inside the face
    assert rows.size > 100 and cols.size > 100 and grid.sum() > 500  # the face and the floor's lines in view
    assert grid[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1].sum() == 0
