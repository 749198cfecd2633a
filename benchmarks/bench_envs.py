"""Robot-learning interface: environment steps per second, camera captures and vector environments.

Measured (process CPU time, one BLAS thread):

- env steps/s of ``ClothFold`` and ``ClothFlatten`` (default 0.3 m sheet of 9 × 9 nodes on a table, self-collisions)
  in velocity mode (control step 0.05 s) and with the pick-and-place primitive, with positions only and with RGB +
  depth + point cloud observations (64 × 64);
- a 640 × 480 depth capture (with mask, without colour) of the cloth on the table (``CameraSensor.capture``), against
  the same capture with 16 × 16 pixels in the same run (the fixed cost);
- a synchronous and an asynchronous vector environment of 2 copies against 2 sequential envs (wall time:
  the async copies run in their own processes, on the machine's 2 cores);
- ``ClothHang`` (velocity and pick and place) and ``GarmentLift`` (velocity);
- episodes through ``isocloth.envs.run_rollouts`` on a local Ray instance with 1 and 2 workers against the
  same episodes run sequentially in this process (wall time, actor start-up included), when Ray is installed.

Usage: python benchmarks/bench_envs.py [--steps N] [--pick-place-steps N] [--only fold flatten hang lift camera vector ray]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import configure_threads  # noqa: E402

THREADS = configure_threads()

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def _env_rate(make, steps: int, seed: int = 0) -> tuple[float, float]:
    """(env steps per CPU second, simulated seconds per env step) over ``steps`` steps after a reset."""
    env = make()
    env.reset(seed=seed)
    env.action_space.seed(seed)
    t_sim = env.state.t
    t0 = time.process_time()
    for _ in range(steps):
        env.step(env.action_space.sample())
    cpu = time.process_time() - t0
    return steps / cpu, (env.state.t - t_sim) / steps


def _camera(pixels: tuple[int, int], repeats: int = 5) -> float:
    """CPU ms of one capture of the default fold sheet with a camera of ``pixels`` (w, h)."""
    from isocloth.envs import ClothFoldEnv
    from isocloth.sensors import CameraSensor, PinholeCamera

    env = ClothFoldEnv(action_mode="velocity")
    env.reset(seed=0)
    w, h = pixels
    cam = PinholeCamera.from_fov(w, h, 69.0, 54.0).looking_at((0.0, -0.4, 0.5), (0.0, 0.0, 0.0))
    sensor = CameraSensor(env.model, cam)
    sensor.capture(env.state.x)
    t0 = time.process_time()
    for _ in range(repeats):
        sensor.capture(env.state.x, rgb=False)
    return 1000.0 * (time.process_time() - t0) / repeats


def _vector(steps: int) -> dict:
    import gymnasium as gym

    from isocloth.envs import ClothFoldEnv

    def make():
        return ClothFoldEnv(action_mode="velocity")

    action = np.array([0.2, -0.1, 0.5, 1.0], dtype=np.float32)
    out = {}
    t0 = time.perf_counter()
    for seed in (0, 1):
        env = make()
        env.reset(seed=seed)
        for _ in range(steps):
            env.step(action)
    out["sequential"] = time.perf_counter() - t0
    for name, cls in (("sync", gym.vector.SyncVectorEnv), ("async", gym.vector.AsyncVectorEnv)):
        venv = cls([make, make])
        venv.reset(seed=[0, 1])
        t0 = time.perf_counter()
        for _ in range(steps):
            venv.step(np.stack([action, action]))
        out[name] = time.perf_counter() - t0
        venv.close()
    return out


def _ray(steps: int, episodes: int = 4) -> dict | None:
    """Wall seconds of ``episodes`` ClothFold velocity episodes of ``steps`` steps: sequential here, and on a
    local Ray instance with 1 and 2 workers (``run_rollouts``, the actors' start-up included)."""
    try:
        import ray
    except ImportError:
        return None
    from isocloth.envs import run_rollouts

    env_id, kw, seeds = "isocloth/ClothFold-v0", {"action_mode": "velocity"}, list(range(episodes))
    out = {}
    t0 = time.perf_counter()
    run_rollouts(env_id, seeds, steps, env_kwargs=kw)
    out["sequential"] = time.perf_counter() - t0
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        for workers in (1, 2):
            t0 = time.perf_counter()
            run_rollouts(env_id, seeds, steps, env_kwargs=kw, address="local", workers=workers)
            out[f"ray{workers}"] = time.perf_counter() - t0
    finally:
        ray.shutdown()
    return out


SECTIONS = ("fold", "flatten", "hang", "lift", "camera", "vector", "ray")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20, help="velocity-mode env steps per measurement")
    ap.add_argument("--pick-place-steps", type=int, default=2, help="pick-and-place env steps per measurement")
    ap.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    args = ap.parse_args()
    from isocloth.envs import ClothFlattenEnv, ClothFoldEnv, ClothHangEnv, GarmentLiftEnv

    print(f"BLAS threads: {THREADS}")
    images = ("positions", "rgb", "depth", "point_cloud")
    envs = {"fold": ("ClothFold", ClothFoldEnv, ("velocity", "pick_place")),
            "flatten": ("ClothFlatten", ClothFlattenEnv, ("velocity", "pick_place")),
            "hang": ("ClothHang", ClothHangEnv, ("velocity", "pick_place")),
            "lift": ("GarmentLift", GarmentLiftEnv, ("velocity",))}
    for key, (name, cls, modes) in envs.items():
        if key not in args.only:
            continue
        for mode in modes:
            steps = args.steps if mode == "velocity" else args.pick_place_steps
            for obs in (("positions",), images):
                rate, sim = _env_rate(lambda: cls(action_mode=mode, observations=obs), steps)
                print(f"{name:13s} {mode:10s} {'images' if len(obs) > 1 else 'positions':9s}: {rate:8.3f} env steps/s "
                      f"({sim:.2f} s simulated per step, {rate * sim:.3f}x real time)", flush=True)
    if "camera" in args.only:
        full, small = _camera((640, 480)), _camera((16, 16))
        print(f"camera 640x480 depth capture: {full:.1f} ms (16x16: {small:.1f} ms; ratio {full / small:.1f})")
    if "vector" in args.only:
        v = _vector(args.steps)
        print(f"vector envs, 2 copies x {args.steps} velocity steps (wall s): sequential {v['sequential']:.2f}, "
              f"sync {v['sync']:.2f} (ratio {v['sequential'] / v['sync']:.2f}), async {v['async']:.2f} "
              f"(ratio {v['sequential'] / v['async']:.2f})")
    if "ray" in args.only:
        r = _ray(args.steps)
        if r is None:
            print("ray: not installed (pip install ray)")
        else:
            print(f"4 ClothFold episodes x {args.steps} velocity steps (wall s, actor start-up included): sequential "
                  f"{r['sequential']:.2f}, Ray 1 worker {r['ray1']:.2f} (ratio {r['sequential'] / r['ray1']:.2f}), "
                  f"Ray 2 workers {r['ray2']:.2f} (ratio {r['sequential'] / r['ray2']:.2f})")


if __name__ == "__main__":
    main()
