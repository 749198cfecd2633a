"""Depth, segmentation and RGB images of the cloth and the obstacles by ray casting (Intel Embree
through ``embreex``), and their point clouds.

Every pixel casts one ray through its centre (:meth:`PinholeCamera.pixel_directions`) against the
cloth's triangles (quads split) and the obstacles' surfaces (``isocloth.viz.obstacle_meshes``: planes
as patches around the view, primitives tessellated, mesh obstacles as given; thin obstacles and
obstacles given only by a signed distance are not seen). The first hit gives the depth (camera-frame
z, m), the label (0 nothing, 1 cloth, 2 + k obstacle k of ``model.obstacles``) and a Lambertian
grey level with a light at the camera.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isocloth.sensors.camera import PinholeCamera
from isocloth.sensors.noise import DepthNoise

__all__ = ["CameraSensor", "SensorFrame", "LABEL_NONE", "LABEL_CLOTH"]

LABEL_NONE = 0
LABEL_CLOTH = 1
"""Labels of the segmentation mask; obstacle k of ``model.obstacles`` has label 2 + k."""

_COLOURS = {LABEL_NONE: (0.92, 0.92, 0.95), LABEL_CLOTH: (0.85, 0.33, 0.22)}
_OBSTACLE_COLOUR = (0.55, 0.58, 0.62)


@dataclass
class SensorFrame:
    """One capture.

    Attributes
    ----------
    camera : PinholeCamera
    depth : (h, w) float32 [m], camera-frame depth; 0 where nothing is measured (no surface, out of
        range, or lost to noise)
    mask : (h, w) int16, label of the surface each pixel sees (``LABEL_NONE``, ``LABEL_CLOTH``,
        2 + k for obstacle k)
    rgb : (h, w, 3) uint8, shaded colour image
    """

    camera: PinholeCamera
    depth: np.ndarray
    mask: np.ndarray
    rgb: np.ndarray

    def point_cloud(self, frame: str = "world", labels=None) -> np.ndarray:
        """Points (k, 3) float64 [m] of the pixels with depth, back-projected (row-major order), in
        the "world" or "camera" frame; ``labels`` (sequence of int) keeps only pixels with those mask
        labels (e.g. ``(LABEL_CLOTH,)``).

        Raises
        ------
        ValueError for an unknown frame.
        """
        if frame not in ("world", "camera"):
            raise ValueError(f"frame must be 'world' or 'camera', got {frame!r}")
        keep = self.depth.ravel() > 0
        if labels is not None:
            keep &= np.isin(self.mask.ravel(), np.asarray(labels))
        p = self.camera.pixel_directions()[keep] * self.depth.ravel()[keep, None].astype(np.float64)
        return self.camera.to_world(p) if frame == "world" else p


class CameraSensor:
    """A camera that images a model's cloth and obstacles.

    Parameters
    ----------
    model : ClothModel (mesh faces, ``obstacles``)
    camera : PinholeCamera
    noise : DepthNoise or None (exact depth)
    seed : int or None, seed of the noise's random generator (captures are then reproducible)

    Raises
    ------
    ValueError if ``camera`` is not a PinholeCamera or ``noise`` not a DepthNoise.
    """

    def __init__(self, model, camera: PinholeCamera, *, noise: DepthNoise | None = None, seed: int | None = None):
        from isocloth.viz.obstacle_meshes import ObstacleGeometry

        if not isinstance(camera, PinholeCamera):
            raise ValueError(f"camera must be a PinholeCamera (or a preset such as realsense_d435()), got "
                             f"{type(camera).__name__}")
        if noise is not None and not isinstance(noise, DepthNoise):
            raise ValueError(f"noise must be a DepthNoise or None, got {type(noise).__name__}")
        self.model = model
        self.camera = camera
        self.noise = noise
        self.rng = np.random.default_rng(seed)
        self._faces = model.mesh.triangulated_faces()
        pts = np.vstack([model.initial_positions, camera.position[None]])
        grow = camera.far
        self._obstacles = list(model.obstacles)
        self._geometry = ObstacleGeometry(self._obstacles, np.stack([pts.min(axis=0) - grow, pts.max(axis=0) + grow]))
        self._dirs = camera.pixel_directions() @ camera.pose[:3, :3].T  # world directions, camera z = 1

    def capture(self, x: np.ndarray, t: float = 0.0) -> SensorFrame:
        """Depth, mask and RGB of the cloth at positions x (n, 3) [m] and the obstacles at time t [s].

        Raises
        ------
        ValueError if x is not a finite (n, 3) array of this model's nodes.
        """
        from embreex import rtcore_scene
        from embreex.mesh_construction import TriangleMesh

        x = np.asarray(x, dtype=np.float64)
        n = self.model.node_count
        if x.shape != (n, 3) or not np.isfinite(x).all():
            raise ValueError(f"capture needs finite cloth positions of shape ({n}, 3), got {x.shape}")
        cam = self.camera
        scene = rtcore_scene.EmbreeScene()
        labels = [LABEL_CLOTH]
        TriangleMesh(scene, np.ascontiguousarray(x[self._faces], dtype=np.float32))
        for obs, tris in self._geometry.solid_parts(t):
            TriangleMesh(scene, np.ascontiguousarray(tris, dtype=np.float32))
            labels.append(2 + next(k for k, o in enumerate(self._obstacles) if o is obs))
        origins = np.ascontiguousarray(np.broadcast_to(cam.position.astype(np.float32), self._dirs.shape))
        hit = scene.run(origins, np.ascontiguousarray(self._dirs, dtype=np.float32), output=1)
        geom = np.asarray(hit["geomID"]).astype(np.int64)
        seen = geom >= 0
        label = np.zeros(geom.size, dtype=np.int16)
        label[seen] = np.asarray(labels, dtype=np.int16)[geom[seen]]
        depth = np.where(seen, np.asarray(hit["tfar"], dtype=np.float32), 0.0).astype(np.float32)
        depth[(depth < cam.near) | (depth > cam.far)] = 0.0
        normal = np.asarray(hit["Ng"], dtype=np.float64)
        ray = self._dirs / np.linalg.norm(self._dirs, axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            cos = np.abs(np.einsum("ij,ij->i", normal, ray)) / np.linalg.norm(normal, axis=1)
        cos = np.where(seen, np.nan_to_num(cos), 0.0)
        h, w = cam.height, cam.width
        depth = depth.reshape(h, w)
        if self.noise is not None:
            depth = self.noise.apply(depth, cos.reshape(h, w), self.rng)
        colour = np.array([_COLOURS.get(int(k), _OBSTACLE_COLOUR) for k in range(int(label.max(initial=0)) + 1)])
        shade = np.where(seen, 0.25 + 0.75 * cos, 1.0)[:, None] * colour[label]
        rgb = np.clip(255.0 * shade, 0, 255).astype(np.uint8).reshape(h, w, 3)
        return SensorFrame(cam, depth, label.reshape(h, w), rgb)
