"""Offscreen rendering of cloth frames and trajectories by ray casting (Intel Embree through
``embreex``), headless and without an OpenGL context.

:class:`FrameRenderer` casts the rays of a pinhole camera (:class:`~isocloth.sensors.PinholeCamera`:
an orbit around the view from ``elev``/``azim`` by default, or any camera pose) against the cloth's
faces and the obstacles (:mod:`isocloth.viz.obstacle_meshes`), so that surfaces hide each other
exactly whatever their sizes; faces are shaded with a two-sided Lambert model (the front side,
counter-clockwise seen from the camera, blue; the back orange; obstacles grey). A ground grid is
drawn on the floor z = 0 when it is in view or close below it, else at the bottom of the view.
:func:`render_video` renders a trajectory with one renderer (a fixed view).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from dataclasses import replace

import numpy as np

from isocloth.io.atomic import atomic_path
from isocloth.io.trajectory import Trajectory, require_frames
from isocloth.sensors.camera import PinholeCamera, look_at

__all__ = ["BACK_RGB", "FRONT_RGB", "OBSTACLE_RGB", "FrameRenderer", "orbit_camera", "render_frame", "render_png",
           "render_video", "scene_bounds", "trajectory_bounds", "video_frame_indices", "view_bounds"]

FRONT_RGB = (0.20, 0.45, 0.80)  # base colour (RGB in [0, 1]) of the counter-clockwise side
BACK_RGB = (0.90, 0.55, 0.20)  # base colour of the other side
OBSTACLE_RGB = (0.62, 0.62, 0.58)  # base colour of obstacles
_THIN_RGB = (0.25, 0.25, 0.25)
_AMBIENT = 0.35
_EDGE_RGBA = (0.05, 0.08, 0.15, 0.25)


def trajectory_bounds(positions: np.ndarray) -> np.ndarray:
    """Return the axis-aligned bounding box of node positions.

    Parameters
    ----------
    positions : (..., 3) float array
        Positions [m], e.g. one frame (n, 3) or a whole trajectory (F, n, 3).

    Returns
    -------
    (2, 3) float64
        ``[[xmin, ymin, zmin], [xmax, ymax, zmax]]`` [m], ignoring non-finite values.

    Raises
    ------
    ValueError
        If there is no finite position.
    """
    x = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    x = x[np.all(np.isfinite(x), axis=1)]
    if x.shape[0] == 0:
        raise ValueError("no finite position to bound")
    return np.stack([x.min(axis=0), x.max(axis=0)])


def scene_bounds(cloth: np.ndarray, obstacles: np.ndarray | None = None) -> np.ndarray:
    """The box (2, 3) float64 [m] a view shows: the cloth's box (2, 3) [m] joined with the part of
    the obstacles' box (2, 3) [m] (or None) within half the cloth's largest extent around it, and
    with the floor z = 0 when it lies at most that far below the cloth."""
    b = np.array(cloth, dtype=np.float64)
    reach = 0.5 * max(float((b[1] - b[0]).max()), 1e-3)
    if obstacles is not None:
        o = np.asarray(obstacles, dtype=np.float64)
        lo, hi = np.maximum(o[0], b[0] - reach), np.minimum(o[1], b[1] + reach)
        if np.all(lo <= hi):
            b = np.stack([np.minimum(b[0], lo), np.maximum(b[1], hi)])
    if b[0, 2] - reach <= 0.0 <= b[1, 2]:
        b[0, 2] = min(b[0, 2], 0.0)
    return b


def _padded_bounds(bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (low, high) corners with a margin and no degenerate (zero) extent."""
    b = np.asarray(bounds, dtype=np.float64)
    if b.shape != (2, 3) or not np.all(np.isfinite(b)) or np.any(b[1] < b[0]):
        raise ValueError(f"bounds must be finite [[xmin,ymin,zmin],[xmax,ymax,zmax]]; got {b}")
    extent = b[1] - b[0]
    largest = max(float(extent.max()), 1e-3)
    extent = np.maximum(extent, 0.05 * largest) + 0.04 * largest
    centre = 0.5 * (b[0] + b[1])
    return centre - 0.5 * extent, centre + 0.5 * extent


def _grid_step(span: float) -> float:
    """Return a 1/2/5 x 10^k spacing [m] giving roughly 4 to 10 grid lines over ``span``."""
    raw = span / 6.0
    power = 10.0 ** np.floor(np.log10(raw))
    return float(next(m * power for m in (1.0, 2.0, 5.0, 10.0) if m * power >= raw))


def orbit_camera(bounds: np.ndarray, elev: float, azim: float, size: tuple[int, int],
                 fov_deg: float = 30.0) -> PinholeCamera:
    """A camera looking at the centre of ``bounds`` (2, 3) [m] from elevation ``elev`` and azimuth
    ``azim`` [degrees] (matplotlib's convention: azimuth about z from the x axis), with the focal
    length that fits the whole box in the image of ``size`` (width, height) [px]; z is up in the
    image (for a view from straight above or below, −x is)."""
    low, high = _padded_bounds(bounds)
    e, a = np.deg2rad(elev), np.deg2rad(azim)
    towards = np.array([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)])
    centre = 0.5 * (low + high)
    radius = 0.5 * float(np.linalg.norm(high - low))
    up = (0.0, 0.0, 1.0) if abs(np.sin(e)) < 0.999 else (-np.cos(a), -np.sin(a), 0.0)
    eye = centre + towards * radius / np.sin(np.deg2rad(0.5 * fov_deg))
    width, height = (int(v) for v in size)
    probe = PinholeCamera(width, height, 1.0, 1.0, 0.5 * width, 0.5 * height, pose=look_at(eye, centre, up))
    corners = np.array([[x, y, z] for x in (low[0], high[0]) for y in (low[1], high[1]) for z in (low[2], high[2])])
    c = probe.to_camera(corners)
    f = min(0.5 * width / float(np.abs(c[:, 0] / c[:, 2]).max()), 0.5 * height / float(np.abs(c[:, 1] / c[:, 2]).max()))
    return PinholeCamera(width, height, f, f, 0.5 * width, 0.5 * height, pose=probe.pose, near=0.0,
                         far=1e3 * max(radius, 1e-3))


def _split_faces(triangles: np.ndarray | None, quads: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Triangles (k, 3) int64 of the faces (quad (a, b, c, d) → (a, b, c), (a, c, d)) and the face
    (k,) int64 each belongs to (its two halves share a quad's number)."""
    tri = np.zeros((0, 3), np.int64) if triangles is None else np.asarray(triangles, np.int64).reshape(-1, 3)
    quad = np.zeros((0, 4), np.int64) if quads is None else np.asarray(quads, np.int64).reshape(-1, 4)
    halves = np.stack([quad[:, [0, 1, 2]], quad[:, [0, 2, 3]]], axis=1).reshape(-1, 3)
    faces = np.concatenate([np.arange(tri.shape[0]), tri.shape[0] + np.repeat(np.arange(quad.shape[0]), 2)])
    return np.concatenate([tri, halves]), faces


def _ray_hits(triangles: np.ndarray, origins: np.ndarray, directions: np.ndarray):
    """(triangle index (r,) int64, −1 for none; distance along the direction (r,) float64, inf for none;
    barycentric coordinates (u, v) (r, 2) of the hit) of the first triangle (k, 3, 3) [m] each ray
    (origins, unit directions (r, 3) float32) meets (Intel Embree through embreex)."""
    r = directions.shape[0]
    if triangles.shape[0] == 0 or r == 0:
        return np.full(r, -1, dtype=np.int64), np.full(r, np.inf), np.zeros((r, 2))
    from embreex import rtcore_scene
    from embreex.mesh_construction import TriangleMesh

    scene = rtcore_scene.EmbreeScene()
    TriangleMesh(scene, np.ascontiguousarray(triangles, dtype=np.float32))
    hit = scene.run(np.ascontiguousarray(origins), np.ascontiguousarray(directions), output=1)
    prim = np.where(np.asarray(hit["geomID"]) >= 0, np.asarray(hit["primID"]), -1).astype(np.int64)
    depth = np.where(prim >= 0, np.asarray(hit["tfar"], dtype=np.float64), np.inf)
    return prim, depth, np.stack([np.asarray(hit["u"]), np.asarray(hit["v"])], axis=1)


def _unit_normals(tris: np.ndarray) -> np.ndarray:
    """Unit normals (k, 3) of triangles (k, 3, 3), counter-clockwise side (0 for degenerate ones)."""
    n = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    length = np.linalg.norm(n, axis=1, keepdims=True)
    return np.divide(n, length, out=np.zeros_like(n), where=length > 0)


def _boundaries(ids: np.ndarray) -> np.ndarray:
    """Pixels (h, w) bool where the label image ``ids`` (h, w) differs from the pixel to the right or below."""
    out = np.zeros(ids.shape, dtype=bool)
    out[:, :-1] |= ids[:, :-1] != ids[:, 1:]
    out[:-1, :] |= ids[:-1, :] != ids[1:, :]
    return out


class FrameRenderer:
    """A reusable offscreen renderer of cloth frames of one mesh, by ray casting.

    Every pixel casts rays through a pinhole camera (``SUPERSAMPLE``² per pixel, averaged) against
    the cloth's faces and the obstacles' surfaces (Intel Embree through ``embreex``), so surfaces
    hide each other exactly. Faces are shaded with a two-sided Lambert model: the front side
    (counter-clockwise seen from the camera) blue, the back orange, obstacles grey; the cloth's
    face edges are drawn faintly. A ground grid lies on the floor z = 0 when the view reaches it,
    else at the bottom of the view. Thin obstacles (needles, sticks, polylines) and highlighted
    nodes are drawn over the image; the time, a title, the grid spacing and a legend of the two
    sides are written on it (Pillow).

    Parameters
    ----------
    triangles : (t, 3) int array or None
        Triangle node indices.
    quads : (q, 4) int array or None
        Quadrilateral node indices.
    bounds : (2, 3) float array
        Box [m] that the fixed view must cover (see :func:`trajectory_bounds`).
    size : (int, int), default (640, 480)
        Image width and height [pixels] (ignored with ``camera``: the camera's).
    elev, azim : float, default 20, -60
        Camera elevation and azimuth [degrees] of :func:`orbit_camera` (ignored with ``camera``).
    camera : PinholeCamera or None
        The camera (pose and intrinsics, ``isocloth.sensors.PinholeCamera``), instead of the orbit.
    highlight_nodes : int array or None
        Nodes drawn as red dots on top of the cloth (e.g. grasped nodes).
    ground : bool, default True
        Draw the ground grid (its spacing is written bottom right).
    obstacles : sequence of obstacles (``model.obstacles + model.thin_obstacles``) or None
        Drawn at the time of each frame (:class:`~isocloth.viz.obstacle_meshes.ObstacleGeometry`;
        planes over the view). Pass bounds that include them (:func:`scene_bounds`).

    Raises
    ------
    ValueError
        On malformed bounds, a non-positive size, negative node indices or a camera that is not
        a PinholeCamera.
    """

    SUPERSAMPLE = 3
    """Rays per pixel along each axis where the pixel borders another surface (anti-aliasing)."""

    def __init__(
        self,
        triangles: np.ndarray | None,
        quads: np.ndarray | None,
        bounds: np.ndarray,
        *,
        size: tuple[int, int] = (640, 480),
        elev: float = 20.0,
        azim: float = -60.0,
        camera: PinholeCamera | None = None,
        highlight_nodes: Sequence[int] | np.ndarray | None = None,
        ground: bool = True,
        obstacles: Sequence | None = None,
    ) -> None:
        width, height = (int(s) for s in size)
        if width < 1 or height < 1:
            raise ValueError(f"size must be positive (width, height); got {size}")
        low, high = _padded_bounds(bounds)
        if camera is None:
            camera = orbit_camera(bounds, elev, azim, (width, height))
        elif not isinstance(camera, PinholeCamera):
            raise ValueError(f"camera must be an isocloth.sensors.PinholeCamera, got {type(camera).__name__}")
        self.camera = camera
        self.size = (camera.width, camera.height)
        self._tris, self._face_of = _split_faces(triangles, quads)
        self._highlight = np.asarray([] if highlight_nodes is None else highlight_nodes, dtype=np.int64).reshape(-1)
        used = np.concatenate([self._tris.ravel(), self._highlight])
        if used.size and used.min() < 0:
            raise ValueError("negative node index in faces or highlight_nodes")
        self._node_bound = int(used.max()) + 1 if used.size else 0  # positions need >= this
        self._rotation = camera.pose[:3, :3]
        self._eye = camera.position.astype(np.float32)
        right = camera.pose[:3, 0]
        light = -0.5 * camera.pose[:3, 2] + np.array([0.0, 0.0, 1.0]) - 0.7 * right
        self._light = light / np.linalg.norm(light)
        self._ground = None
        self._grid_text = ""
        if ground:
            step = _grid_step(float(max(high[0] - low[0], high[1] - low[1])))
            self._ground = (0.0 if low[2] <= 0.0 <= high[2] else low[2], step, low[:2], high[:2])
            self._grid_text = f"grid {step:g} m"
        self._obstacles = None
        if obstacles:
            from isocloth.viz.obstacle_meshes import ObstacleGeometry

            self._obstacles = ObstacleGeometry(obstacles, np.stack([low, high]))
        self._view = float(np.linalg.norm(high - low))
        self._static_hits = None  # obstacle hits of the pixel centres, kept when no obstacle moves
        self._font = _font(max(10, camera.height // 40))

    def _rays(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Unit world directions (r, 3) float32 through image points (u, v) [px]."""
        cam = self.camera
        d = np.stack([(u - cam.cx) / cam.fx, (v - cam.cy) / cam.fy, np.ones_like(u)], axis=1) @ self._rotation.T
        return (d / np.linalg.norm(d, axis=1, keepdims=True)).astype(np.float32)

    def _trace(self, dirs: np.ndarray, cloth: np.ndarray, normals: np.ndarray, obstacle: np.ndarray,
               margin: float, obstacle_hits=None, ground: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """RGB (r, 3) float64 and surface id (r,) int64 (face of the cloth, −2 obstacle, −1 nothing) seen
        along the directions ``dirs`` (r, 3): the cloth's triangles ``cloth`` (k, 3, 3) with vertex
        normals ``normals`` (k, 3, 3) (smooth two-sided Lambert shading), the obstacles' triangles
        ``obstacle`` (o, 3, 3), which hide the cloth only when nearer by more than ``margin`` [m]
        (``obstacle_hits``: their (triangle, distance) along ``dirs`` if already known). ``ground``: draw the
        ground grid (``dirs`` are then the pixel centres, row by row)."""
        origins = np.broadcast_to(self._eye, dirs.shape)
        face_normals, obstacle_normals = _unit_normals(cloth), _unit_normals(obstacle)
        prim, depth, uv = _ray_hits(cloth, origins, dirs)
        oprim, odepth = obstacle_hits if obstacle_hits is not None else _ray_hits(obstacle, origins, dirs)[:2]
        solid = (oprim >= 0) & (odepth < depth - margin)
        prim[solid] = -1
        depth = np.where(solid, odepth, depth)
        rgb = np.ones((dirs.shape[0], 3))
        ident = np.where(solid, -2, -1).astype(np.int64)
        hit = np.flatnonzero(prim >= 0)
        if hit.size:
            k = prim[hit]
            w = np.column_stack([1.0 - uv[hit].sum(axis=1), uv[hit]])
            n = np.einsum("rc,rcj->rj", w, normals[k])
            n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-30)
            facing = np.einsum("ij,ij->i", face_normals[k], dirs[hit]) < 0.0
            intensity = _AMBIENT + (1.0 - _AMBIENT) * np.abs(n @ self._light)
            rgb[hit] = np.where(facing[:, None], FRONT_RGB, BACK_RGB) * intensity[:, None]
            ident[hit] = self._face_of[k]
        hit = np.flatnonzero(solid)
        if hit.size:
            n = obstacle_normals[oprim[hit]]
            rgb[hit] = np.asarray(OBSTACLE_RGB) * (_AMBIENT + (1.0 - _AMBIENT) * np.abs(n @ self._light))[:, None]
        if self._ground is not None and ground:  # over the background and a floor plane at the ground's height
            self._draw_ground(rgb, dirs, np.where(prim >= 0, -np.inf, depth + 1e-4 * self._view))
        return rgb, ident

    def render(self, positions: np.ndarray, *, time: float | None = None, title: str | None = None) -> np.ndarray:
        """Return the image of the cloth at ``positions``.

        Parameters
        ----------
        positions : (n, 3) float array
            Node positions [m].
        time, title : float or None, str or None
            Time [s] shown as ``t = 1.23 s`` top left (obstacles drawn at that time, else at 0);
            title shown centred at the top.

        Returns
        -------
        (H, W, 3) uint8
            RGB image, (W, H) being ``size``.

        Raises
        ------
        ValueError
            If ``positions`` is not (n, 3), has fewer nodes than the faces refer to or is not finite.
        """
        x = np.asarray(positions, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != 3 or x.shape[0] < self._node_bound or not np.isfinite(x).all():
            raise ValueError(f"positions must be finite with shape (n >= {self._node_bound}, 3); got {x.shape}")
        t = 0.0 if time is None else float(time)
        cloth = x[self._tris]
        face_n = np.cross(cloth[:, 1] - cloth[:, 0], cloth[:, 2] - cloth[:, 0])  # area-weighted
        node_n = np.zeros((max(x.shape[0], 1), 3))
        for c in range(3):
            np.add.at(node_n, self._tris[:, c], face_n)
        # a node's normal takes the side of each face it shades (two-sided: the sign follows the face)
        normals = node_n[self._tris] * np.sign(np.einsum("kcj,kj->kc", node_n[self._tris], face_n))[..., None]
        obstacle = self._obstacles.triangles(t) if self._obstacles is not None else np.zeros((0, 3, 3))
        # flat faces cut through the curved obstacles they rest on by up to their sag: an obstacle hides
        # the cloth only when nearer by more than a quarter of the typical edge (or 0.2 % of the view)
        edge = np.linalg.norm(cloth[:, 1] - cloth[:, 0], axis=1)
        margin = max(2e-3 * self._view, 0.25 * float(np.median(edge)) if edge.size else 0.0)
        w, h = self.size
        v, u = np.divmod(np.arange(w * h, dtype=np.float64), w)
        dirs = self._rays(u + 0.5, v + 0.5)
        hits = self._static_hits
        if hits is None:
            hits = _ray_hits(obstacle, np.broadcast_to(self._eye, dirs.shape), dirs)[:2]
            if self._obstacles is None or self._obstacles.static:
                self._static_hits = hits  # the camera is fixed: the same for every frame
        rgb, ident = self._trace(dirs, cloth, normals, obstacle, margin, hits)
        rgb, ident = rgb.reshape(h, w, 3), ident.reshape(h, w)
        # anti-aliasing: pixels next to another surface (cloth, obstacle, nothing) are averaged over
        # SUPERSAMPLE² rays
        border = _boundaries(np.minimum(ident, 0))
        border[:, 1:] |= border[:, :-1]
        border[1:, :] |= border[:-1, :]
        py, px = np.nonzero(border)
        s = self.SUPERSAMPLE
        if py.size and s > 1:
            off = (np.arange(s) + 0.5) / s
            ou, ov = (a.ravel() for a in np.meshgrid(off, off))
            sub, _ = self._trace(self._rays((px[:, None] + ou).ravel(), (py[:, None] + ov).ravel()), cloth, normals,
                                 obstacle, margin, ground=False)
            if self._ground is not None:  # the grid's lines are one pixel wide: kept where the centre has one
                keep = np.all(rgb[py, px] == 0.75, axis=1)
                sub = sub.reshape(py.size, s * s, 3)
                sub[keep] = 0.75
                sub = sub.reshape(-1, 3)
            rgb[py, px] = sub.reshape(py.size, s * s, 3).mean(axis=1)
        # the cloth's face edges, faintly
        edges = _boundaries(ident) & ((ident >= 0) | np.pad(ident[:, 1:] >= 0, ((0, 0), (0, 1)))
                                      | np.pad(ident[1:, :] >= 0, ((0, 1), (0, 0))))
        a = _EDGE_RGBA[3]
        rgb[edges] = (1.0 - a) * rgb[edges] + a * np.asarray(_EDGE_RGBA[:3])
        image = np.clip(np.rint(255.0 * rgb), 0, 255).astype(np.uint8)
        return self._overlay(image, x, t, time, title)

    def _draw_ground(self, rgb: np.ndarray, dirs: np.ndarray, depth: np.ndarray) -> None:
        """Grid lines, in place in ``rgb`` (r, 3), where the rays ``dirs`` (r, 3) meet the ground within
        the view before ``depth`` (r,) [m]: a line where a ray and its neighbour in the ray order (the
        next pixel or sub-pixel) fall in different grid cells."""
        z, step, lo, hi = self._ground
        o = self._eye.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            s = (z - o[2]) / dirs[:, 2]
        p = o[None, :2] + s[:, None] * dirs[:, :2]
        inside = (s > 0) & np.all((p >= lo) & (p <= hi), axis=1)  # the grid's rectangle, hidden or not
        w, h = self.size
        cell = np.floor(np.where(inside[:, None], p, 0.0) / step).reshape(h, w, 2)
        inside = inside.reshape(h, w)
        line = np.zeros((h, w), dtype=bool)
        # a line where the next pixel in the row or the column lies in another cell of the grid or outside it
        line[:, :-1] |= (inside[:, :-1] & inside[:, 1:] & np.any(cell[:, :-1] != cell[:, 1:], axis=2)) \
            | (inside[:, :-1] != inside[:, 1:])
        line[:-1, :] |= (inside[:-1, :] & inside[1:, :] & np.any(cell[:-1, :] != cell[1:, :], axis=2)) \
            | (inside[:-1, :] != inside[1:, :])
        visible = inside.ravel() & (s < depth)
        rgb[line.ravel() & visible] = 0.75

    def _overlay(self, image: np.ndarray, x: np.ndarray, t: float, time: float | None, title: str | None) -> np.ndarray:
        """Thin obstacles, highlighted nodes and the texts, drawn over the image (Pillow)."""
        from PIL import Image, ImageDraw

        canvas = Image.fromarray(image)
        draw = ImageDraw.Draw(canvas)
        cam = self.camera
        if self._obstacles is not None:
            segs, pts = self._obstacles.segments(t)
            thin = tuple(int(255 * c) for c in _THIN_RGB)
            for a, b in cam.project(segs.reshape(-1, 3)).reshape(-1, 2, 2):
                if np.isfinite(a).all() and np.isfinite(b).all():
                    draw.line([tuple(a), tuple(b)], fill=thin, width=2)
            for u, v in cam.project(pts):
                if np.isfinite(u) and np.isfinite(v):
                    draw.ellipse([u - 2, v - 2, u + 2, v + 2], fill=thin)
        for u, v in cam.project(x[self._highlight]):
            if np.isfinite(u) and np.isfinite(v):
                draw.ellipse([u - 4, v - 4, u + 4, v + 4], fill=(255, 0, 0), outline=(139, 0, 0))
        width, height = self.size
        pad = max(4, height // 60)
        if time is not None:
            draw.text((pad, pad), f"t = {time:.2f} s", fill=(0, 0, 0), font=self._font)
        if title:
            draw.text((width / 2, pad), title, fill=(0, 0, 0), font=self._font, anchor="ma")
        small = self._font
        if self._grid_text:
            draw.text((width - pad, height - pad), self._grid_text, fill=(102, 102, 102), font=small, anchor="rd")
        front = tuple(int(255 * c) for c in FRONT_RGB)
        back = tuple(int(255 * c) for c in BACK_RGB)
        draw.text((pad, height - pad), "front", fill=front, font=small, anchor="ld")
        draw.text((pad + draw.textlength("front ", font=small), height - pad), "back", fill=back, font=small,
                  anchor="ld")
        return np.asarray(canvas)


def _font(size: int):
    """Pillow's default font at ``size`` px (its bitmap font where FreeType is missing)."""
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except (TypeError, OSError):  # Pillow < 10.1 or no FreeType
        return ImageFont.load_default()


def render_frame(
    positions: np.ndarray,
    triangles: np.ndarray | None,
    quads: np.ndarray | None,
    *,
    bounds: np.ndarray | None = None,
    title: str | None = None,
    time: float | None = None,
    size: tuple[int, int] = (640, 480),
    elev: float = 20.0,
    azim: float = -60.0,
    highlight_nodes: Sequence[int] | np.ndarray | None = None,
    obstacles: Sequence | None = None,
    camera: PinholeCamera | None = None,
) -> np.ndarray:
    """Return an offscreen rendering of one cloth configuration.

    Parameters
    ----------
    positions : (n, 3) float array
        Node positions [m].
    triangles, quads : (t, 3), (q, 4) int arrays or None
        Faces (0-based node indices).
    bounds : (2, 3) float array or None
        Box [m] the view covers; default: :func:`scene_bounds` of ``positions`` and the obstacles.
    title, time : str or None, float or None
        Text centred at the top; time [s] shown as ``t = 1.23 s`` (obstacles drawn at that time,
        else at 0).
    size, elev, azim, highlight_nodes, obstacles, camera
        As for :class:`FrameRenderer` (image (width, height) [pixels], camera angles
        [degrees], nodes drawn as red dots, obstacles drawn, a camera instead of the orbit).

    Returns
    -------
    (H, W, 3) uint8
        RGB image.

    Raises
    ------
    ValueError
        On malformed positions, bounds or indices.
    """
    if bounds is None:
        bounds = view_bounds(trajectory_bounds(positions), obstacles, 0.0 if time is None else time)
    renderer = FrameRenderer(triangles, quads, bounds, size=size, elev=elev, azim=azim, camera=camera,
                             highlight_nodes=highlight_nodes, obstacles=obstacles)
    return renderer.render(positions, time=time, title=title)


def view_bounds(cloth: np.ndarray, obstacles: Sequence | None, t: float) -> np.ndarray:
    """:func:`scene_bounds` (2, 3) float64 [m] of the cloth's box ``cloth`` (2, 3) float64 [m] and of the
    ``obstacles`` at time t [s]: the box a video frames."""
    box = None
    if obstacles:
        from isocloth.viz.obstacle_meshes import ObstacleGeometry

        box = ObstacleGeometry(obstacles, cloth).bounds(t)
    return scene_bounds(cloth, box)


def render_png(
    positions: np.ndarray,
    triangles: np.ndarray | None,
    quads: np.ndarray | None,
    path: str | os.PathLike,
    **kw,
) -> Path:
    """Render one frame to a PNG file and return its path.

    ``positions`` (n, 3) float [m], ``triangles``, ``quads`` and the keywords ``kw`` are
    those of :func:`render_frame`. The file is written atomically; parent folders are
    created. Raises ValueError as :func:`render_frame`, OSError on file system errors.
    """
    from PIL import Image

    image = render_frame(positions, triangles, quads, **kw)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        Image.fromarray(image).save(tmp, format="PNG")
    return out


def video_frame_indices(
    times: np.ndarray, fps: float, max_frames: int | None = None
) -> np.ndarray:
    """Return the trajectory frame shown at each video frame.

    Video frame k shows time ``times[0] + k / fps`` for every such time up to
    ``times[-1]``; the trajectory frame nearest to it (the earlier one on ties) is used.

    Parameters
    ----------
    times : (F,) float array
        Non-decreasing frame times [s], F >= 1.
    fps : float
        Video frame rate [1/s], > 0.
    max_frames : int or None
        Keep only the first ``max_frames`` video frames.

    Returns
    -------
    (K,) int64
        Indices into ``times``.

    Raises
    ------
    ValueError
        If ``times`` is empty or ``fps`` / ``max_frames`` is not positive.
    """
    t = np.asarray(times, dtype=np.float64).reshape(-1)
    if t.size == 0:
        raise ValueError("the trajectory has no frame")
    if not fps > 0:
        raise ValueError(f"fps must be positive, got {fps}")
    count = int(np.floor((t[-1] - t[0]) * fps + 1e-9)) + 1
    if max_frames is not None:
        if int(max_frames) < 1:
            raise ValueError(f"max_frames must be >= 1, got {max_frames}")
        count = min(count, int(max_frames))
    video_t = t[0] + np.arange(count) / fps
    right = np.clip(np.searchsorted(t, video_t), 0, t.size - 1)
    left = np.clip(right - 1, 0, t.size - 1)
    use_left = np.abs(video_t - t[left]) <= np.abs(t[right] - video_t)
    return np.where(use_left, left, right).astype(np.int64)


def _write_mp4(path: Path, frames, fps: float) -> None:
    """Write RGB frames to an H.264 MP4 (yuv420p) with imageio's ffmpeg plugin."""
    import imageio.v2 as imageio
    import imageio_ffmpeg

    imageio_ffmpeg.get_ffmpeg_exe()  # raises RuntimeError when no ffmpeg is usable
    writer = imageio.get_writer(path, format="FFMPEG", mode="I", fps=fps, codec="libx264",
                                pixelformat="yuv420p", macro_block_size=2,
                                ffmpeg_log_level="error")
    try:
        for frame in frames:
            writer.append_data(frame)
    finally:
        writer.close()


def _write_gif(path: Path, frames, fps: float) -> None:
    """Write RGB frames to a looping GIF with Pillow (identical consecutive frames merge)."""
    from PIL import Image

    images = [Image.fromarray(frame).quantize(colors=256) for frame in frames]
    if not images:
        raise ValueError("no frame to write")
    images[0].save(path, format="GIF", save_all=True, append_images=images[1:],
                   duration=max(int(round(1000.0 / fps)), 20), loop=0)


def render_video(
    traj: Trajectory,
    path: str | os.PathLike,
    *,
    fps: float = 25,
    size: tuple[int, int] = (640, 480),
    highlight_nodes: Sequence[int] | np.ndarray | None = None,
    max_frames: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    elev: float = 20.0,
    azim: float = -60.0,
    obstacles: Sequence | None = None,
    camera: PinholeCamera | None = None,
) -> Path:
    """Render a trajectory to an MP4 or GIF video, picked by the suffix of ``path``.

    Frames are chosen with :func:`video_frame_indices`; the view is fixed and covers the
    whole trajectory. MP4 uses H.264 with yuv420p pixels (the size is rounded up to even
    numbers); if ffmpeg is not usable, a GIF is written next to ``path`` instead. The file is
    written atomically and parent folders are created.

    Parameters
    ----------
    traj : Trajectory
        The trajectory to show.
    path : str or os.PathLike
        Output file ending in ``.mp4`` or ``.gif``.
    fps : float, default 25
        Video frame rate [1/s].
    max_frames : int or None
        Write at most this many video frames (the start of the motion).
    progress : callable(i, total) or None
        Called after each rendered frame with i = 1 ... total.
    size, highlight_nodes, elev, azim, obstacles, camera
        As for :class:`FrameRenderer`; the orbit camera's view covers :func:`scene_bounds` of the
        trajectory and of the obstacles at its first time (with ``camera``, the video has its size).

    Returns
    -------
    pathlib.Path
        The written file: ``path``, or the same name with ``.gif`` after an MP4 fallback.

    Raises
    ------
    ValueError
        On an unsupported suffix, an empty trajectory or one with a non-finite position (in any
        frame, also one the video skips: :func:`~isocloth.io.trajectory.require_frames`), or a bad
        ``fps``/``max_frames``.
    OSError
        On file system errors.
    """
    out = Path(path)
    suffix = out.suffix.lower()
    if suffix not in (".mp4", ".gif"):
        raise ValueError(f"unsupported video suffix {out.suffix!r}; allowed: .mp4, .gif")
    require_frames(traj)
    indices = video_frame_indices(traj.times, fps, max_frames)
    width, height = (int(s) for s in size) if camera is None else (camera.width, camera.height)
    if suffix == ".mp4":
        width, height = width + width % 2, height + height % 2
        if camera is not None:
            camera = replace(camera, width=width, height=height)
    bounds = view_bounds(trajectory_bounds(traj.positions), obstacles, float(traj.times[0]) if len(traj.times) else 0.0)
    renderer = FrameRenderer(traj.triangles, traj.quads, bounds, size=(width, height), elev=elev, azim=azim,
                             camera=camera, highlight_nodes=highlight_nodes, obstacles=obstacles)

    def frames():
        for k, i in enumerate(indices):
            yield renderer.render(traj.positions[i], time=float(traj.times[i]))
            if progress is not None:
                progress(k + 1, len(indices))

    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".mp4":
        try:
            with atomic_path(out) as tmp:
                _write_mp4(tmp, frames(), fps)
            return out
        except (OSError, RuntimeError, ImportError):
            out = out.with_suffix(".gif")
    with atomic_path(out) as tmp:
        _write_gif(tmp, frames(), fps)
    return out
