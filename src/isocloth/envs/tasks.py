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

__all__ = ["FabricRanges", "Task", "ClothFlatten", "ClothFold", "coverage", "fold_distance"]


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

    def sample(self, rng: np.random.Generator) -> dict:
        """One value of each parameter (uniform; log-uniform for κ)."""
        out = {}
        for name in ("rho", "delta", "alpha", "mu"):
            lo, hi = getattr(self, name)
            out[name] = float(rng.uniform(lo, hi))
        lo, hi = self.kappa
        out["kappa"] = float(np.exp(rng.uniform(np.log(lo), np.log(hi)))) if lo > 0 else float(rng.uniform(lo, hi))
        return out


def coverage(mask: np.ndarray, height: float, fx: float, fy: float, rest_area: float) -> float:
    """Area of the cloth seen from above, as a fraction of its rest area: pixels labelled cloth in a
    top-down ``mask`` times the footprint (h/f_x)(h/f_y) of a pixel on the table at ``height`` [m]
    below the camera."""
    return float(np.count_nonzero(mask == 1) * (height / fx) * (height / fy) / rest_area)


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
    thickness: float = 0.003
    dt: float = 0.01
    success_threshold: float = 0.0
    name: str = "task"

    def scene(self, rng: np.random.Generator) -> dict:
        """The scene-file dictionary of an episode (fabric drawn from :attr:`fabric`)."""
        if self.nodes < 3 or not self.size > 0:
            raise ValueError(f"a task sheet needs size > 0 m and at least 3 x 3 nodes, got {self.size}, {self.nodes}")
        f = self.fabric.sample(rng)
        return {
            "name": self.name, "description": f"{self.name}: a {self.size:g} m square sheet on a table",
            "cloth": {"mesh": {"generator": "rectangle", "width": self.size, "height": self.size,
                               "nx": self.nodes, "ny": self.nodes, "element": "quad", "plane": "xy"},
                      "placement": {"translate": [0.0, 0.0, self.thickness]}, "fabric": "light-cotton",
                      # 0.5 mm of rest-shape noise, as in the built-in scenes: no real sheet lies exactly flat
                      "noise": {"sigma": 0.0005, "seed": int(rng.integers(2 ** 31))},
                      "rho": f["rho"], "delta": f["delta"], "alpha": f["alpha"], "kappa": f["kappa"]},
            "obstacles": [{"type": "plane", "name": "table", "mu": f["mu"]}],
            "self_collision": {"thickness": self.thickness, "mu": 0.3},
            "simulation": {"dt": self.dt, "duration": 1.0},
            "output": {"video": "none"},
        }

    def reward(self, env) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def success(self, env) -> bool:
        return self.reward(env) >= self.success_threshold


@dataclass(frozen=True)
class ClothFlatten(Task):
    """Spread a crumpled sheet: reward = its coverage of the table seen from above (1 when flat);
    success at coverage ≥ 0.95. Episodes start from a sheet dropped after a random corner lift."""

    success_threshold: float = 0.95
    name: str = "ClothFlatten"
    crumple: bool = True

    def reward(self, env) -> float:
        return env.coverage()


@dataclass(frozen=True)
class ClothFold(Task):
    """Fold the sheet in half along its middle line x = 0, the half x < 0 onto the half x > 0:
    reward = −(mean distance between mirrored node pairs + 1.2 × mean displacement of the half x > 0
    from its start) [m] (SoftGym's fold reward); success at reward ≥ −0.02 m."""

    success_threshold: float = -0.02
    name: str = "ClothFold"

    def reward(self, env) -> float:
        x, pairs, x0 = env.state.x, env.fold_pairs, env.start_positions
        moved = float(np.linalg.norm(x[pairs[:, 1]] - x0[pairs[:, 1]], axis=1).mean())
        return -(fold_distance(x, pairs) + 1.2 * moved)
