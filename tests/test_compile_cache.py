"""Compiled kernels come from numba's on-disk cache: a second run compiles nothing."""

import json
import subprocess
import sys

RUN = """
import json, sys
from isocloth.scenes.loader import load_scene
for name in ("hang-a2", "drop-fold", "tablecloth"):  # projection, contacts, self-collisions, friction
    sc = load_scene(name)
    s = sc.initial_state
    for _ in range(2):
        s, _ = sc.stepper.step(s)
from numba.core.caching import NullCache
from numba.core.registry import CPUDispatcher
compiled, uncached, used = [], [], 0
for mod in list(sys.modules.values()):
    if getattr(mod, "__name__", "").startswith("isocloth"):
        for obj in vars(mod).values():
            if isinstance(obj, CPUDispatcher):
                used += bool(obj.overloads)
                if isinstance(obj._cache, NullCache):
                    uncached.append(obj.__qualname__)
                if len(obj.overloads) > len(obj.stats.cache_hits):
                    compiled.append(obj.__qualname__)
print(json.dumps({"compiled": sorted(set(compiled)), "uncached": sorted(set(uncached)), "used": used}))
"""


def _run() -> dict:
    out = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, timeout=900, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_second_run_compiles_no_kernel():
    _run()  # compiles and caches whatever an earlier run (or setup.sh's warm-up) has not
    second = _run()
    assert second["used"] >= 10
    assert second["uncached"] == [], "kernels without cache=True are compiled in every process"
    assert second["compiled"] == []
