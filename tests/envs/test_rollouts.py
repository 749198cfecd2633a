"""Episodes run here and on Ray actors (isocloth.envs.rollouts)."""

import numpy as np
import pytest

from isocloth.envs import rollout, run_rollouts

ENV = "isocloth/ClothFold-v0"
KW = {"nodes": 5, "action_mode": "velocity", "grippers": 2}


def _same(a, b):
    assert a.seed == b.seed and a.length == b.length
    assert a.terminated == b.terminated and a.truncated == b.truncated and a.success == b.success
    assert np.array_equal(a.actions, b.actions) and np.array_equal(a.rewards, b.rewards)
    assert a.observations.keys() == b.observations.keys()
    for k in a.observations:
        assert np.array_equal(a.observations[k], b.observations[k]), k


def test_a_rollout_records_every_step_and_is_a_function_of_its_seed():
    r = rollout(ENV, seed=3, steps=3, env_kwargs=KW)
    assert r.length == 3 and r.actions.shape == (3, 8) and r.rewards.shape == (3,)
    assert r.observations["positions"].shape == (4, 25, 3) and r.observations["grippers"].shape == (4, 2, 4)
    # the actions were taken: the grippers moved by them (velocity × control time, above the table)
    moved = np.diff(r.observations["grippers"][:, :, :3], axis=0)
    assert np.abs(moved).max() > 1e-3
    _same(r, rollout(ENV, seed=3, steps=3, env_kwargs=KW))
    other = rollout(ENV, seed=4, steps=3, env_kwargs=KW)
    assert not np.array_equal(other.actions, r.actions)


def test_a_policy_drives_the_rollout():
    def lift(obs):  # both grippers closed, moving up
        return np.array([0.0, 0.0, 1.0, 1.0] * 2, dtype=np.float32)

    r = rollout(ENV, seed=0, steps=2, policy=lift, env_kwargs=KW)
    assert np.array_equal(r.actions, np.tile(lift(None), (2, 1)))
    z = r.observations["positions"][:, :, 2].max(axis=1)
    assert z[-1] > z[0] + 0.01  # the grasped corners went up


def test_rollout_arguments_are_checked():
    with pytest.raises(ValueError, match="steps must be >= 1"):
        run_rollouts(ENV, [0], steps=0)
    assert run_rollouts(ENV, [], steps=1, address="local") == []


def test_episodes_on_a_local_ray_instance_equal_the_sequential_ones(ray_local):
    """Four episodes on two Ray actors: bit for bit the episodes run one after the other here."""
    seeds = [0, 1, 2, 3]
    here = run_rollouts(ENV, seeds, steps=2, env_kwargs=KW)
    there = run_rollouts(ENV, seeds, steps=2, env_kwargs=KW, address=ray_local, workers=2)
    assert [r.seed for r in there] == seeds
    for a, b in zip(here, there):
        _same(a, b)
