"""Gymnasium environments (registered as ``isocloth/ClothFlatten-v0`` and ``isocloth/ClothFold-v0``)."""

import gymnasium as gym

from isocloth.envs.cloth_env import ACTION_MODES, OBSERVATIONS, ClothEnv, ClothFlattenEnv, ClothFoldEnv
from isocloth.envs.tasks import ClothFlatten, ClothFold, FabricRanges, Task, coverage, fold_distance

__all__ = ["ClothEnv", "ClothFlattenEnv", "ClothFoldEnv", "ClothFlatten", "ClothFold", "FabricRanges", "Task",
           "coverage", "fold_distance", "ACTION_MODES", "OBSERVATIONS"]

for _name, _entry, _steps in (("ClothFlatten-v0", "isocloth.envs:ClothFlattenEnv", 10),
                              ("ClothFold-v0", "isocloth.envs:ClothFoldEnv", 5)):
    if f"isocloth/{_name}" not in gym.registry:
        gym.register(id=f"isocloth/{_name}", entry_point=_entry, max_episode_steps=_steps)
