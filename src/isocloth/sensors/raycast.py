"""Depth, segmentation and RGB images of the cloth and the obstacles by ray casting (Intel Embree
through ``embreex``), and their point clouds.

Every pixel casts one ray through its centre (:meth:`PinholeCamera.pixel_directions`) against the
cloth's triangles (quads split) and the obstacles' surfaces (``isocloth.viz.obstacle_meshes``:
primitives tessellated, mesh obstacles as given; planes intersected exactly; thin obstacles and
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

PLANE_MARGIN = 1e-3
"""[m] A plane hides a surface the ray meets only when it is nearer by more than this."""

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
    cloth_rgb : (3,) float in [0, 1] or None, base colour of the cloth (None: the default terracotta)
    light : float > 0, brightness of the light at the camera: a surface seen at incidence θ is shaded
        light × (0.25 + 0.75 cos θ) (clipped to white)

    Raises
    ------
    ValueError if ``camera`` is not a PinholeCamera, ``noise`` not a DepthNoise, ``cloth_rgb`` not three numbers
    in [0, 1] or ``light`` not > 0.
    """

    def __init__(self, model, camera: PinholeCamera, *, noise: DepthNoise | None = None, seed: int | None = None,
                 cloth_rgb=None, light: float = 1.0):
        from isocloth.contact.obstacles import ObstaclePlane
        from isocloth.viz.obstacle_meshes import ObstacleGeometry

        if not isinstance(camera, PinholeCamera):
            raise ValueError(f"camera must be a PinholeCamera (or a preset such as realsense_d435()), got "
                             f"{type(camera).__name__}")
        if noise is not None and not isinstance(noise, DepthNoise):
            raise ValueError(f"noise must be a DepthNoise or None, got {type(noise).__name__}")
        colours = dict(_COLOURS)
        if cloth_rgb is not None:
            c = np.asarray(cloth_rgb, dtype=np.float64)
            if c.shape != (3,) or not np.all((c >= 0) & (c <= 1)):
                raise ValueError(f"cloth_rgb must be three numbers in [0, 1], got {cloth_rgb!r}")
            colours[LABEL_CLOTH] = tuple(c)
        if not (isinstance(light, (int, float)) and np.isfinite(light) and light > 0):
            raise ValueError(f"light must be a brightness > 0, got {light!r}")
        self._colours, self.light = colours, float(light)
        self.model = model
        self.camera = camera
        self.noise = noise
        self.rng = np.random.default_rng(seed)
        self._faces = model.mesh.triangulated_faces()
        pts = np.vstack([model.initial_positions, camera.position[None]])
        grow = camera.far
        self._obstacles = list(model.obstacles)
        self._planes = [(2 + k, o) for k, o in enumerate(self._obstacles) if isinstance(o, ObstaclePlane)]
        solid = [o for o in self._obstacles if not isinstance(o, ObstaclePlane)]
        self._geometry = ObstacleGeometry(solid, np.stack([pts.min(axis=0) - grow, pts.max(axis=0) + grow]))
        dirs = camera.pixel_directions() @ camera.pose[:3, :3].T  # world directions, camera z = 1
        self._dirs = np.ascontiguousarray(dirs, dtype=np.float32)
        self._unit = (dirs / np.linalg.norm(dirs, axis=1, keepdims=True)).astype(np.float32)
        self._origins = np.ascontiguousarray(np.broadcast_to(camera.position.astype(np.float32), dirs.shape))

    def _rays_in_view(self, box: np.ndarray) -> np.ndarray | None:
        """Indices (k,) int64 of the pixels whose rays can meet the axis-aligned box (2, 3) [m]: those in
        the bounding rectangle of its projected corners, one pixel wider; None (every pixel) when a
        corner lies behind the camera's near plane (the projection does not bound the box then)."""
        cam = self.camera
        corners = np.array([[box[i, 0], box[j, 1], box[k, 2]] for i in (0, 1) for j in (0, 1) for k in (0, 1)])
        if cam.to_camera(corners)[:, 2].min() <= cam.near:
            return None
        uv = cam.project(corners)
        u0, v0 = np.maximum(np.floor(uv.min(axis=0)).astype(np.int64) - 1, 0)
        u1, v1 = np.minimum(np.ceil(uv.max(axis=0)).astype(np.int64) + 1, [cam.width, cam.height])
        if u0 >= u1 or v0 >= v1:
            return np.zeros(0, dtype=np.int64)
        return (np.arange(v0, v1)[:, None] * cam.width + np.arange(u0, u1)[None, :]).ravel()

    def capture(self, x: np.ndarray, t: float = 0.0, *, rgb: bool = True, noise: bool = True) -> SensorFrame:
        """Depth, mask and RGB of the cloth at positions x (n, 3) [m] and the obstacles at time t [s]
        (``rgb=False``: the colour image is left black, which saves its shading; ``noise=False``: exact depth
        without drawing from the noise's random stream, e.g. for a picture that is not an observation).

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
        cloth = x[self._faces]
        TriangleMesh(scene, np.ascontiguousarray(cloth, dtype=np.float32))
        boxes = [np.stack([x.min(axis=0), x.max(axis=0)])]
        for obs, tris in self._geometry.solid_parts(t):
            TriangleMesh(scene, np.ascontiguousarray(tris, dtype=np.float32))
            labels.append(2 + next(k for k, o in enumerate(self._obstacles) if o is obs))
            boxes.append(np.stack([tris.reshape(-1, 3).min(axis=0), tris.reshape(-1, 3).max(axis=0)]))
        h, w = cam.height, cam.width
        rays = self._rays_in_view(np.stack([np.min([b[0] for b in boxes], axis=0), np.max([b[1] for b in boxes], axis=0)]))
        geom = np.full(h * w, -1, dtype=np.int64)
        depth = np.full(h * w, np.inf, dtype=np.float32)
        normal = np.zeros((h * w, 3), dtype=np.float32)
        if rays is None or rays.size:
            origins, dirs = (self._origins, self._dirs) if rays is None else (self._origins[rays], self._dirs[rays])
            hit = scene.run(np.ascontiguousarray(origins), np.ascontiguousarray(dirs), output=1)
            where = slice(None) if rays is None else rays
            geom[where] = np.asarray(hit["geomID"])
            depth[where] = np.where(geom[where] >= 0, np.asarray(hit["tfar"]), np.inf)
            normal[where] = np.asarray(hit["Ng"])
        label = np.zeros(h * w, dtype=np.int16)
        hits = geom >= 0
        label[hits] = np.asarray(labels, dtype=np.int16)[geom[hits]]
        for lab, plane in self._planes:  # ray o + s d meets the plane (p − q)·ν = 0 at s = (q − o)·ν / d·ν
            pose = plane.motion.pose(t)
            q = pose.apply(np.asarray(plane.point, dtype=np.float64)[None])[0]
            nu = pose.rotate(np.asarray(plane.normal, dtype=np.float64)[None])[0]
            with np.errstate(divide="ignore", invalid="ignore"):
                sp = (float((q - cam.position) @ nu) / (self._dirs @ nu.astype(np.float32))).astype(np.float32)
            # cloth lying on a plane (a table) is in front of it: the plane must be nearer by more than
            # PLANE_MARGIN to hide what the ray met (else the two fight pixel by pixel)
            nearer = (sp > 0) & (sp < depth - PLANE_MARGIN)
            depth[nearer], label[nearer] = sp[nearer], lab
            if nearer.any():
                normal = np.array(normal, copy=True)
                normal[nearer] = nu
        seen = np.flatnonzero(label > 0)
        depth[~(label > 0)] = 0.0
        depth[(depth < cam.near) | (depth > cam.far)] = 0.0
        cos = None
        use_noise = noise and self.noise is not None
        if rgb or use_noise:  # |cos| of the angle between ray and surface normal
            normal = normal[seen]
            c = np.abs(np.einsum("ij,ij->i", normal, self._unit[seen]))
            c /= np.maximum(np.sqrt(np.einsum("ij,ij->i", normal, normal)), 1e-30)
            cos = np.zeros(h * w, dtype=np.float32)
            cos[seen] = c
        depth = depth.reshape(h, w)
        if use_noise:
            depth = self.noise.apply(depth, cos.reshape(h, w), self.rng)
        image = np.zeros((h * w, 3), dtype=np.uint8)
        if rgb:
            colour = np.array([self._colours.get(int(k), _OBSTACLE_COLOUR) for k in range(int(label.max(initial=0)) + 1)])
            shade = np.full(h * w, 1.0, dtype=np.float32)
            shade[seen] = self.light * (0.25 + 0.75 * cos[seen])
            image = np.clip(255.0 * shade[:, None] * colour[label], 0, 255).astype(np.uint8)
        return SensorFrame(cam, depth, label.reshape(h, w), image.reshape(h, w, 3))
