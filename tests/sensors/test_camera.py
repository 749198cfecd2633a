"""Simulated depth camera: analytic depths, back-projection, mask areas, occlusion and noise."""

import numpy as np
import pytest

from isocloth.contact.obstacles import ObstacleSphere
from isocloth.mesh.generators import rectangle
from isocloth.model import ModelBuilder
from isocloth.sensors import (LABEL_CLOTH, LABEL_NONE, CameraSensor, DepthNoise, PinholeCamera, azure_kinect_nfov,
                              realsense_d435)


def _sheet_model(obstacles=()):
    b = ModelBuilder().set_cloth(rectangle(1.0, 1.0, 11, 11))
    for o in obstacles:
        b.add_obstacle(o)
    return b.finalize()


def test_depth_of_a_flat_sheet_is_the_analytic_plane_depth():
    model = _sheet_model()
    cam = PinholeCamera.from_fov(320, 240, 60.0, 45.0).looking_at((0.1, -0.3, 1.0), (0.0, 0.0, 0.0))
    frame = CameraSensor(model, cam).capture(model.initial_positions)
    cloth = frame.mask == LABEL_CLOTH
    assert cloth.sum() > 0.3 * cloth.size
    d = (cam.pixel_directions() @ cam.pose[:3, :3].T).reshape(240, 320, 3)
    analytic = -cam.position[2] / d[..., 2]  # ray o + t d meets z = 0; t is the camera depth (d_c,z = 1)
    assert np.abs(frame.depth[cloth] - analytic[cloth]).max() <= 1e-3
    assert np.all(frame.depth[frame.mask == LABEL_NONE] == 0)


def test_point_cloud_lies_on_the_cloth_surface():
    model = _sheet_model()
    x = model.initial_positions.copy()
    x[:, 2] = 0.15 * np.sin(3 * x[:, 0]) * np.cos(2 * x[:, 1])  # a crumpled state
    cam = realsense_d435(eye=(0.3, -0.8, 0.9), target=(0.0, 0.0, 0.0))
    frame = CameraSensor(model, cam).capture(x)
    cloud = frame.point_cloud(labels=(LABEL_CLOTH,))
    assert cloud.shape[0] > 10000
    from matplotlib.tri import LinearTriInterpolator, Triangulation

    # the cloth is a graph over x-y: the vertical distance to its triangles bounds the distance
    surface = LinearTriInterpolator(Triangulation(x[:, 0], x[:, 1], model.mesh.triangulated_faces()), x[:, 2])
    assert np.abs(cloud[:, 2] - surface(cloud[:, 0], cloud[:, 1])).max() <= 1e-3
    cam_pts = frame.point_cloud(frame="camera", labels=(LABEL_CLOTH,))
    assert np.allclose(cam.to_world(cam_pts), cloud)


def test_mask_area_from_above_is_the_projected_area():
    model = _sheet_model()
    h = 1.5
    cam = PinholeCamera(400, 400, 300.0, 300.0, 200.0, 200.0).looking_at((0, 0, h), (0, 0, 0), up=(0, 1, 0))
    frame = CameraSensor(model, cam).capture(model.initial_positions)
    area = (frame.mask == LABEL_CLOTH).sum() * (h / cam.fx) * (h / cam.fy)
    assert area == pytest.approx(1.0, rel=0.02)


def test_obstacles_occlude_the_cloth_behind_them():
    sphere = ObstacleSphere(center=(0.0, 0.0, 0.3), radius=0.15)
    model = _sheet_model([sphere])
    cam = PinholeCamera(200, 200, 150.0, 150.0, 100.0, 100.0).looking_at((0, 0, 1.5), (0, 0, 0), up=(0, 1, 0))
    frame = CameraSensor(model, cam).capture(model.initial_positions)
    ball = frame.mask == 2
    assert ball[100, 100] and frame.mask[60, 100] == LABEL_CLOTH
    assert frame.depth[100, 100] == pytest.approx(1.5 - 0.45, abs=1e-3)
    # the disc the sphere covers, seen from 1.5 m: radius f r / sqrt(d² − r²) px
    r_px = 150.0 * 0.15 / np.sqrt(1.2 ** 2 - 0.15 ** 2)
    assert ball.sum() == pytest.approx(np.pi * r_px ** 2, rel=0.05)
    clear = CameraSensor(_sheet_model(), cam).capture(model.initial_positions)
    assert (clear.mask == LABEL_CLOTH).sum() - (frame.mask == LABEL_CLOTH).sum() == ball.sum()
    assert tuple(frame.rgb[100, 100]) != tuple(frame.rgb[60, 100])


def test_depth_noise_follows_its_axial_model_and_drops_pixels():
    model = _sheet_model()
    cam = PinholeCamera(200, 200, 150.0, 150.0, 100.0, 100.0).looking_at((0, 0, 1.0), (0, 0, 0), up=(0, 1, 0))
    exact = CameraSensor(model, cam).capture(model.initial_positions)
    noise = DepthNoise(dropout=0.1)
    a = CameraSensor(model, cam, noise=noise, seed=3).capture(model.initial_positions)
    b = CameraSensor(model, cam, noise=noise, seed=3).capture(model.initial_positions)
    assert np.array_equal(a.depth, b.depth)
    both = (a.depth > 0) & (exact.depth > 0)
    err = (a.depth - exact.depth)[both]
    assert err.std() == pytest.approx(float(noise.sigma(1.0)), rel=0.05)
    lost = ((a.depth == 0) & (exact.depth > 0)).sum() / (exact.depth > 0).sum()
    assert lost == pytest.approx(0.1, abs=0.01)


def test_presets_and_bad_cameras():
    d435, kinect = realsense_d435(), azure_kinect_nfov()
    assert (d435.width, d435.height) == (848, 480) and (kinect.width, kinect.height) == (640, 576)
    assert 2 * np.degrees(np.arctan(0.5 * d435.width / d435.fx)) == pytest.approx(87.0)
    with pytest.raises(ValueError, match="rotation"):
        PinholeCamera(10, 10, 5.0, 5.0, 5.0, 5.0, pose=np.diag([2.0, 1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="parallel"):
        d435.looking_at((0, 0, 1), (0, 0, 0))
    with pytest.raises(ValueError, match="focal"):
        PinholeCamera(10, 10, 0.0, 5.0, 5.0, 5.0)
    model = _sheet_model()
    with pytest.raises(ValueError, match="finite cloth positions"):
        CameraSensor(model, d435).capture(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="PinholeCamera"):
        CameraSensor(model, "d435")


def test_a_table_plane_is_seen_at_its_depth_behind_the_cloth():
    from isocloth.contact.obstacles import ObstaclePlane

    model = _sheet_model([ObstaclePlane(point=(0.0, 0.0, -0.2), normal=(0.0, 0.0, 1.0))])
    cam = PinholeCamera(100, 100, 50.0, 50.0, 50.0, 50.0).looking_at((0, 0, 1.0), (0, 0, 0), up=(0, 1, 0))
    frame = CameraSensor(model, cam).capture(model.initial_positions)
    assert frame.mask[50, 50] == LABEL_CLOTH and frame.depth[50, 50] == pytest.approx(1.0, abs=1e-6)
    assert frame.mask[2, 2] == 2 and frame.depth[2, 2] == pytest.approx(1.2, abs=1e-6)
    assert np.all(frame.mask > 0)  # the plane fills the rest of the view


def test_cloth_lying_on_a_plane_is_seen_in_front_of_it():
    from isocloth.contact.obstacles import ObstaclePlane

    model = _sheet_model([ObstaclePlane(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0))])
    cam = PinholeCamera(100, 100, 120.0, 120.0, 50.0, 50.0).looking_at((0.1, -0.3, 0.6), (0, 0, 0))
    frame = CameraSensor(model, cam).capture(model.initial_positions)  # the sheet lies in the plane z = 0
    clear = CameraSensor(_sheet_model(), cam).capture(model.initial_positions)
    assert np.array_equal(frame.mask == LABEL_CLOTH, clear.mask == LABEL_CLOTH)


@pytest.mark.parametrize("eye", [(1.5, -0.2, 0.6), (-0.45, -0.45, 0.05)])
def test_rays_are_traced_only_where_the_geometry_can_be_and_the_image_is_unchanged(monkeypatch, eye):
    """The capture traces the pixels of the scene's projected bounding box (all of them when the box reaches
    behind the camera): the same depth, mask and colours as tracing every pixel."""
    from isocloth.contact.obstacles import ObstaclePlane

    model = _sheet_model([ObstacleSphere(center=(0.3, 0.2, 0.25), radius=0.1), ObstaclePlane(point=(0, 0, -0.05))])
    x = model.initial_positions.copy()
    x[:, 2] = 0.1 * np.sin(3 * x[:, 0])
    cam = PinholeCamera.from_fov(160, 120, 70.0, 55.0).looking_at(eye, (0.2, 0.1, 0.0))
    sensor = CameraSensor(model, cam)
    rays = sensor._rays_in_view(np.stack([x.min(axis=0), x.max(axis=0)]))
    if eye[2] > 0.5:
        assert rays is not None and 0 < rays.size < 0.7 * 160 * 120  # the sheet seen from the side: a part
    else:
        assert rays is None  # the camera inside the sheet's box: every pixel
    culled = sensor.capture(x)
    monkeypatch.setattr(CameraSensor, "_rays_in_view", lambda self, box: None)
    full = sensor.capture(x)
    assert np.array_equal(culled.depth, full.depth) and np.array_equal(culled.mask, full.mask)
    assert np.array_equal(culled.rgb, full.rgb)
    assert (culled.mask == LABEL_CLOTH).any()
    if rays is not None:
        assert (culled.mask == 2).any() and (culled.mask == 3).any()  # sphere and plane seen too
