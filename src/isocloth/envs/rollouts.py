"""Episodes of a registered environment, run in this process or over a Ray cluster.

An episode is a function of the environment id, its keyword arguments, the seed, the number of steps
and the policy: :func:`run_rollouts` returns the same :class:`Rollout` objects, bit for bit, whether
they ran here or on Ray actors (one environment per actor, reset with each episode's seed).

A policy is a picklable callable ``policy(observation) -> action`` (a module-level function or an
object of a module-level class); ``None`` draws actions from the action space, seeded with the
episode's seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Rollout", "rollout", "run_rollouts"]


@dataclass
class Rollout:
    """One episode.

    Attributes
    ----------
    seed : int, the seed of ``reset`` and of the random actions
    observations : dict of (T + 1, ...) arrays, the observations from ``reset`` to the last step
    actions : (T, a) float32, the actions taken
    rewards : (T,) float64
    terminated, truncated : bool, how the episode ended (both False: it ran its ``steps``)
    success : bool, ``info["is_success"]`` of the last step (False without it)
    infos : list of the T step ``info`` dicts
    """

    seed: int
    observations: dict
    actions: np.ndarray
    rewards: np.ndarray
    terminated: bool = False
    truncated: bool = False
    success: bool = False
    infos: list = field(default_factory=list, repr=False)

    @property
    def length(self) -> int:
        """Number of steps taken."""
        return int(self.rewards.size)


def _episode(env, seed: int, steps: int, policy) -> Rollout:
    obs, _ = env.reset(seed=int(seed))
    env.action_space.seed(int(seed))
    observed, actions, rewards, infos = [obs], [], [], []
    terminated = truncated = False
    for _ in range(int(steps)):
        a = env.action_space.sample() if policy is None else policy(obs)
        obs, r, terminated, truncated, info = env.step(a)
        observed.append(obs)
        actions.append(np.asarray(a, dtype=np.float32))
        rewards.append(float(r))
        infos.append(info)
        if terminated or truncated:
            break
    stacked = {k: np.stack([o[k] for o in observed]) for k in observed[0]}
    return Rollout(seed=int(seed), observations=stacked,
                   actions=np.array(actions, dtype=np.float32).reshape(len(actions), *env.action_space.shape),
                   rewards=np.array(rewards, dtype=np.float64), terminated=bool(terminated),
                   truncated=bool(truncated), success=bool(infos[-1].get("is_success", False)) if infos else False,
                   infos=infos)


def _make(env_id: str, env_kwargs: dict | None):
    import gymnasium as gym

    import isocloth.envs  # noqa: F401  (registers the isocloth/ ids in this process)

    return gym.make(env_id, **(env_kwargs or {}))


def rollout(env_id: str, seed: int, steps: int, policy=None, env_kwargs: dict | None = None) -> Rollout:
    """One episode of ``gym.make(env_id, **env_kwargs)`` from ``reset(seed=seed)``, at most ``steps``
    steps (fewer when it terminates or is truncated).

    Raises
    ------
    gymnasium.error.Error for an unknown ``env_id``; ValueError for ``steps`` < 1.
    """
    if int(steps) < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    env = _make(env_id, env_kwargs)
    try:
        return _episode(env, seed, steps, policy)
    finally:
        env.close()


class _RolloutWorker:
    """A Ray actor holding one environment."""

    def __init__(self, env_id: str, env_kwargs: dict | None, steps: int, policy):
        import os

        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, "1")
        self.env = _make(env_id, env_kwargs)
        self.steps, self.policy = steps, policy

    def run(self, seed: int) -> Rollout:
        return _episode(self.env, seed, self.steps, self.policy)


def run_rollouts(env_id: str, seeds, steps: int, policy=None, env_kwargs: dict | None = None, *,
                 address: str | None = None, workers: int | None = None) -> list[Rollout]:
    """One episode per seed (see :func:`rollout`), in the order of ``seeds``.

    Parameters
    ----------
    env_id : a registered id, e.g. ``"isocloth/ClothFold-v0"``
    seeds : sequence of int
    steps : int ≥ 1, the most steps of an episode
    policy : picklable callable observation -> action, or None (random actions)
    env_kwargs : keyword arguments of ``gym.make``
    address : None runs the episodes here, one after the other; a Ray address (``"auto"``,
        ``"ray://host:10001"``, ``"local"`` for a new local instance) runs them on Ray actors
    workers : actors on Ray (default: the cluster's CPUs)

    Raises
    ------
    ValueError for ``steps`` < 1; ImportError for ``address`` without Ray installed.
    """
    seeds = [int(s) for s in seeds]
    if int(steps) < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if address is None:
        env = _make(env_id, env_kwargs)
        try:
            return [_episode(env, s, steps, policy) for s in seeds]
        finally:
            env.close()
    from isocloth.distributed import ActorMap

    if not seeds:
        return []
    actors = ActorMap(_RolloutWorker, (env_id, env_kwargs, int(steps), policy), address=address, workers=workers,
                      limit=len(seeds), purpose="running episodes on a cluster (address)")
    try:
        return actors.map("run", seeds)
    finally:
        actors.close()
