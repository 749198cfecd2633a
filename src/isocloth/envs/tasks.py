"""Cloth manipulation tasks: scenes, rewards and success criteria (after SoftGym's cloth tasks,
Lin et al. 2020, "SoftGym: Benchmarking deep reinforcement learning for deformable object
manipulation", §4: coverage for flattening, distance between paired particles for folding).

A task builds its scene (a scene-file dictionary, :mod:`isocloth.scenes.schema`) from a random
generator, with the fabric parameters drawn from ranges (domain randomisation), and scores the
cloth's state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["FabricRanges", "SheetRanges", "Task", "ClothFlatten", "ClothFold", "ClothHang", "GarmentLift", "coverage",
           "fold_distance", "hang_balance", "lifted_fraction", "mirror_pairs", "FIXED_SHEET"]


def _draw(rng: np.random.Generator, lo: float, hi: float, middle: bool) -> float:
    """Uniform in [lo, hi]; the middle with ``middle``; a fixed range (lo = hi) takes no draw (the
    random stream of the other draws stays as it was)."""
    if middle or lo == hi:
        return 0.5 * (lo + hi)
    return float(rng.uniform(lo, hi))


@dataclass(frozen=True)
class FabricRanges:
    """Ranges (low, high) of the fabric parameters drawn at every reset; (x, x) fixes one.

    Attributes
    ----------
    rho : kg/m² (inertial density); delta : kg/m² (virtual density of gravity, thesis §2.4.3);
    alpha : kg/(m² s) (Rayleigh damping); kappa : N m (bending stiffness); mu : cloth–table friction
    """

    rho: tuple = (0.12, 0.2)
    delta: tuple = (0.12, 0.2)
    alpha: tuple = (0.1, 0.5)
    kappa: tuple = (1e-6, 1e-5)
    mu: tuple = (0.4, 0.6)

    def __post_init__(self):
        for name in ("rho", "delta", "alpha", "kappa", "mu"):
            lo, hi = getattr(self, name)
            if not (0 <= lo <= hi) or (name in ("rho", "delta") and lo <= 0):
                raise ValueError(f"fabric range {name} = ({lo}, {hi}) must satisfy 0 {'<' if name in ('rho', 'delta') else '<='} "
                                 "low <= high")

    def sample(self, rng: np.random.Generator, middle: bool = False) -> dict:
        """One value of each parameter (uniform; log-uniform for κ); with ``middle`` the arithmetic
        middle of each range, no draw."""
        out = {}
        for name in ("rho", "delta", "alpha", "mu"):
            lo, hi = getattr(self, name)
            out[name] = float(np.mean([lo, hi])) if middle else float(rng.uniform(lo, hi))
        lo, hi = self.kappa
        if middle:
            out["kappa"] = float(np.mean([lo, hi]))
        else:
            out["kappa"] = float(np.exp(rng.uniform(np.log(lo), np.log(hi)))) if lo > 0 else float(rng.uniform(lo, hi))
        return out


@dataclass(frozen=True)
class SheetRanges:
    """Ranges (low, high) of the sheet's shape drawn at every reset (the node grid stays
    ``Task.nodes`` × ``Task.nodes``, so observations keep their shape); (x, x) fixes one.

    Attributes
    ----------
    scale : side length relative to ``Task.size`` (geometric mean of width and height)
    aspect : width / height
    """

    scale: tuple = (0.9, 1.1)
    aspect: tuple = (0.8, 1.25)

    def __post_init__(self):
        for name in ("scale", "aspect"):
            lo, hi = getattr(self, name)
            if not (0 < lo <= hi < np.inf):
                raise ValueError(f"sheet range {name} = ({lo}, {hi}) must satisfy 0 < low <= high")

    def sample(self, rng: np.random.Generator, size: float, middle: bool = False) -> tuple[float, float]:
        """(width, height) [m] of a sheet of nominal side ``size`` [m] (uniform scale and log-uniform
        aspect; the middle of both with ``middle``)."""
        scale = _draw(rng, *self.scale, middle)
        lo, hi = np.log(self.aspect[0]), np.log(self.aspect[1])
        aspect = float(np.exp(_draw(rng, lo, hi, middle)))
        return size * scale * np.sqrt(aspect), size * scale / np.sqrt(aspect)


FIXED_SHEET = SheetRanges(scale=(1.0, 1.0), aspect=(1.0, 1.0))
"""A square sheet of side ``Task.size`` at every reset."""


def coverage(mask: np.ndarray, height: float, fx: float, fy: float, rest_area: float) -> float:
    """Area of the cloth seen from above, as a fraction of its rest area: pixels labelled cloth in a
    top-down ``mask`` times the footprint (h/f_x)(h/f_y) of a pixel on the table at ``height`` [m]
    below the camera."""
    return float(np.count_nonzero(mask == 1) * (height / fx) * (height / fy) / rest_area)


def mirror_pairs(x0: np.ndarray, spacing: float) -> np.ndarray:
    """(k, 2) int64 pairs (i, j) of nodes mirrored across x = 0 (i at x < 0, j at x > 0) of a grid of
    node ``spacing`` [m] (nodes within a quarter spacing of x = 0 lie on the fold line: unpaired)."""
    left = np.flatnonzero(x0[:, 0] < -0.25 * spacing)
    mirrored = x0[left] * np.array([-1.0, 1.0, 1.0])
    d = np.linalg.norm(x0[None, :, :] - mirrored[:, None, :], axis=2)
    return np.column_stack([left, d.argmin(axis=1)]).astype(np.int64)


def fold_distance(x: np.ndarray, pairs: np.ndarray) -> float:
    """Mean distance [m] between the nodes of ``pairs`` (k, 2) int64 at positions x (n, 3)."""
    return float(np.linalg.norm(x[pairs[:, 0]] - x[pairs[:, 1]], axis=1).mean())


@dataclass(frozen=True)
class Task:
    """A square sheet of side ``size`` [m] and ``nodes`` × ``nodes`` nodes lying on a table (z = 0) with
    self-collisions. Subclasses define the reward and success."""

    size: float = 0.3
    nodes: int = 9
    fabric: FabricRanges = field(default_factory=FabricRanges)
    sheet: SheetRanges = field(default_factory=SheetRanges)
    thickness: float = 0.003
    dt: float = 0.01
    success_threshold: float = 0.0
    name: str = "task"
    action_modes: tuple = ("pick_place", "velocity")
    """The action modes of :mod:`isocloth.envs.cloth_env` the task can be driven with."""
    episode_seconds: tuple = (("pick_place", 8.0), ("velocity", 6.0))
    """Simulated seconds of an episode per action mode ((mode, seconds) pairs; :meth:`episode_length`)."""

    def episode_length(self, action_mode: str) -> float:
        """Simulated time [s] an episode in ``action_mode`` lasts (then it is truncated).

        Raises
        ------
        ValueError for a mode the task does not support.
        """
        table = dict(self.episode_seconds)
        if action_mode not in table or action_mode not in self.action_modes:
            raise ValueError(f"{self.name} supports the action modes {self.action_modes}, not {action_mode!r}")
        return float(table[action_mode])

    @property
    def node_count(self) -> int:
        """Nodes of the cloth (the length of the positions observation)."""
        return self.nodes * self.nodes

    def scene(self, rng: np.random.Generator, randomize: bool = True) -> dict:
        """The scene-file dictionary of an episode: fabric drawn from :attr:`fabric`, the seed of the
        rest-shape noise, then the sheet's width and height from :attr:`sheet` (without ``randomize``
        the middle of every range; the noise seed is still drawn). A task whose episodes start from
        another state adds the key ``"_start"``: options of :meth:`start`, which the environment
        removes from the scene and keeps as ``env.start_options``."""
        if self.nodes < 3 or not self.size > 0:
            raise ValueError(f"a task sheet needs size > 0 m and at least 3 x 3 nodes, got {self.size}, {self.nodes}")
        f = self.fabric.sample(rng)
        noise_seed = int(rng.integers(2 ** 31))
        if not randomize:
            f = self.fabric.sample(rng, middle=True)
        width, height = self.sheet.sample(rng, self.size, middle=not randomize)
        return {
            "name": self.name, "description": f"{self.name}: a {width:.3g} m x {height:.3g} m sheet on a table",
            "cloth": {"mesh": {"generator": "rectangle", "width": width, "height": height,
                               "nx": self.nodes, "ny": self.nodes, "element": "quad", "plane": "xy"},
                      "placement": {"translate": [0.0, 0.0, self.thickness]}, "fabric": "light-cotton",
                      # 0.5 mm of rest-shape noise, as in the built-in scenes: no real sheet lies exactly flat
                      "noise": {"sigma": 0.0005, "seed": noise_seed},
                      "rho": f["rho"], "delta": f["delta"], "alpha": f["alpha"], "kappa": f["kappa"]},
            "obstacles": [{"type": "plane", "name": "table", "mu": f["mu"]}],
            "self_collision": {"thickness": self.thickness, "mu": 0.3},
            "simulation": {"dt": self.dt, "duration": 1.0},
            "output": {"video": "none"},
        }

    def start(self, env) -> None:
        """Called by the environment after the scene of an episode is built (a crumpled start, say)."""

    @property
    def workspace(self) -> float:
        """Half-width [m] of the square the pick-and-place actions address (and the top camera sees)."""
        return 0.6 * self.size

    def carry_heights(self) -> tuple[float, float]:
        """Pick and place: the least height of the carrying arc and the height [m] at which the
        carried node is let go over the place point."""
        return 0.08, 0.02

    def gripper_starts(self, env) -> np.ndarray:
        """(4, 3) float64 [m]: where velocity-mode grippers start (gripper k at row k mod 4): 2 ×
        thickness above the sheet's corner nodes where they are at the start of the episode (over a
        crumpled sheet's corners too), those of the half x < 0 (the fold's moving half) first."""
        return env.state.x[self.corner_nodes()] + np.array([0.0, 0.0, 2.0 * self.thickness])

    def corner_nodes(self) -> np.ndarray:
        """(4,) int64: the sheet's corner nodes, at (x min, y min), (x min, y max), (x max, y min) and
        (x max, y max) of the rest grid."""
        k = self.nodes
        return np.array([0, (k - 1) * k, k - 1, k * k - 1], dtype=np.int64)

    def keypoints(self) -> dict:
        """{name: node} of the ``"keypoints"`` observation, in its order: the sheet's four corners."""
        return dict(zip(("corner_xmin_ymin", "corner_xmin_ymax", "corner_xmax_ymin", "corner_xmax_ymax"),
                        (int(i) for i in self.corner_nodes())))

    def reward_terms(self, env) -> dict:  # pragma: no cover - abstract
        """{name: float}: the terms of the reward (``info["reward_terms"]``)."""
        raise NotImplementedError

    def combine(self, terms: dict) -> float:  # pragma: no cover - abstract
        """The reward from its terms."""
        raise NotImplementedError

    def reward(self, env) -> float:
        """The reward of the environment's state (:meth:`combine` of :meth:`reward_terms`)."""
        return float(self.combine(self.reward_terms(env)))

    def success(self, env, terms: dict | None = None) -> bool:
        """Whether the state meets the task (``terms``: its :meth:`reward_terms` when already computed)."""
        return self._reward(env, terms) >= self.success_threshold

    def _reward(self, env, terms: dict | None) -> float:
        return self.reward(env) if terms is None else float(self.combine(terms))


@dataclass(frozen=True)
class ClothFlatten(Task):
    """Spread a crumpled sheet: reward = its coverage of the table seen from above (1 when flat);
    success at coverage ≥ 0.95. Episodes start from a sheet dropped after a random corner lift."""

    success_threshold: float = 0.95
    name: str = "ClothFlatten"
    crumple: bool = True
    episode_seconds: tuple = (("pick_place", 15.0), ("velocity", 10.0))

    def start(self, env) -> None:
        if self.crumple:
            env._crumple()

    def reward_terms(self, env) -> dict:
        return {"coverage": env.coverage()}

    def combine(self, terms: dict) -> float:
        return terms["coverage"]


@dataclass(frozen=True)
class ClothFold(Task):
    """Fold the sheet in half along its middle line x = 0, the half x < 0 onto the half x > 0:
    reward = −(mean distance between mirrored node pairs + 1.2 × mean displacement of the half x > 0
    from its start) [m] (SoftGym's fold reward); success at reward ≥ −0.02 m."""

    success_threshold: float = -0.02
    name: str = "ClothFold"

    def start(self, env) -> None:
        """The mirrored node pairs of the sheet (``env.fold_pairs``)."""
        x0 = env.model.initial_positions
        env.fold_pairs = mirror_pairs(x0, float(np.ptp(x0[:, 0])) / (self.nodes - 1))

    def reward_terms(self, env) -> dict:
        x, pairs, x0 = env.state.x, env.fold_pairs, env.start_positions
        moved = float(np.linalg.norm(x[pairs[:, 1]] - x0[pairs[:, 1]], axis=1).mean())
        return {"fold_distance": fold_distance(x, pairs), "moved": moved}

    def combine(self, terms: dict) -> float:
        return -(terms["fold_distance"] + 1.2 * terms["moved"])


def lifted_fraction(x: np.ndarray, masses: np.ndarray, clearance: float) -> float:
    """Share of the cloth's mass (masses (n,) [kg]) at nodes more than ``clearance`` [m] above the
    table (z = 0), positions x (n, 3) [m]."""
    return float(masses[x[:, 2] > clearance].sum() / masses.sum())


def hang_balance(x: np.ndarray, masses: np.ndarray, bar_x: float) -> float:
    """2 min(m₋, m₊) / m: how evenly the cloth's mass splits between the two sides x < ``bar_x`` and
    x > ``bar_x`` [m] of a bar along y (1: half on each side, 0: all on one)."""
    left = float(masses[x[:, 0] < bar_x].sum())
    return 2.0 * min(left, float(masses.sum()) - left) / float(masses.sum())


@dataclass(frozen=True)
class ClothHang(Task):
    """Hang the sheet over a horizontal bar: a cylinder of radius ``bar_radius`` [m] along y, its axis
    at x = ``bar_x`` × size and z = ``bar_height`` × size, beside the sheet lying on the table.

    reward = (share of the mass more than ``clearance`` [m] above the table) × :func:`hang_balance`
    while the cloth touches the bar (a node within ``bar_radius`` + 1 cm of its axis), else
    −:attr:`APPROACH` × (the cloth's gap to the bar) / size, which leads the cloth to the bar;
    success at reward ≥ 0.6 with nothing holding the cloth (it hangs by itself)."""

    success_threshold: float = 0.6
    name: str = "ClothHang"
    bar_x: float = 0.75
    bar_height: float = 1.0
    bar_radius: float = 0.04
    clearance: float = 0.02
    episode_seconds: tuple = (("pick_place", 12.0), ("velocity", 8.0))
    APPROACH = 0.1
    """Weight of the approach term of the reward while the cloth does not touch the bar."""

    @property
    def workspace(self) -> float:
        """Reaches over the bar: (``bar_x`` + 0.15) × size."""
        return (self.bar_x + 0.15) * self.size

    @property
    def bar(self) -> tuple[float, float]:
        """(x, z) [m] of the bar's axis."""
        return self.bar_x * self.size, self.bar_height * self.size

    def scene(self, rng: np.random.Generator, randomize: bool = True) -> dict:
        cfg = super().scene(rng, randomize)
        bx, bz = self.bar
        mu = cfg["obstacles"][0]["mu"]
        cfg["obstacles"].append({"type": "cylinder", "name": "bar", "center": [bx, 0.0, bz], "axis": [0.0, 1.0, 0.0],
                                 "radius": self.bar_radius, "half_height": 2.0 * self.size, "mu": mu})
        cfg["description"] += f" beside a bar {bz:.3g} m high"
        return cfg

    def carry_heights(self) -> tuple[float, float]:
        """Pick and place: the arc's height and the place height [m]: over the bar (the carried node
        is let go 10 cm above its top)."""
        bz = self.bar[1]
        return 1.5 * self.size, bz + self.bar_radius + 0.1

    def reward_terms(self, env) -> dict:
        x, m = env.state.x, env.model.masses
        bx, bz = self.bar
        gap = max(float(np.hypot(x[:, 0] - bx, x[:, 2] - bz).min()) - self.bar_radius, 0.0)
        return {"lifted": lifted_fraction(x, m, self.clearance), "balance": hang_balance(x, m, bx),
                "bar_gap": gap, "touching": float(gap <= 0.01)}

    def combine(self, terms: dict) -> float:
        if terms["touching"]:
            return terms["lifted"] * terms["balance"]
        return -self.APPROACH * terms["bar_gap"] / self.size

    def success(self, env, terms: dict | None = None) -> bool:
        return env.hand.nodes.size == 0 and self._reward(env, terms) >= self.success_threshold


@dataclass(frozen=True)
class GarmentLift(Task):
    """Lift a T-shirt of the Berkeley Garment Library (``tshirt.obj``, 330 nodes, its modelled shape
    as the rest shape) off the table. Episodes start from the shirt lying crumpled on the table (a
    state computed once by dropping it face down, :mod:`isocloth.envs.garments`), turned about the
    vertical by a random angle in ``turn`` [deg] and scaled by a random factor in ``scale``.

    reward = the share of the garment's mass more than ``clearance`` [m] above the table, less that share at the
    start of the episode (0 at the start, however high the pile); success when the share is ≥ 0.99. Velocity control only; dt
    2.5 ms (the modelled shirt's sliver triangles; docs/envs.md). Keypoints: the landmarks of the mesh's
    annotation file (:func:`~isocloth.envs.garments.tshirt_landmarks`)."""

    size: float = 0.9
    dt: float = 0.0025
    success_threshold: float = 0.99
    name: str = "GarmentLift"
    clearance: float = 0.02
    turn: tuple = (-180.0, 180.0)
    scale: tuple = (0.95, 1.05)
    action_modes: tuple = ("velocity",)
    episode_seconds: tuple = (("velocity", 4.0),)

    @property
    def node_count(self) -> int:
        from isocloth.envs.garments import TSHIRT_NODES

        return TSHIRT_NODES

    def scene(self, rng: np.random.Generator, randomize: bool = True) -> dict:
        from isocloth.envs.garments import tshirt_scene

        f = self.fabric.sample(rng)
        if not randomize:
            f = self.fabric.sample(rng, middle=True)
        scale = _draw(rng, *self.scale, not randomize)
        turn = _draw(rng, *self.turn, not randomize)
        cfg = tshirt_scene(scale=scale, mu=f["mu"], thickness=self.thickness, dt=self.dt)
        cfg["cloth"].update({k: f[k] for k in ("rho", "delta", "alpha", "kappa")})
        cfg["name"] = self.name
        cfg["description"] = f"{self.name}: a T-shirt (Garment Library) lying on a table"
        cfg["_start"] = {"turn_deg": turn, "scale": scale}
        return cfg

    def start(self, env) -> None:
        """Put the shirt in its lying state (turned and scaled as drawn by :meth:`scene`)."""
        from isocloth.envs.garments import lying_positions
        from isocloth.state import State

        x = lying_positions(**env.start_options)
        env.state = State(x=x, v=np.zeros_like(x))

    def gripper_starts(self, env) -> np.ndarray:
        """(2, 3): 5 mm above the shirt's two shoulder seams (where a person would take it)."""
        from isocloth.envs.garments import shoulder_nodes

        return env.state.x[shoulder_nodes(env.model.initial_positions, env.start_options["scale"])] + [0.0, 0.0, 0.005]

    def keypoints(self) -> dict:
        """{name: node}: collar front and back, sleeve ends, hem ends and waist sides (the annotation's order)."""
        from isocloth.envs.garments import tshirt_landmarks

        return tshirt_landmarks()

    def reward_terms(self, env) -> dict:
        m = env.model.masses
        return {"off_table": lifted_fraction(env.state.x, m, self.clearance),
                "off_table_at_start": lifted_fraction(env.start_positions, m, self.clearance)}

    def combine(self, terms: dict) -> float:
        return terms["off_table"] - terms["off_table_at_start"]

    def success(self, env, terms: dict | None = None) -> bool:
        terms = self.reward_terms(env) if terms is None else terms
        return terms["off_table"] >= self.success_threshold
