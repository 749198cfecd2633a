"""Gymnasium environments of cloth on a table (``isocloth.envs.tasks``).

Action modes
------------
``"pick_place"`` : action (4,) in [−1, 1]: pick (x, y) and place (x, y), scaled to the workspace
    half-width [m]. The gripper takes the highest node within ``pick_radius`` of the pick point
    (seen from above; none: the action does nothing), carries it along an arc at least as high as
    the task's lift height to its place height over the place point (``Task.carry_heights``) at
    ``speed`` [m/s] (smoothstep segments), lets go and waits ``settle`` [s]. Tasks name the modes
    they support (``Task.action_modes``).
``"velocity"`` : action (4 g,) in [−1, 1] for g grippers: velocity (v_x, v_y, v_z) × ``max_speed``
    [m/s] and grip (> 0 closed) of each gripper for ``control_dt`` [s]. A closing gripper takes the
    nodes within ``grip_radius`` of it; an opening one lets them go. Grippers that pull the cloth
    further than it reaches are held back (``StepInfo.grasp_lag``); a gripper whose nodes fall more
    than ``grip_radius`` behind it loses them (the cloth slips out) and takes none until it opens.

Observations (``observations``, a Dict space): ``"positions"`` (n, 3) float32 [m]; ``"keypoints"``
(k, 3) float32 [m], the positions of the task's keypoint nodes (:meth:`Task.keypoints`: a sheet's corners,
a garment's landmarks); ``"rgb"`` (h, w, 3) uint8, ``"depth"`` (h, w, 1) float32 [m] and ``"point_cloud"``
(``points``, 3) float32 [m] (cloth pixels, sampled with replacement) from a camera above the table
(``camera``; with ``randomize_camera`` its pose, field of view, the cloth's colour and the light change at
every reset; with ``depth_noise`` the depth carries the noise of :class:`~isocloth.sensors.DepthNoise`); in
velocity mode ``"grippers"`` (g, 4) float32 (position [m], closed).

Episodes last :meth:`Task.episode_length` simulated seconds per action mode (``episode_seconds``
overrides it): the step that reaches it returns ``truncated=True`` with ``info["truncation_reason"]``
"time limit". ``info`` holds ``is_success``, ``time`` [s] since the episode started and ``reward_terms``
(:meth:`Task.reward_terms`).

A step that the contact projection cannot take (``SimulationDiverged``) ends the episode: ``truncated``
is True, the state is the last one reached and ``info["diverged"]`` holds the reason. With
``step_budget`` [s], an environment step whose simulation runs longer than that in wall-clock time
ends the same way (``info["budget_exceeded"]``), so that one stalled copy does not hold up a vector
env or a rollout (:mod:`isocloth.solvers.budget`). Either way ``info["truncation_reason"]`` says why.
"""

from __future__ import annotations

import numpy as np
import gymnasium as gym
from gymnasium import spaces

from isocloth.control import GraspController
from isocloth.envs.tasks import ClothFlatten, ClothFold, ClothHang, GarmentLift, Task, coverage
from isocloth.mesh.topology import rest_element_areas
from isocloth.sensors import LABEL_CLOTH, CameraSensor, PinholeCamera

__all__ = ["ClothEnv", "ClothFlattenEnv", "ClothFoldEnv", "ClothHangEnv", "GarmentLiftEnv", "OBSERVATIONS",
           "ACTION_MODES"]

OBSERVATIONS = ("positions", "keypoints", "rgb", "depth", "point_cloud")
ACTION_MODES = ("pick_place", "velocity")
_CAMERA_HEIGHT = 1.0
_COVERAGE_PIXELS = 256


def _smoothstep(u: float) -> float:
    return u * u * (3.0 - 2.0 * u)


class ClothEnv(gym.Env):
    """A :class:`~isocloth.envs.tasks.Task` as a Gymnasium environment (module docstring).

    Parameters
    ----------
    task : Task
    action_mode : "pick_place" or "velocity"
    observations : sequence of names from ``OBSERVATIONS``
    image_size : (h, w) of the image observations [px]; points : size of the point cloud
    grippers : number of grippers in velocity mode; control_dt : [s] per velocity action
    randomize : draw the fabric and the sheet's shape from the task's ranges at every reset (False:
        the middle of each range)
    workspace : half-width [m] of the square the pick-and-place actions address (default ``task.workspace``)
    render_mode : None or "rgb_array" (the camera's colour image)
    step_budget : wall-clock seconds the simulation of one :meth:`step` may take (None: no limit);
        beyond it the episode ends as truncated at the last simulated state (module docstring)
    episode_seconds : simulated seconds of an episode (default ``task.episode_length(action_mode)``)
    camera : dict with ``eye`` (3,) [m], ``target`` (3,) [m] and ``fov_deg`` (horizontal field of view) of the
        image camera; missing keys keep the default: eye (0, −0.6 size, 1.2 size), target (0, 0, 0), 60°
    randomize_camera : at every reset move the eye by up to ±5 % of the task's size per axis, the target by
        ±2 %, the field of view by ±5°, and draw the cloth's colour and the light's brightness (±20 %)
    depth_noise : depth images with the noise of :class:`~isocloth.sensors.DepthNoise` (axial noise growing
        with the square of the distance, incidence dropouts), seeded from the episode's seed

    Raises
    ------
    ValueError for an unknown action mode (or one the task does not support) or observation, an unknown
    camera key, or non-positive sizes, budget or episode length.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    pick_radius = 0.03
    speed = 0.4
    settle = 0.3
    max_speed = 0.3
    grip_radius = 0.02

    def __init__(self, task: Task, *, action_mode: str = "pick_place", observations=("positions",),
                 image_size=(64, 64), points: int = 512, grippers: int = 1, control_dt: float = 0.05,
                 randomize: bool = True, workspace: float | None = None, render_mode: str | None = None,
                 step_budget: float | None = None, episode_seconds: float | None = None, camera: dict | None = None,
                 randomize_camera: bool = False, depth_noise: bool = False):
        if action_mode not in ACTION_MODES:
            raise ValueError(f"action_mode must be one of {ACTION_MODES}, got {action_mode!r}")
        if action_mode not in task.action_modes:
            raise ValueError(f"{task.name} supports the action modes {task.action_modes}, not {action_mode!r}")
        bad = [o for o in observations if o not in OBSERVATIONS]
        if bad or not observations:
            raise ValueError(f"observations must be a non-empty selection of {OBSERVATIONS}, got {tuple(observations)}")
        h, w = (int(v) for v in image_size)
        if h < 1 or w < 1 or int(points) < 1 or int(grippers) < 1 or not control_dt > 0:
            raise ValueError("image_size, points, grippers and control_dt must be positive")
        if step_budget is not None and not (isinstance(step_budget, (int, float)) and step_budget > 0):
            raise ValueError(f"step_budget must be a positive number of seconds or None, got {step_budget!r}")
        self.step_budget = None if step_budget is None else float(step_budget)
        length = task.episode_length(action_mode) if episode_seconds is None else episode_seconds
        if not (isinstance(length, (int, float)) and np.isfinite(length) and length > 0):
            raise ValueError(f"episode_seconds must be a positive number of simulated seconds, got {episode_seconds!r}")
        self.episode_seconds = float(length)
        self.camera_options = _camera_options(camera)
        self.randomize_camera, self.depth_noise = bool(randomize_camera), bool(depth_noise)
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.task = task
        self.action_mode = action_mode
        self.observations = tuple(observations)
        self.image_size, self.points, self.grippers = (h, w), int(points), int(grippers)
        self.control_dt = float(control_dt)
        self.randomize = randomize
        self.workspace = task.workspace if workspace is None else float(workspace)
        self.render_mode = render_mode
        n = task.node_count
        obs = {"positions": spaces.Box(-np.inf, np.inf, (n, 3), np.float32),
               "keypoints": spaces.Box(-np.inf, np.inf, (len(task.keypoints()), 3), np.float32)}
        if "rgb" in self.observations:
            obs["rgb"] = spaces.Box(0, 255, (h, w, 3), np.uint8)
        if "depth" in self.observations:
            obs["depth"] = spaces.Box(0.0, np.inf, (h, w, 1), np.float32)
        if "point_cloud" in self.observations:
            obs["point_cloud"] = spaces.Box(-np.inf, np.inf, (self.points, 3), np.float32)
        if action_mode == "velocity":
            obs["grippers"] = spaces.Box(-np.inf, np.inf, (self.grippers, 4), np.float32)
        self.observation_space = spaces.Dict({k: obs[k] for k in obs if k in self.observations or k == "grippers"})
        size = 4 if action_mode == "pick_place" else 4 * self.grippers
        self.action_space = spaces.Box(-1.0, 1.0, (size,), np.float32)
        self.scene = self.state = None

    # ------------------------------------------------------------------ episode
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        from isocloth.scenes.loader import build_scene, config_from_dict

        super().reset(seed=seed)
        rng = self.np_random if self.randomize else np.random.default_rng(0)
        cfg = self.task.scene(rng, self.randomize)
        self.start_options = cfg.pop("_start", {})  # for Task.start
        self.scene = build_scene(config_from_dict(cfg))
        self.model, self.stepper = self.scene.model, self.scene.stepper
        self.state = self.scene.initial_state
        self.hand = GraspController(self.model.node_count)
        self._gripper_pos = np.zeros((self.grippers, 3))
        self._gripper_handle = [None] * self.grippers
        self._slipped = [False] * self.grippers  # lost its nodes while closed: takes none until reopened
        self._rest_area = float(rest_element_areas(self.model.mesh).sum())
        cam = PinholeCamera(_COVERAGE_PIXELS, _COVERAGE_PIXELS, *(2 * [0.5 * _COVERAGE_PIXELS * _CAMERA_HEIGHT / self.workspace]),
                            0.5 * _COVERAGE_PIXELS, 0.5 * _COVERAGE_PIXELS)
        self._top = CameraSensor(self.model, cam.looking_at((0, 0, _CAMERA_HEIGHT), (0, 0, 0), up=(0, 1, 0)))
        # the camera's draws come from a stream of their own: camera options do not change the episode
        self._camera = self._image_camera(self.np_random.spawn(1)[0])
        self.task.start(self)
        if self.action_mode == "velocity":
            starts = self.task.gripper_starts(self)
            for k in range(self.grippers):
                self._gripper_pos[k] = starts[k % len(starts)]
        self.start_positions = self.state.x.copy()
        self._t0 = float(self.state.t)
        self._keypoints = np.array(list(self.task.keypoints().values()), dtype=np.int64)
        return self._observe(), self._info()

    def _image_camera(self, rng: np.random.Generator) -> CameraSensor:
        """The image camera of an episode (``camera``, ``randomize_camera``, ``depth_noise``)."""
        from isocloth.sensors import DepthNoise

        size = self.task.size
        opts = self.camera_options
        eye = opts.get("eye", np.array([0.0, -0.6 * size, 1.2 * size]))
        target = opts.get("target", np.zeros(3))
        fov = opts.get("fov_deg", 60.0)
        rgb, light = None, 1.0
        if self.randomize_camera:
            eye = eye + rng.uniform(-0.05, 0.05, 3) * size
            target = target + rng.uniform(-0.02, 0.02, 3) * size
            fov = fov + float(rng.uniform(-5.0, 5.0))
            rgb, light = rng.uniform(0.2, 0.9, 3), float(rng.uniform(0.8, 1.2))
        h, w = self.image_size
        view = eye - target  # looking straight down the z axis: the image's up is +y
        up = (0.0, 1.0, 0.0) if np.linalg.norm(view[:2]) <= 1e-9 * np.linalg.norm(view) else (0.0, 0.0, 1.0)
        cam = PinholeCamera.from_fov(w, h, fov, fov * h / w).looking_at(eye, target, up=up)
        noise = DepthNoise() if self.depth_noise else None
        return CameraSensor(self.model, cam, noise=noise, seed=int(rng.integers(2 ** 31)) if noise else None,
                            cloth_rgb=rgb, light=light)

    def step(self, action):
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        a = np.asarray(action, dtype=np.float64)
        if a.shape != self.action_space.shape or not np.isfinite(a).all():
            raise ValueError(f"action must be a finite array of shape {self.action_space.shape}, got "
                             f"{np.asarray(action).tolist()}")
        from isocloth.solvers.budget import StepBudgetExceeded, wall_clock_budget
        from isocloth.step.stepper import SimulationDiverged

        a = np.clip(a, -1.0, 1.0)
        failure = reason = None
        try:
            with wall_clock_budget(self.step_budget):
                self._act(a)
        except SimulationDiverged as exc:
            # a step the contact projection could not take: the episode ends (truncated) at the last
            # state it reached, with the reason in info["diverged"]; reset() starts a new one
            failure, reason = str(exc), "diverged"
        except StepBudgetExceeded as exc:
            failure, reason = f"{exc} at t = {self.state.t:.3f} s", "budget_exceeded"
        terms = self.task.reward_terms(self)
        reward = float(self.task.combine(terms))
        info = self._info(terms)
        if failure is not None:
            info[reason] = failure
            info["truncation_reason"] = failure
        elif info["time"] >= self.episode_seconds - 1e-9:
            info["truncation_reason"] = "time limit"
        return self._observe(), reward, False, "truncation_reason" in info, info

    def _act(self, a: np.ndarray) -> None:
        """Simulate the clipped action ``a`` (module docstring)."""
        if self.action_mode == "pick_place":
            pick, place = a[:2] * self.workspace, a[2:] * self.workspace
            x = self.state.x
            near = np.flatnonzero(np.linalg.norm(x[:, :2] - pick, axis=1) <= self.pick_radius)
            if near.size:
                self._carry(int(near[np.argmax(x[near, 2])]), place)
            else:
                self._advance(self.settle)
        else:
            self._velocity(a.reshape(self.grippers, 4))

    def render(self):
        if self.render_mode != "rgb_array" or self.state is None:
            return None
        return self._camera.capture(self.state.x, self.state.t, noise=False).rgb

    # ------------------------------------------------------------------ measures
    def coverage(self) -> float:
        """Fraction of the rest area of the sheet that covers the table seen from above."""
        frame = self._top.capture(self.state.x, self.state.t)
        cam = self._top.camera
        return coverage(frame.mask, _CAMERA_HEIGHT, cam.fx, cam.fy, self._rest_area)

    # ------------------------------------------------------------------ internals
    CRUMPLE_ATTEMPTS = 3

    def _crumple(self) -> None:
        """Lift a random node, carry it over a random point and drop the sheet from there: a crumpled
        start. A drop whose contact steps fail (``SimulationDiverged``: a sheet landing on itself can
        still defeat the contact projection) is redrawn, at most ``CRUMPLE_ATTEMPTS`` times."""
        from isocloth.step.stepper import SimulationDiverged

        start = self.state
        for attempt in range(self.CRUMPLE_ATTEMPTS):
            node = int(self.np_random.integers(self.model.node_count))
            target = np.append(self.np_random.uniform(-0.25, 0.25, 2) * self.task.size, 0.8 * self.task.size)
            try:
                self._carry(node, target, lift=0.8 * self.task.size, settle=0.5)
                return
            except SimulationDiverged:
                if attempt == self.CRUMPLE_ATTEMPTS - 1:
                    raise
                self.state = start
                self.hand = GraspController(self.model.node_count)

    def _sim_step(self) -> None:
        """One simulation step with the grasps of :attr:`hand` (within the step's budget)."""
        from isocloth.solvers.budget import check_budget

        check_budget()
        self.state, _ = self.stepper.step(self.state, self.hand.control(self.state.t + self.stepper.dt))

    def _advance(self, duration: float) -> None:
        for _ in range(max(1, int(round(duration / self.stepper.dt)))):
            self._sim_step()

    def _carry(self, node: int, place_xy: np.ndarray, lift: float | None = None, settle: float | None = None) -> None:
        """Pick-and-place primitive on one node: an arc from the node to the task's place height
        over the place point (or to the point itself, given with a height), as high as ``lift``
        (default the task's) or half the distance, whichever is larger (a fold turns the carried part
        over the fold line without dragging the rest), at ``speed``; then release and wait
        ``settle`` [s]."""
        task_lift, place_height = self.task.carry_heights()
        lift = task_lift if lift is None else lift
        h = self.hand.grasp(self.state.x, nodes=[node])
        a = self.state.x[node].copy()
        b = np.array([place_xy[0], place_xy[1], place_xy[2] if len(place_xy) > 2 else place_height])
        height = max(lift, 0.5 * float(np.linalg.norm(b[:2] - a[:2])))
        length = np.linalg.norm(b - a) + 2.0 * height  # about the arc's length
        dt = self.stepper.dt
        k = max(1, int(np.ceil(length / (self.speed * dt))))
        for i in range(1, k + 1):
            s = _smoothstep(i / k)
            self.hand.move_to(h, a + s * (b - a) + np.array([0.0, 0.0, height * np.sin(np.pi * s)]))
            self._sim_step()
        self.hand.release(h)
        self._advance(self.settle if settle is None else settle)

    def _velocity(self, a: np.ndarray) -> None:
        for k in range(self.grippers):
            closed = a[k, 3] > 0
            if not closed:
                self._slipped[k] = False
            if closed and self._gripper_handle[k] is None and not self._slipped[k]:
                x = self.state.x
                near = np.flatnonzero(np.linalg.norm(x - self._gripper_pos[k], axis=1) <= self.grip_radius)
                near = np.setdiff1d(near, self.hand.nodes)
                if near.size:
                    self._gripper_handle[k] = self.hand.grasp(x, nodes=near)
            elif not closed and self._gripper_handle[k] is not None:
                self.hand.release(self._gripper_handle[k])
                self._gripper_handle[k] = None
        v = a[:, :3] * self.max_speed
        dt = self.stepper.dt
        for _ in range(max(1, int(round(self.control_dt / dt)))):
            self._gripper_pos += v * dt
            self._gripper_pos[:, 2] = np.maximum(self._gripper_pos[:, 2], 0.0)
            for k, h in enumerate(self._gripper_handle):
                if h is not None:
                    self.hand.move_by(h, v[k] * dt if self._gripper_pos[k, 2] > 0 else v[k] * dt * [1, 1, 0])
            self._sim_step()
            for k, h in enumerate(self._gripper_handle):
                if h is not None and self.hand.lag(h, self.state.x) > self.grip_radius:
                    self.hand.release(h)  # pulled taut, the cloth slipped out of the gripper
                    self._gripper_handle[k] = None
                    self._slipped[k] = True

    def _observe(self) -> dict:
        out = {"positions": self.state.x.astype(np.float32), "keypoints": self.state.x[self._keypoints].astype(np.float32)}
        need = {"rgb", "depth", "point_cloud"} & set(self.observations)
        if need:
            frame = self._camera.capture(self.state.x, self.state.t)
            if "rgb" in need:
                out["rgb"] = frame.rgb
            if "depth" in need:
                out["depth"] = frame.depth[..., None].astype(np.float32)
            if "point_cloud" in need:
                cloud = frame.point_cloud(labels=(LABEL_CLOTH,))
                if cloud.shape[0]:
                    pick = np.random.default_rng(self.state.step_index).integers(cloud.shape[0], size=self.points)
                    out["point_cloud"] = cloud[pick].astype(np.float32)
                else:
                    out["point_cloud"] = np.zeros((self.points, 3), np.float32)
        if self.action_mode == "velocity":
            closed = np.array([h is not None for h in self._gripper_handle], dtype=np.float32)
            out["grippers"] = np.column_stack([self._gripper_pos, closed]).astype(np.float32)
        return {k: out[k] for k in self.observation_space.spaces}

    def _info(self, terms: dict | None = None) -> dict:
        terms = self.task.reward_terms(self) if terms is None else terms
        return {"is_success": bool(self.task.success(self, terms)), "time": float(self.state.t) - self._t0,
                "reward_terms": {k: float(v) for k, v in terms.items()}}


def _camera_options(camera) -> dict:
    """The ``camera`` option checked: {"eye": (3,) float64 [m], "target": (3,) float64 [m], "fov_deg": float}
    (missing keys absent); ValueError naming a wrong key or value."""
    camera = dict(camera or {})
    unknown = set(camera) - {"eye", "target", "fov_deg"}
    if unknown:
        raise ValueError(f"camera takes the keys eye, target and fov_deg, got {sorted(unknown)}")
    out = {}
    for key in ("eye", "target"):
        if key in camera:
            try:
                v = np.asarray(camera[key], dtype=np.float64)
            except (TypeError, ValueError):
                v = np.zeros(0)
            if v.shape != (3,) or not np.isfinite(v).all():
                raise ValueError(f"camera {key} must be three finite coordinates [m], got {camera[key]!r}")
            out[key] = v
    if "fov_deg" in camera:
        fov = camera["fov_deg"]
        if not (isinstance(fov, (int, float)) and 10.0 <= fov <= 170.0):
            raise ValueError(f"camera fov_deg must be a horizontal field of view in [10, 170] degrees, got {fov!r}")
        out["fov_deg"] = float(fov)
    if "eye" in out and "target" in out and np.allclose(out["eye"], out["target"]):
        raise ValueError("camera eye and target must differ: the camera looks from its eye at its target")
    return out


def _sheet_task(cls, size, nodes, sheet, **fields):
    return cls(size=size, nodes=nodes, **fields) if sheet is None else cls(size=size, nodes=nodes, sheet=sheet, **fields)


class ClothFlattenEnv(ClothEnv):
    """Spread a crumpled sheet (:class:`~isocloth.envs.tasks.ClothFlatten`; ``crumple=False``
    starts flat). ``sheet``: the ranges of the sheet's shape (default :class:`SheetRanges`)."""

    def __init__(self, size: float = 0.3, nodes: int = 9, crumple: bool = True, sheet=None, **kwargs):
        super().__init__(_sheet_task(ClothFlatten, size, nodes, sheet, crumple=crumple), **kwargs)


class ClothFoldEnv(ClothEnv):
    """Fold a sheet in half (:class:`~isocloth.envs.tasks.ClothFold`)."""

    def __init__(self, size: float = 0.3, nodes: int = 9, sheet=None, **kwargs):
        super().__init__(_sheet_task(ClothFold, size, nodes, sheet), **kwargs)


class ClothHangEnv(ClothEnv):
    """Hang a sheet over a bar (:class:`~isocloth.envs.tasks.ClothHang`)."""

    def __init__(self, size: float = 0.3, nodes: int = 9, sheet=None, **kwargs):
        super().__init__(_sheet_task(ClothHang, size, nodes, sheet), **kwargs)


class GarmentLiftEnv(ClothEnv):
    """Lift a T-shirt off the table (:class:`~isocloth.envs.tasks.GarmentLift`); velocity control with
    two grippers by default."""

    def __init__(self, action_mode: str = "velocity", grippers: int = 2, **kwargs):
        super().__init__(GarmentLift(), action_mode=action_mode, grippers=grippers, **kwargs)
