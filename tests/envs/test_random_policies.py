"""Learning signal: a random policy's reward varies between episodes in every environment (slow)."""

import gymnasium as gym
import numpy as np
import pytest

import isocloth.envs  # noqa: F401  (registers the ids)

SMALL = {"size": 0.2, "nodes": 5}


@pytest.mark.slow
@pytest.mark.parametrize("env_id, mode", [("ClothFlatten-v0", "velocity"), ("ClothFold-v0", "velocity"),
                                          ("ClothHang-v0", "velocity"), ("GarmentLift-v0", "velocity")])
def test_a_random_policy_sees_a_reward_that_varies(env_id, mode):
    """Over 20 episodes from the same start (``randomize=False``), the reward after a random first action is not
    constant (signal for learning), in every environment's velocity mode (a pick-and-place action lasts 1-4 s of
    simulation: 20 of them take minutes); about a minute for the garment."""
    # a step can stall the contact projection for minutes (a GarmentLift step, a pick-and-place carry through
    # the sheet): the step budget ends such an episode at the state reached, whose reward counts as well
    kw = {} if env_id == "GarmentLift-v0" else dict(SMALL)
    if env_id == "ClothFlatten-v0":
        kw["crumple"] = False  # the same flat start: only the action varies (a crumpled reset costs seconds)
    env = gym.make(f"isocloth/{env_id}", **kw, action_mode=mode, step_budget=5.0, randomize=False)
    rewards = []
    for seed in range(20):
        env.reset(seed=seed)
        env.action_space.seed(seed)
        rewards.append(env.step(env.action_space.sample())[1])
    env.close()
    assert np.ptp(rewards) > 1e-6, rewards
