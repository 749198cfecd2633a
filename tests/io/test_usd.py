"""USD export: the stage re-read with pxr gives the saved positions at each time code and the
obstacles' transforms."""

import numpy as np
import pytest

from isocloth.contact.obstacles.codim import ObstacleSegments
from isocloth.contact.obstacles.motion import MotionRotation, MotionTranslation
from isocloth.contact.obstacles.plane import ObstaclePlane
from isocloth.contact.obstacles.sphere import ObstacleSphere
from isocloth.io.trajectory import Trajectory
from isocloth.io.usd import export_usd, frame_rate

pxr = pytest.importorskip("pxr")
from pxr import Usd, UsdGeom  # noqa: E402

from tests.io.test_export import mixed_sheet_trajectory  # noqa: E402


def _points(stage, path, code):
    return np.array(UsdGeom.Mesh(stage.GetPrimAtPath(path)).GetPointsAttr().Get(code), dtype=np.float64)


def _world(stage, path, code):
    """4 × 4 column-vector transform (R | t) of a prim at a time code."""
    M = np.array(UsdGeom.Xformable(stage.GetPrimAtPath(path)).ComputeLocalToWorldTransform(code))
    return M.T


@pytest.mark.parametrize("suffix", [".usd", ".usda"])
def test_cloth_points_at_each_time_code(tmp_path, suffix):
    traj = mixed_sheet_trajectory(frames=6)
    traj.positions[0, 0] = traj.positions[1, 0]  # keep the coordinates in float32's range
    path = export_usd(traj, tmp_path / f"run{suffix}")
    stage = Usd.Stage.Open(str(path))
    fps = stage.GetTimeCodesPerSecond()
    assert fps == pytest.approx(1.0 / 0.04)
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z and UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert stage.GetStartTimeCode() == 0.0 and stage.GetEndTimeCode() == pytest.approx(5.0)
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/World/Cloth"))
    counts = np.array(mesh.GetFaceVertexCountsAttr().Get())
    assert (counts == 3).sum() == len(traj.triangles) and (counts == 4).sum() == len(traj.quads)
    idx = np.array(mesh.GetFaceVertexIndicesAttr().Get())
    assert np.array_equal(idx, np.concatenate([traj.triangles.ravel(), traj.quads.ravel()]))
    for i, t in enumerate(traj.times):
        assert np.abs(_points(stage, "/World/Cloth", t * fps) - traj.positions[i]).max() <= 1e-6
    # between samples USD interpolates linearly: half-way between frames 2 and 3
    mid = _points(stage, "/World/Cloth", 2.5)
    assert np.abs(mid - 0.5 * (traj.positions[2] + traj.positions[3])).max() <= 1e-6


def test_obstacle_transforms_follow_their_motion(tmp_path):
    traj = mixed_sheet_trajectory(frames=5)
    traj.positions[0, 0] = traj.positions[1, 0]
    ball = ObstacleSphere(center=(0.25, 0.25, -0.3), radius=0.2, name="ball",
                          motion=MotionTranslation(velocity=(0.0, 0.0, 1.0)))
    turn = ObstacleSphere(center=(0.5, 0.0, 0.0), radius=0.05, name="turning ball",
                          motion=MotionRotation(axis=(0, 0, 1), center=(0.0, 0.0, 0.0), angular_velocity=np.pi))
    floor = ObstaclePlane(point=(0.0, 0.0, -0.05), normal=(0.0, 0.0, 1.0), name="thin")  # not the curves' prim
    stick = ObstacleSegments(vertices=[[0.0, 0.0, 0.2], [0.5, 0.5, 0.2]], segments=[[0, 1]], radius=0.01)
    stage = Usd.Stage.Open(str(export_usd(traj, tmp_path / "s.usdc", [ball, turn, floor, stick])))
    fps = stage.GetTimeCodesPerSecond()
    names = {p.GetName() for p in stage.GetPrimAtPath("/World/Obstacles").GetChildren()}
    assert {"ball", "turning_ball", "thin_2", "thin"} <= names
    for t in traj.times:
        for prim, obs in (("ball", ball), ("turning_ball", turn)):
            pose = obs.motion.pose(float(t))
            M = _world(stage, f"/World/Obstacles/{prim}", t * fps)
            assert np.allclose(M[:3, :3], pose.rotation, atol=1e-12) and np.allclose(M[:3, 3], pose.translation)
        # a vertex of the drawn sphere lies on the moved sphere
        v = _points(stage, "/World/Obstacles/ball/Mesh", t * fps)
        M = _world(stage, "/World/Obstacles/ball", t * fps)
        world = v @ M[:3, :3].T + M[:3, 3]
        centre = ball.motion.pose(float(t)).apply(ball.center[None])[0]
        assert np.abs(np.linalg.norm(world - centre, axis=1) - 0.2).max() < 0.01
    assert np.allclose(_world(stage, "/World/Obstacles/thin_2", 0.0), np.eye(4))
    # the static floor's transform is not time-sampled
    assert not UsdGeom.Xformable(stage.GetPrimAtPath("/World/Obstacles/thin_2")).TransformMightBeTimeVarying()
    curves = UsdGeom.BasisCurves(stage.GetPrimAtPath("/World/Obstacles/thin"))
    assert np.allclose(np.array(curves.GetPointsAttr().Get(0.0)), [[0.0, 0.0, 0.2], [0.5, 0.5, 0.2]])
    assert np.allclose(np.array(curves.GetWidthsAttr().Get()), 0.02)  # the stick's diameter


def test_bad_inputs_are_named_errors(tmp_path):
    traj = mixed_sheet_trajectory(frames=3)
    with pytest.raises(ValueError, match=r"\.usd, \.usda or \.usdc"):
        export_usd(traj, tmp_path / "cloth.obj")
    empty = Trajectory(np.zeros(0), np.zeros((0, 36, 3)), traj.triangles, traj.quads, {})
    with pytest.raises(ValueError):
        export_usd(empty, tmp_path / "cloth.usd")
    assert not (tmp_path / "cloth.usd").exists()


def test_an_unwritable_stage_is_an_oserror(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError):
        export_usd(mixed_sheet_trajectory(frames=2), tmp_path / "file" / "cloth.usd")


def test_frame_rate():
    assert frame_rate(np.array([0.0, 0.01, 0.02, 0.04])) == pytest.approx(100.0)
    assert frame_rate(np.array([0.5])) == 24.0
