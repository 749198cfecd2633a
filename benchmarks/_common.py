"""Shared helpers of the benchmark scripts (not part of the isocloth package).

``configure_threads()`` must run before numpy is imported: it reads ``--blas-threads N`` from
sys.argv and exports the usual BLAS/OpenMP thread variables (default 1, see README.md: with the
library default of one OpenBLAS thread per core, a second busy process on a 2-core machine makes
small dense factorizations stall for ~100 ms at a time). ``--blas-threads 0`` leaves them alone.
"""

from __future__ import annotations

import os
import sys

_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def configure_threads(default: int = 1) -> str:
    """Set BLAS threads from ``--blas-threads N`` (before importing numpy); returns a description."""
    n = default
    argv = sys.argv
    for i, a in enumerate(argv):
        if a == "--blas-threads" and i + 1 < len(argv):
            n = int(argv[i + 1])
        elif a.startswith("--blas-threads="):
            n = int(a.split("=", 1)[1])
    if "numpy" in sys.modules:
        raise RuntimeError("configure_threads() must be called before numpy is imported")
    if n > 0:
        for v in _THREAD_VARS:
            os.environ[v] = str(n)
        return f"{n} (OPENBLAS/OMP_NUM_THREADS={n})"
    cur = {v: os.environ[v] for v in _THREAD_VARS if v in os.environ}
    return f"library default {cur or '(one per core)'}"


def machine_info() -> dict:
    """CPU model, cores, versions and the UTC date (for RESULTS.md)."""
    import datetime
    import importlib.metadata as md
    import platform

    import numpy as np
    import scipy

    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count()

    def ver(pkg):
        try:
            return md.version(pkg)
        except md.PackageNotFoundError:
            return "not installed"

    try:
        blas = np.__config__.CONFIG["Build Dependencies"]["blas"]
        blas = f"{blas.get('name')} {blas.get('version')}"
    except Exception:  # pragma: no cover - depends on the numpy build
        blas = "?"
    return {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cores": f"{os.cpu_count()} logical, {affinity} usable",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "numba": ver("numba"),
        "cholespy": ver("cholespy"),
        "scikit-sparse": ver("scikit-sparse"),
        "blas": blas,
        "load_avg": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def print_machine(threads: str) -> None:
    info = machine_info()
    print("machine: " + info["cpu"] + f" ({info['cores']} cores), load average {info['load_avg']}")
    print(f"date:    {info['date_utc']}")
    print(f"python {info['python']}, numpy {info['numpy']}, scipy {info['scipy']}, numba {info['numba']}, "
          f"cholespy {info['cholespy']}, scikit-sparse {info['scikit-sparse']}, BLAS {info['blas']}")
    print(f"BLAS threads: {threads}")


def sheet_config(name: str, width: float, height: float, nx: int, ny: int, *, dt: float, duration: float,
                 fabric: str = "light-cotton", sigma: float = 0.0005, top_z: float = 1.0) -> dict:
    """Scene dict: a vertical (x-z plane) quad sheet whose two top corners are held fixed."""
    return {
        "name": name,
        "description": f"{width} x {height} m quad sheet, {nx}x{ny} nodes, two top corners fixed",
        "cloth": {
            "mesh": {"generator": "rectangle", "width": width, "height": height, "nx": nx, "ny": ny,
                     "element": "quad", "plane": "xz"},
            "placement": {"translate": [0.0, 0.0, top_z - height / 2]},
            "noise": {"sigma": sigma, "seed": 0},
            "fabric": fabric,
        },
        "grasps": [{"name": "corners", "nodes": {"nearest": [[-width / 2, 0.0, top_z], [width / 2, 0.0, top_z]]},
                    "trajectory": {"type": "fixed"}}],
        "simulation": {"dt": dt, "duration": duration, "tolerance": 1e-3},
        "output": {"video": "none"},
    }


def run_timed(stepper, state, until: float, observe):
    """Step ``state`` with ``stepper`` until ``until`` [s], calling ``observe(state, info)`` after
    every step; returns (last state, CPU seconds spent stepping (process time, ``observe``
    excluded), status: "ok" or the name of the exception that ended the run: a diverged run is a
    result too)."""
    import time

    cpu, status = 0.0, "ok"
    try:
        while state.t < until - 1e-9:
            t0 = time.process_time()
            state, info = stepper.step(state)
            cpu += time.process_time() - t0
            observe(state, info)
    except Exception as exc:  # noqa: BLE001 - reported in the table
        status = type(exc).__name__
    return state, cpu, status


def build_sheet(*args, **kwargs):
    """A built :class:`isocloth.scenes.loader.Scene` for :func:`sheet_config`."""
    from isocloth.scenes.loader import build_scene, config_from_dict

    return build_scene(config_from_dict(sheet_config(*args, **kwargs)))


class EdgeStretch:
    """Edge strain len/rest_len − 1 over all mesh edges (quad sides), tracked frame by frame.

    Attributes (over all frames seen): ``peak`` (largest stretch), ``min`` (most negative, i.e.
    compression), ``peak_boundary`` (largest stretch of a boundary edge), ``mean_abs`` (mean over
    frames of the mean |strain| of all edges).
    """

    def __init__(self, mesh):
        import numpy as np

        from isocloth.mesh.topology import edge_face_counts, edges

        self.e = edges(mesh)
        self.boundary = edge_face_counts(mesh) == 1
        rest = mesh.rest_vertices if mesh.rest_vertices is not None else mesh.vertices
        self.rest = np.linalg.norm(rest[self.e[:, 0]] - rest[self.e[:, 1]], axis=1)
        self.peak = -np.inf
        self.min = np.inf
        self.peak_boundary = -np.inf
        self._abs_sum = 0.0
        self._frames = 0

    def update(self, x) -> None:
        import numpy as np

        r = np.linalg.norm(x[self.e[:, 0]] - x[self.e[:, 1]], axis=1) / self.rest - 1.0
        self.peak = max(self.peak, float(r.max()))
        self.min = min(self.min, float(r.min()))
        if self.boundary.any():
            self.peak_boundary = max(self.peak_boundary, float(r[self.boundary].max()))
        self._abs_sum += float(np.abs(r).mean())
        self._frames += 1

    @property
    def mean_abs(self) -> float:
        return self._abs_sum / max(self._frames, 1)


# Projection strategies compared by the benchmarks (SolverProjection keyword arguments).
# "before" reproduces the solver as it was before factor reuse (commit a2f9d68): a new
# factorization every iteration, CHOLMOD choosing mode and ordering, strictly monotone line
# search -- bit for bit (checked on the 8x8 dense and 20x20 sparse sheets).
# "sub2"/"sub4"/"sub8": the default solver with 2 / 4 / 8 equal sub-steps per step (``Stepper.substeps``; the
# key "substeps" is a Stepper option, not a SolverProjection one).
STRATEGIES = {
    "new": {},
    "before": {"reuse_factor": False, "merit_growth": 1.0, "cholmod_mode": "cholmod", "ordering": "default"},
    "sub2": {"substeps": 2},
    "sub4": {"substeps": 4},
    "sub8": {"substeps": 8},
}


def use_strategy(stepper, strategy: str):
    """Replace the stepper's SolverProjection by one with ``STRATEGIES[strategy]`` (same tolerance,
    iteration cap and metric choice) and set its sub-steps (1 unless the strategy says); returns
    the stepper."""
    from dataclasses import replace

    opts = dict(STRATEGIES[strategy])
    stepper.substeps = int(opts.pop("substeps", 1))
    stepper.solver = replace(stepper.solver, **opts)
    return stepper
