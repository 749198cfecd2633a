"""A scripted policy folds a sheet in half through the ClothFold environment and writes the camera's video.

Two grippers close on the corners of the half x < 0, carry them along an arc (0.4 × the sheet's size high) over
the fold line to the corners of the half x > 0, and open; the environment's camera (RGB) is recorded at every control step.

Usage: python examples/scripted_fold.py [--out fold.mp4] [--nodes 5] [--size 0.2]

The default sheet is small: larger sheets folded onto themselves are slow (cloth–cloth friction,
docs/design/friction.md, "Known limits").
"""

from __future__ import annotations

import argparse

import imageio.v2 as imageio
import numpy as np

from isocloth.envs import ClothFoldEnv


def fold_actions(env: ClothFoldEnv, height: float):
    """Velocity actions (2 grippers) that follow an arc from x = −size/2 over the fold line x = 0 to half an
    element short of x = +size/2 (the fold's bend takes up that length), then open."""
    half = 0.5 * env.task.size
    end = half - 0.5 * env.task.size / (env.task.nodes - 1)
    dt = env.control_dt
    steps = int(np.ceil((np.pi * half + 2 * height) / (0.8 * env.max_speed * dt)))
    start = env._gripper_pos[:2].copy()
    for k in range(1, steps + 1):
        u = 0.5 * (1.0 - np.cos(np.pi * k / steps))  # eased progress along the arc
        target = start.copy()
        target[:, 0] = -half + (half + end) * u
        target[:, 2] = start[:, 2] + height * np.sin(np.pi * u)
        v = (target - env._gripper_pos[:2]) / (dt * env.max_speed)
        yield np.concatenate([np.append(v[0], 1.0), np.append(v[1], 1.0)])
    yield np.array([0, 0, 0, -1.0, 0, 0, 0, -1.0])  # open
    for _ in range(15):  # let the sheet come to rest
        yield np.array([0, 0, 0, -1.0, 0, 0, 0, -1.0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="fold.mp4")
    ap.add_argument("--nodes", type=int, default=5)
    ap.add_argument("--size", type=float, default=0.2)
    args = ap.parse_args()
    env = ClothFoldEnv(size=args.size, nodes=args.nodes, action_mode="velocity", grippers=2, randomize=False,
                       render_mode="rgb_array", image_size=(240, 320))
    env.reset(seed=0)
    frames = [env.render()]
    reward, info = None, {}
    for action in fold_actions(env, height=0.4 * args.size):
        _, reward, _, _, info = env.step(np.clip(action, -1.0, 1.0))
        frames.append(env.render())
    imageio.mimsave(args.out, frames, fps=1.0 / env.control_dt)
    print(f"reward {reward:.4f} m (success: {info['is_success']}); video: {args.out}")


if __name__ == "__main__":
    main()
