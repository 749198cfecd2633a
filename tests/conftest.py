"""Test-wide settings: one BLAS thread (small dense factorizations; see benchmarks/RESULTS.md)."""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


import pytest  # noqa: E402


@pytest.fixture
def sheet_660():
    """Factory: substeps -> scene dict of the 660-node benchmark sheet (0.5 × 0.8 m light cotton, 20 × 33
    quads, hanging in the x-z plane from its two top corner nodes, dt = 1/60 s; benchmarks/_common.py)."""

    def make(substeps: int = 1, duration: float = 1.0) -> dict:
        return {"name": "sheet-660", "cloth": {
            "mesh": {"generator": "rectangle", "width": 0.5, "height": 0.8, "nx": 20, "ny": 33, "element": "quad",
                     "plane": "xz"},
            "placement": {"translate": [0.0, 0.0, 0.6]}, "noise": {"sigma": 0.0005, "seed": 0},
            "fabric": "light-cotton"},
            "grasps": [{"nodes": {"nearest": [[-0.25, 0.0, 1.0], [0.25, 0.0, 1.0]]}, "trajectory": {"type": "fixed"}}],
            "simulation": {"dt": 1 / 60, "duration": duration, "substeps": substeps}, "output": {"video": "none"}}

    return make


@pytest.fixture
def interrupt_at():
    """Factory: (stepper, n) -> make the stepper's n-th ``step`` call raise KeyboardInterrupt
    (Ctrl-C in the middle of a run); the other calls step as before."""

    def install(stepper, n: int) -> None:
        real_step, calls = stepper.step, {"n": 0}

        def step(state, *a, **k):
            calls["n"] += 1
            if calls["n"] == n:
                raise KeyboardInterrupt
            return real_step(state, *a, **k)

        stepper.step = step

    return install


@pytest.fixture(scope="session")
def ray_local():
    """A local Ray instance (2 CPUs) for the tests of the Ray runners; the address to give them.
    Skips, with the install command, where Ray is not installed."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install ray)")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield "local"
    ray.shutdown()
