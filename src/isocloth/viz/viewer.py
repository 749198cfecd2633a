"""A browser viewer of run folders, finished or still running (built on viser).

:class:`RunViewer` serves a run folder's cloth, obstacles and grasped nodes as a three.js scene (viser's
web client) with a time slider, a play / pause switch and a playback speed. In ``follow`` mode it re-reads
the folder while a run writes it (frames arrive at each of the run's checkpoints) and moves to the newest
frame while the slider stands on the last one. ``isocloth view RUN`` and ``isocloth run --view`` use it.
"""

from __future__ import annotations

import contextlib
import io
import threading
import time
from pathlib import Path

import numpy as np

from isocloth.io.trajectory import ARRAYS_FILE, METADATA_FILE, Trajectory, load_trajectory

__all__ = ["RunViewer", "cloth_triangles"]

CLOTH_RGB = (51, 115, 204)
OBSTACLE_RGB = (170, 170, 170)
GRASP_RGB = (220, 40, 40)


def cloth_triangles(triangles: np.ndarray, quads: np.ndarray) -> np.ndarray:
    """Triangles (t + 2q, 3) uint32 of a mesh's ``triangles`` (t, 3) and ``quads`` (q, 4) int64 (each quad
    split along its 0–2 diagonal), for drawing."""
    q = np.asarray(quads, dtype=np.int64).reshape(-1, 4)
    parts = [np.asarray(triangles, dtype=np.int64).reshape(-1, 3), q[:, [0, 1, 2]], q[:, [0, 2, 3]]]
    return np.concatenate(parts).astype(np.uint32)


def _check_address(host: str, port: int) -> None:
    """OSError unless ``host``:``port`` can be bound now (port 0: any free port; viser itself would move to
    another port, or wait forever for an address that is not this machine's)."""
    import socket

    if port == 0:
        return
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, port))


def _wxyz(rotation: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation matrix (3, 3)."""
    from viser import transforms

    return transforms.SO3.from_matrix(np.asarray(rotation, dtype=np.float64)).wxyz


class RunViewer:
    """Serve a run folder in the browser.

    Parameters
    ----------
    folder : str or os.PathLike
        A run folder (``isocloth run``), or one a run is writing (``follow``).
    host, port : str, int
        Address to listen on (default 127.0.0.1:8080; port 0 picks a free one, see :attr:`port`).
    follow : bool
        Re-read the folder every ``poll`` seconds while a run writes it (module docstring).
    poll : float
        Seconds between reads in follow mode (> 0).
    wait : float
        Seconds to wait for the folder's first frame (follow mode: a run that has just started).

    Raises
    ------
    FileNotFoundError, ValueError
        If the folder holds no readable trajectory within ``wait`` seconds, as
        :func:`~isocloth.io.trajectory.load_trajectory`; ValueError also for ``poll`` ≤ 0.
    OSError
        If ``host``:``port`` cannot be served (in use, or not an address of this machine).
    """

    def __init__(self, folder, *, host: str = "127.0.0.1", port: int = 8080, follow: bool = False,
                 poll: float = 0.5, wait: float = 0.0) -> None:
        import viser

        if not poll > 0:
            raise ValueError(f"poll must be > 0 seconds, got {poll}")
        self.folder = Path(folder)
        self._stamp = self._folder_stamp()  # before reading: a flush in between is read by the next poll
        self._traj = self._load(wait)
        _check_address(host, int(port))
        self._lock = threading.RLock()
        self._stop = threading.Event()
        with contextlib.redirect_stdout(io.StringIO()):  # viser's banner: the caller prints the address
            self.server = viser.ViserServer(host=host, port=int(port), verbose=False)
        self.server.scene.set_up_direction("+z")
        # lights of our own: the default image-based lighting fetches an HDR image from the network
        self.server.scene.configure_environment_map(None)
        self.server.scene.configure_default_lights(True, cast_shadow=False)
        self.server.scene.add_light_ambient("/light/ambient", intensity=0.6)
        self._build_scene()
        self._threads = [threading.Thread(target=self._play_loop, daemon=True, name="isocloth-viewer-play")]
        if follow:
            self._threads.append(threading.Thread(target=self._follow_loop, args=(float(poll),), daemon=True,
                                                  name="isocloth-viewer-follow"))
        for th in self._threads:
            th.start()

    # -- reading the folder --------------------------------------------------------------------
    def _load(self, wait: float) -> Trajectory:
        deadline = time.monotonic() + max(0.0, float(wait))
        while True:
            try:
                return load_trajectory(self.folder)
            except (FileNotFoundError, ValueError):
                if time.monotonic() >= deadline:
                    raise
            time.sleep(0.1)

    def _folder_stamp(self) -> tuple:
        """Modification times of the folder's trajectory files (they change with each flush)."""
        out = []
        for name in (ARRAYS_FILE, METADATA_FILE):
            try:
                out.append((self.folder / name).stat().st_mtime_ns)
            except OSError:
                out.append(None)
        return tuple(out)

    # -- the scene -----------------------------------------------------------------------------
    def _build_scene(self) -> None:
        from isocloth.runner import run_obstacles
        from isocloth.viz.obstacle_meshes import ObstacleGeometry
        from isocloth.viz.render import trajectory_bounds, view_bounds

        traj = self._traj
        scene, gui = self.server.scene, self.server.gui
        self._faces = cloth_triangles(traj.triangles, traj.quads)
        self.cloth = scene.add_mesh_simple("/cloth", traj.positions[0].astype(np.float32), self._faces,
                                           color=CLOTH_RGB, side="double", flat_shading=False)
        obstacles = run_obstacles(traj.metadata)
        box = view_bounds(trajectory_bounds(traj.positions), obstacles, float(traj.times[0]))
        geometry = ObstacleGeometry(obstacles, box)
        # the camera of the videos' default view (elevation 20°, azimuth −60°) at twice the box's size
        centre, size = 0.5 * (box[0] + box[1]), float(np.max(box[1] - box[0]))
        elev, azim = np.radians(20.0), np.radians(-60.0)
        eye = centre + 1.6 * size * np.array([np.cos(elev) * np.cos(azim), np.cos(elev) * np.sin(azim), np.sin(elev)])
        self.server.initial_camera.look_at = tuple(centre)
        self.server.initial_camera.position = tuple(eye)
        self.server.initial_camera.up = (0.0, 0.0, 1.0)
        self._solids = []
        for k, (obs, tris) in enumerate(geometry.reference_parts()):
            verts = tris.reshape(-1, 3).astype(np.float32)
            faces = np.arange(verts.shape[0], dtype=np.uint32).reshape(-1, 3)
            handle = scene.add_mesh_simple(f"/obstacles/{k}", verts, faces, color=OBSTACLE_RGB, side="double")
            self._solids.append((obs, handle))
        self._geometry = geometry
        self._thin = None
        if geometry.thin_obstacles():
            segs, _ = geometry.segments(float(traj.times[0]))
            self._thin = scene.add_line_segments("/obstacles/thin", segs.astype(np.float32), OBSTACLE_RGB,
                                                 thickness=0.004)
        grasped = [i for g in traj.metadata.get("model", {}).get("grasps", []) for i in g.get("vertices", g["nodes"])]
        self._grasped = np.array(sorted(set(grasped)), dtype=np.int64)
        self._grasp_points = None
        if self._grasped.size:
            self._grasp_points = scene.add_point_cloud("/grasps", traj.positions[0][self._grasped].astype(np.float32),
                                                       GRASP_RGB, point_size=0.015, point_shape="circle")
        self.time_slider = gui.add_slider("frame", min=0, max=max(traj.frame_count - 1, 1), step=1, initial_value=0)
        self.time_label = gui.add_markdown(self._label(0))
        self.playing = gui.add_checkbox("play", False)
        self.speed = gui.add_slider("speed", min=0.1, max=4.0, step=0.1, initial_value=1.0)
        self.time_slider.on_update(lambda _event: self.show(int(self.time_slider.value)))
        self.frame = 0

    def _label(self, i: int) -> str:
        traj = self._traj
        return f"t = {float(traj.times[i]):.3f} s of {float(traj.times[-1]):.3f} s ({traj.frame_count} frames)"

    @property
    def port(self) -> int:
        """The port served."""
        return int(self.server.get_port())

    @property
    def url(self) -> str:
        """The address to open in a browser."""
        host = self.server.get_host()
        return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{self.port}"

    @property
    def trajectory(self) -> Trajectory:
        """The frames read so far."""
        return self._traj

    def show(self, i: int) -> None:
        """Show frame i (0 ≤ i < frame count; clipped): the cloth, the obstacles' poses and the grasped nodes."""
        with self._lock:
            traj = self._traj
            i = int(np.clip(i, 0, traj.frame_count - 1))
            self.frame = i
            x = traj.positions[i]
            t = float(traj.times[i])
            self.cloth.vertices = x.astype(np.float32)
            for obs, handle in self._solids:
                pose = obs.motion.pose(t)
                handle.position = pose.translation
                handle.wxyz = _wxyz(pose.rotation)
            if self._thin is not None:
                segs, _ = self._geometry.segments(t)
                self._thin.points = segs.astype(np.float32)
            if self._grasp_points is not None:
                self._grasp_points.points = x[self._grasped].astype(np.float32)
            self.time_label.content = self._label(i)
            if int(self.time_slider.value) != i:
                self.time_slider.value = i

    # -- background loops ----------------------------------------------------------------------
    def _play_loop(self) -> None:
        clock = time.monotonic()
        sim = None  # simulated time shown, advanced by the speed × wall time while playing
        played = -1  # the frame play showed last: another one means the slider moved
        while not self._stop.wait(0.04):
            now = time.monotonic()
            wall, clock = now - clock, now
            if not self.playing.value:
                sim = None
                continue
            with self._lock:
                times = self._traj.times
                if sim is None or self.frame != played:
                    sim = float(times[self.frame])
                sim += float(self.speed.value) * wall
                if sim > times[-1]:  # loop
                    sim = float(times[0])
                i = int(np.searchsorted(times, sim, side="right") - 1)
                if i != self.frame:
                    self.show(i)
                played = self.frame

    def _follow_loop(self, poll: float) -> None:
        while not self._stop.wait(poll):
            stamp = self._folder_stamp()
            if stamp == self._stamp:
                continue
            try:
                traj = load_trajectory(self.folder)
            except (FileNotFoundError, ValueError):  # being rewritten: the next poll reads it
                continue
            self._stamp = stamp
            old = self._traj
            if not (np.array_equal(traj.triangles, old.triangles) and np.array_equal(traj.quads, old.quads)
                    and traj.node_count == old.node_count):
                continue  # another run's mesh in the folder: the viewer keeps showing the one it was built for
            with self._lock:
                at_end = self.frame >= self._traj.frame_count - 1
                self._traj = traj
                self.time_slider.max = max(traj.frame_count - 1, 1)
                self.show(traj.frame_count - 1 if at_end else self.frame)

    def stop(self) -> None:
        """Stop serving (and the background loops)."""
        self._stop.set()
        with contextlib.redirect_stdout(io.StringIO()):
            self.server.stop()

    def __enter__(self) -> "RunViewer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
