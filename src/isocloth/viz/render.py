"""Offscreen rendering of cloth frames and trajectories with matplotlib (no pyplot).

Figures are built with :class:`matplotlib.figure.Figure` and drawn by the Agg canvas, so
rendering works headless and touches no global pyplot state. The cloth is one
:class:`~mpl_toolkits.mplot3d.art3d.Poly3DCollection` (triangles are padded to degenerate
quads so that all faces share one array), shaded per face with a two-sided Lambert model:
the front side (faces counter-clockwise seen from the camera) is blue, the back orange.
Obstacles (:mod:`isocloth.viz.obstacle_meshes`) are grey faces of the same collection, so that
matplotlib's painter's sort orders them against the cloth; thin obstacles are dark lines and dots.
The camera and axis limits are fixed (equal aspect, z up); a ground grid is drawn at the floor
z = 0 when it is in view or close below it, else at the bottom of the view. :class:`FrameRenderer`
keeps one figure and only updates the polygon vertices and colours per frame; :func:`render_video`
uses it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from mpl_toolkits.mplot3d.art3d import Line3DCollection, Poly3DCollection

from isocloth.io.atomic import atomic_path
from isocloth.io.trajectory import Trajectory

__all__ = ["BACK_RGB", "FRONT_RGB", "OBSTACLE_RGB", "FrameRenderer", "render_frame", "render_png",
           "render_video", "scene_bounds", "trajectory_bounds", "video_frame_indices"]

FRONT_RGB = (0.20, 0.45, 0.80)  # base colour (RGB in [0, 1]) of the counter-clockwise side
BACK_RGB = (0.90, 0.55, 0.20)  # base colour of the other side
OBSTACLE_RGB = (0.62, 0.62, 0.58)  # base colour of obstacles
_THIN_RGB = (0.25, 0.25, 0.25)
_AMBIENT = 0.35
_EDGE_RGBA = (0.05, 0.08, 0.15, 0.25)
_DPI = 100


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


def _padded_faces(triangles: np.ndarray | None, quads: np.ndarray | None) -> np.ndarray:
    tri = np.zeros((0, 3), np.int64) if triangles is None else np.asarray(triangles, np.int64)
    quad = np.zeros((0, 4), np.int64) if quads is None else np.asarray(quads, np.int64)
    tri, quad = tri.reshape(-1, 3), quad.reshape(-1, 4)
    return np.concatenate([np.concatenate([tri, tri[:, 2:]], axis=1), quad])


def _camera_vectors(elev: float, azim: float) -> tuple[np.ndarray, np.ndarray]:
    """Return unit vectors towards the camera and towards the light (world frame)."""
    e, a = np.deg2rad(elev), np.deg2rad(azim)
    eye = np.array([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)])
    right = np.array([-np.sin(a), np.cos(a), 0.0])
    light = 0.5 * eye + np.array([0.0, 0.0, 1.0]) - 0.7 * right
    return eye, light / np.linalg.norm(light)


def _face_rgba(corners: np.ndarray, eye: np.ndarray, light: np.ndarray, obstacle: bool = False) -> np.ndarray:
    """Return (m, 4) two-sided Lambert face colours for (m, 4, 3) quad corners (obstacle: grey)."""
    normal = np.cross(corners[:, 2] - corners[:, 0], corners[:, 3] - corners[:, 1])
    length = np.linalg.norm(normal, axis=1, keepdims=True)
    normal = np.divide(normal, length, out=np.zeros_like(normal), where=length > 0)
    intensity = _AMBIENT + (1.0 - _AMBIENT) * np.abs(normal @ light)
    front = (normal @ eye) >= 0.0
    rgba = np.ones((corners.shape[0], 4))
    if obstacle:
        rgba[:, :3] = np.asarray(OBSTACLE_RGB) * intensity[:, None]
    else:
        rgba[:, :3] = np.where(front[:, None], FRONT_RGB, BACK_RGB) * intensity[:, None]
    return rgba


class FrameRenderer:
    """A reusable offscreen figure that renders cloth frames of one mesh.

    Parameters
    ----------
    triangles : (t, 3) int array or None
        Triangle node indices.
    quads : (q, 4) int array or None
        Quadrilateral node indices.
    bounds : (2, 3) float array
        Box [m] that the fixed view must cover (see :func:`trajectory_bounds`).
    size : (int, int), default (640, 480)
        Image width and height [pixels].
    elev, azim : float, default 20, -60
        Camera elevation and azimuth [degrees].
    highlight_nodes : int array or None
        Nodes drawn as red dots on top of the cloth (e.g. grasped nodes).
    extra_draw : callable(ax) or None
        Called once with the 3D axes to add static artists. The cloth and the obstacles have
        zorder 2 and the ground grid 1; artists are drawn in zorder (no depth sorting).
    ground : bool, default True
        Draw a ground grid (its spacing is printed) at z = 0 when the view reaches it, else at
        the bottom of the view.
    obstacles : sequence of obstacles (``model.obstacles + model.thin_obstacles``) or None
        Drawn at the time of each frame (:class:`~isocloth.viz.obstacle_meshes.ObstacleGeometry`;
        planes over the view). Pass bounds that include them (:func:`scene_bounds`).

    Raises
    ------
    ValueError
        On malformed bounds or a non-positive size.
    """

    def __init__(
        self,
        triangles: np.ndarray | None,
        quads: np.ndarray | None,
        bounds: np.ndarray,
        *,
        size: tuple[int, int] = (640, 480),
        elev: float = 20.0,
        azim: float = -60.0,
        highlight_nodes: Sequence[int] | np.ndarray | None = None,
        extra_draw: Callable | None = None,
        ground: bool = True,
        obstacles: Sequence | None = None,
    ) -> None:
        width, height = (int(s) for s in size)
        if width < 1 or height < 1:
            raise ValueError(f"size must be positive (width, height); got {size}")
        self.size = (width, height)
        self._faces = _padded_faces(triangles, quads)
        self._eye, self._light = _camera_vectors(elev, azim)
        self._highlight = np.asarray(
            [] if highlight_nodes is None else highlight_nodes, dtype=np.int64).reshape(-1)
        used = np.concatenate([self._faces.ravel(), self._highlight])
        if used.size and used.min() < 0:
            raise ValueError("negative node index in faces or highlight_nodes")
        self._node_bound = int(used.max()) + 1 if used.size else 0  # positions need >= this
        low, high = _padded_bounds(bounds)

        self.figure = Figure(figsize=(width / _DPI, height / _DPI), dpi=_DPI, facecolor="white")
        self.canvas = FigureCanvasAgg(self.figure)
        ax = self.figure.add_axes((0.0, 0.0, 1.0, 1.0), projection="3d", computed_zorder=False)
        ax.set_axis_off()
        ax.set_xlim(low[0], high[0])
        ax.set_ylim(low[1], high[1])
        ax.set_zlim(low[2], high[2])
        ax.set_box_aspect(high - low, zoom=1.0)
        ax.view_init(elev=elev, azim=azim)
        self.axes = ax

        self._grid_text = ""
        if ground:
            self._add_ground(low, high)
        self._poly = Poly3DCollection(
            np.zeros((0, 4, 3)), edgecolors=_EDGE_RGBA, linewidths=0.3, zorder=2
        )
        ax.add_collection3d(self._poly)
        self._obstacles = None
        self._thin = None
        if obstacles:
            from isocloth.viz.obstacle_meshes import ObstacleGeometry

            self._obstacles = ObstacleGeometry(obstacles, np.stack([low, high]))
            self._thin = Line3DCollection(np.zeros((0, 2, 3)), colors=[_THIN_RGB], linewidths=1.2, zorder=3)
            ax.add_collection3d(self._thin, autolim=False)
            self._thin_dots = ax.plot([], [], [], linestyle="none", marker="o", markersize=2,
                                      color=_THIN_RGB, zorder=3)[0]
        self._dots = ax.plot([], [], [], linestyle="none", marker="o", markersize=5,
                             color="red", markeredgecolor="darkred", zorder=10)[0]
        if extra_draw is not None:
            extra_draw(ax)
        self._time_text = self.figure.text(0.02, 0.97, "", ha="left", va="top",
                                           fontsize=11, family="monospace")
        self._title_text = self.figure.text(0.5, 0.97, "", ha="center", va="top", fontsize=11)
        self.figure.text(0.98, 0.02, self._grid_text, ha="right", va="bottom",
                         fontsize=8, color="0.4")
        # legend of the two sides (counter-clockwise faces seen from the camera are the front)
        self.figure.text(0.02, 0.02, "front", ha="left", va="bottom", fontsize=8, color=FRONT_RGB)
        self.figure.text(0.08, 0.02, "back", ha="left", va="bottom", fontsize=8, color=BACK_RGB)

    def _add_ground(self, low: np.ndarray, high: np.ndarray) -> None:
        step = _grid_step(float(max(high[0] - low[0], high[1] - low[1])))
        xs = np.arange(np.ceil(low[0] / step), np.floor(high[0] / step) + 1) * step
        ys = np.arange(np.ceil(low[1] / step), np.floor(high[1] / step) + 1) * step
        z = 0.0 if low[2] <= 0.0 <= high[2] else low[2]  # the floor, when in view
        segs = [((x, low[1], z), (x, high[1], z)) for x in xs]
        segs += [((low[0], y, z), (high[0], y, z)) for y in ys]
        box = [(low[0], low[1]), (high[0], low[1]), (high[0], high[1]), (low[0], high[1])]
        segs += [((*box[i], z), (*box[(i + 1) % 4], z)) for i in range(4)]
        self.axes.add_collection3d(
            Line3DCollection(segs, colors="0.75", linewidths=0.6, zorder=1)
        )
        self._grid_text = f"grid {step:g} m"

    def render(
        self, positions: np.ndarray, *, time: float | None = None, title: str | None = None
    ) -> np.ndarray:
        """Return the image of the cloth at ``positions``.

        Parameters
        ----------
        positions : (n, 3) float array
            Node positions [m].
        time, title : float or None, str or None
            Time [s] shown as ``t = 1.23 s`` top left; title shown centred at the top.

        Returns
        -------
        (H, W, 3) uint8
            RGB image, (W, H) being ``size``.

        Raises
        ------
        ValueError
            If ``positions`` is not (n, 3) or has fewer nodes than the faces refer to.
        """
        x = np.asarray(positions, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != 3 or x.shape[0] < self._node_bound:
            raise ValueError(f"positions must have shape (n >= {self._node_bound}, 3); "
                             f"got {x.shape}")
        corners = x[self._faces]
        colours = _face_rgba(corners, self._eye, self._light)
        edges = np.broadcast_to(np.asarray(_EDGE_RGBA), colours.shape)
        if self._obstacles is not None:
            t = 0.0 if time is None else float(time)
            tris = self._obstacles.triangles(t)
            if tris.size:
                quads = np.concatenate([tris, tris[:, 2:]], axis=1)  # padded like the cloth's triangles
                corners = np.concatenate([corners, quads])
                shade = _face_rgba(quads, self._eye, self._light, obstacle=True)
                colours = np.concatenate([colours, shade])
                edges = np.concatenate([edges, shade])  # no seams between the pieces of a face
            segs, pts = self._obstacles.segments(t)
            self._thin.set_segments(segs)
            self._thin_dots.set_data_3d(pts[:, 0], pts[:, 1], pts[:, 2])
        self._poly.set_verts(corners)
        self._poly.set_facecolor(colours)
        self._poly.set_edgecolor(edges)
        h = x[self._highlight]
        self._dots.set_data_3d(h[:, 0], h[:, 1], h[:, 2])
        self._time_text.set_text("" if time is None else f"t = {time:.2f} s")
        self._title_text.set_text(title or "")
        self.canvas.draw()
        image = np.asarray(self.canvas.buffer_rgba())[..., :3]
        width, height = self.size
        out = np.full((height, width, 3), 255, dtype=np.uint8)  # exact size despite rounding
        h, w = min(height, image.shape[0]), min(width, image.shape[1])
        out[:h, :w] = image[:h, :w]
        return out


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
    extra_draw: Callable | None = None,
    obstacles: Sequence | None = None,
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
    size, elev, azim, highlight_nodes, extra_draw, obstacles
        As for :class:`FrameRenderer` (image (width, height) [pixels], camera angles
        [degrees], nodes drawn as red dots, callable(ax) adding artists, obstacles drawn).

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
        bounds = _view_bounds(trajectory_bounds(positions), obstacles, 0.0 if time is None else time)
    renderer = FrameRenderer(triangles, quads, bounds, size=size, elev=elev, azim=azim,
                             highlight_nodes=highlight_nodes, extra_draw=extra_draw, obstacles=obstacles)
    return renderer.render(positions, time=time, title=title)


def _view_bounds(cloth: np.ndarray, obstacles: Sequence | None, t: float) -> np.ndarray:
    """:func:`scene_bounds` of the cloth's box and of the obstacles at time t."""
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
    extra_draw: Callable | None = None,
    obstacles: Sequence | None = None,
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
    size, highlight_nodes, elev, azim, extra_draw, obstacles
        As for :class:`FrameRenderer`; the view covers :func:`scene_bounds` of the trajectory
        and of the obstacles at its first time.

    Returns
    -------
    pathlib.Path
        The written file: ``path``, or the same name with ``.gif`` after an MP4 fallback.

    Raises
    ------
    ValueError
        On an unsupported suffix, an empty trajectory or a bad ``fps``/``max_frames``.
    OSError
        On file system errors.
    """
    out = Path(path)
    suffix = out.suffix.lower()
    if suffix not in (".mp4", ".gif"):
        raise ValueError(f"unsupported video suffix {out.suffix!r}; allowed: .mp4, .gif")
    indices = video_frame_indices(traj.times, fps, max_frames)
    width, height = (int(s) for s in size)
    if suffix == ".mp4":
        width, height = width + width % 2, height + height % 2
    bounds = _view_bounds(trajectory_bounds(traj.positions), obstacles, float(traj.times[0]) if len(traj.times) else 0.0)
    renderer = FrameRenderer(traj.triangles, traj.quads, bounds, size=(width, height), elev=elev, azim=azim,
                             highlight_nodes=highlight_nodes, extra_draw=extra_draw, obstacles=obstacles)

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
