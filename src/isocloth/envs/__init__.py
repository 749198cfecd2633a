"""Gymnasium environments (registered as ``isocloth/ClothFlatten-v0``, ``isocloth/ClothFold-v0``,
``isocloth/ClothHang-v0`` and ``isocloth/GarmentLift-v0``) and their rollouts, here or on Ray."""

import gymnasium as gym

from isocloth.envs.cloth_env import (ACTION_MODES, OBSERVATIONS, ClothEnv, ClothFlattenEnv, ClothFoldEnv, ClothHangEnv,
                                     GarmentLiftEnv)
from isocloth.envs.rollouts import Rollout, rollout, run_rollouts
from isocloth.envs.tasks import (FIXED_SHEET, ClothFlatten, ClothFold, ClothHang, FabricRanges, GarmentLift, SheetRanges,
                                 Task, coverage, fold_distance, hang_balance, lifted_fraction)

__all__ = ["ClothEnv", "ClothFlattenEnv", "ClothFoldEnv", "ClothHangEnv", "GarmentLiftEnv", "ClothFlatten", "ClothFold",
           "ClothHang", "GarmentLift", "FabricRanges", "SheetRanges", "FIXED_SHEET", "Task", "coverage", "fold_distance",
           "hang_balance", "lifted_fraction", "ACTION_MODES", "OBSERVATIONS", "Rollout", "rollout", "run_rollouts"]

# episodes end by simulated time (Task.episode_length per action mode), inside the environments
for _name, _entry in (("ClothFlatten-v0", "isocloth.envs:ClothFlattenEnv"), ("ClothFold-v0", "isocloth.envs:ClothFoldEnv"),
                      ("ClothHang-v0", "isocloth.envs:ClothHangEnv"), ("GarmentLift-v0", "isocloth.envs:GarmentLiftEnv")):
    if f"isocloth/{_name}" not in gym.registry:
        gym.register(id=f"isocloth/{_name}", entry_point=_entry)
