"""ClothHang: the sheet's middle carried over the bar by one pick-and-place and let go 10 cm above it,
over several draws of the sheet (a module of its own: its episodes take minutes and run beside the
other environment tests)."""

import numpy as np
import pytest

pytestmark = pytest.mark.slow

SEEDS = range(8)


def _episode(seed: int) -> dict:
    from isocloth.envs import ClothHangEnv

    env = ClothHangEnv(randomize=True)
    env.reset(seed=seed)
    bx = env.task.bar[0]
    _, reward, _, truncated, info = env.step(np.array([0.0, 0.0, bx / env.workspace, 0.0], dtype=np.float32))
    out = {"placed": info["is_success"], "truncated": truncated, "diverged": info.get("diverged", "")}
    if not truncated:  # picks nothing: waits, the sheet hangs by itself or slides off
        _, reward, _, _, info = env.step(np.array([0.99, 0.99, 0.99, 0.99], dtype=np.float32))
    out.update(reward=reward, hangs=bool(info["is_success"]) and not truncated)
    return out


def test_one_pick_and_place_hangs_the_sheet_over_the_bar_on_some_draws_and_never_diverges():
    """Which draws hang is chaotic (the sheet's landing on the bar, in the friction solution): on one
    machine the three draws tried hung; on another (2026-11-28) draws 2, 6 and 7 of 0–7 hang, the others
    slide off. With sub-steps down to dt/8 draws 0 and 1 diverged there while the sheet snapped over the
    bar at up to 5 m/s (Stepper.max_substep_depth, now dt/32)."""
    episodes = {seed: _episode(seed) for seed in SEEDS}
    assert not any(e["truncated"] for e in episodes.values()), episodes
    hanging = [s for s, e in episodes.items() if e["hangs"]]
    assert len(hanging) >= 1, episodes
    assert all(episodes[s]["reward"] >= 0.85 for s in hanging), episodes
