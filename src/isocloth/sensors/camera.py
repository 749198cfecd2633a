"""Pinhole cameras (OpenCV convention: x right, y down, z forward; pixel centres at integer + ½).

A pixel (u, v) sees along d_c = ((u − c_x)/f_x, (v − c_y)/f_y, 1) in the camera frame, so a point at
camera-frame depth z lies at z·d_c; ``pose`` is the 4 × 4 transform from camera to world
coordinates. Presets from the manufacturers' depth-camera specifications: Intel RealSense D435
(depth field of view 87° × 58° at 848 × 480, range 0.105–10 m) and Azure Kinect DK (narrow
field-of-view unbinned mode: 640 × 576, 75° × 65°, range 0.5–3.86 m).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["PinholeCamera", "look_at", "realsense_d435", "azure_kinect_nfov"]


def look_at(eye, target, up=(0.0, 0.0, 1.0)) -> np.ndarray:
    """Camera-to-world pose (4, 4) float64 of a camera at ``eye`` (3,) [m] looking at ``target``
    (3,) [m] with image "up" (−y) towards ``up`` (3,).

    Raises
    ------
    ValueError if eye and target coincide or the view direction is parallel to ``up``.
    """
    eye, target, up = (np.asarray(a, dtype=np.float64) for a in (eye, target, up))
    z = target - eye
    if not np.linalg.norm(z) > 0:
        raise ValueError("a camera cannot look at its own position: give a target away from the eye")
    z /= np.linalg.norm(z)
    x = np.cross(z, up)
    if not np.linalg.norm(x) > 1e-9:
        raise ValueError("the view direction is parallel to 'up': give another up vector")
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    pose = np.eye(4)
    pose[:3, 0], pose[:3, 1], pose[:3, 2], pose[:3, 3] = x, y, z, eye
    return pose


@dataclass(frozen=True)
class PinholeCamera:
    """Intrinsics, resolution, range and pose of a depth/RGB camera.

    Attributes
    ----------
    width, height : int, image size [px]
    fx, fy, cx, cy : float, focal lengths and principal point [px]
    pose : (4, 4) float64, camera-to-world transform (default: at the origin looking along +z)
    near, far : float [m], depth range; surfaces outside it give no depth (0)

    Raises
    ------
    ValueError for a non-positive size, focal length or range, or a pose that is not a rigid transform.
    """

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    pose: np.ndarray = field(default_factory=lambda: np.eye(4))
    near: float = 0.05
    far: float = 10.0

    def __post_init__(self):
        if int(self.width) < 1 or int(self.height) < 1:
            raise ValueError(f"image size must be at least 1 x 1 px, got {self.width} x {self.height}")
        if not (self.fx > 0 and self.fy > 0):
            raise ValueError(f"focal lengths must be > 0 px, got fx = {self.fx}, fy = {self.fy}")
        if not (0 <= self.near < self.far):
            raise ValueError(f"depth range must satisfy 0 <= near < far, got {self.near} .. {self.far} m")
        pose = np.asarray(self.pose, dtype=np.float64)
        if pose.shape != (4, 4) or not np.isfinite(pose).all():
            raise ValueError(f"pose must be a finite 4 x 4 camera-to-world transform, got shape {pose.shape}")
        R = pose[:3, :3]
        if not np.allclose(R.T @ R, np.eye(3), atol=1e-6) or np.linalg.det(R) <= 0:
            raise ValueError("pose[:3, :3] must be a rotation (orthonormal, determinant 1); use look_at(eye, target)")
        object.__setattr__(self, "pose", pose)

    @classmethod
    def from_fov(cls, width: int, height: int, hfov_deg: float, vfov_deg: float, **kw) -> "PinholeCamera":
        """A camera with the given fields of view [degrees] and the principal point at the image centre."""
        fx = 0.5 * width / np.tan(np.radians(0.5 * hfov_deg))
        fy = 0.5 * height / np.tan(np.radians(0.5 * vfov_deg))
        return cls(width, height, fx, fy, 0.5 * width, 0.5 * height, **kw)

    def looking_at(self, eye, target, up=(0.0, 0.0, 1.0)) -> "PinholeCamera":
        """This camera moved to ``eye`` looking at ``target`` (:func:`look_at`)."""
        from dataclasses import replace

        return replace(self, pose=look_at(eye, target, up))

    @property
    def position(self) -> np.ndarray:
        """(3,) float64 [m], the optical centre in the world."""
        return self.pose[:3, 3].copy()

    def pixel_directions(self) -> np.ndarray:
        """(h·w, 3) float64 camera-frame directions d_c of the pixel centres, row by row (z = 1)."""
        u, v = np.meshgrid(np.arange(self.width) + 0.5, np.arange(self.height) + 0.5)
        d = np.empty((self.height * self.width, 3))
        d[:, 0] = ((u - self.cx) / self.fx).ravel()
        d[:, 1] = ((v - self.cy) / self.fy).ravel()
        d[:, 2] = 1.0
        return d

    def to_world(self, points: np.ndarray) -> np.ndarray:
        """Camera-frame points (k, 3) [m] in world coordinates."""
        return np.asarray(points, dtype=np.float64) @ self.pose[:3, :3].T + self.pose[:3, 3]

    def to_camera(self, points: np.ndarray) -> np.ndarray:
        """World points (k, 3) [m] in the camera frame."""
        return (np.asarray(points, dtype=np.float64) - self.pose[:3, 3]) @ self.pose[:3, :3]

    def project(self, points: np.ndarray) -> np.ndarray:
        """Pixel coordinates (k, 2) float64 (u, v) of world points (k, 3) [m] (points behind the camera: nan)."""
        p = self.to_camera(points)
        with np.errstate(divide="ignore", invalid="ignore"):
            uv = np.stack([self.fx * p[:, 0] / p[:, 2] + self.cx, self.fy * p[:, 1] / p[:, 2] + self.cy], axis=1)
        uv[p[:, 2] <= 0] = np.nan
        return uv


def realsense_d435(eye=(0.0, -1.0, 1.0), target=(0.0, 0.0, 0.0)) -> PinholeCamera:
    """Intel RealSense D435 depth stream at 848 × 480 (field of view 87° × 58°, range 0.105–10 m)."""
    return PinholeCamera.from_fov(848, 480, 87.0, 58.0, near=0.105, far=10.0).looking_at(eye, target)


def azure_kinect_nfov(eye=(0.0, -1.0, 1.0), target=(0.0, 0.0, 0.0)) -> PinholeCamera:
    """Azure Kinect DK depth in its narrow field-of-view unbinned mode (640 × 576, 75° × 65°, 0.5–3.86 m)."""
    return PinholeCamera.from_fov(640, 576, 75.0, 65.0, near=0.5, far=3.86).looking_at(eye, target)
