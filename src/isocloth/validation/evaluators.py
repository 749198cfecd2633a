"""Evaluating replays for a fit: in this process, over local processes, or on a Ray cluster; and
the evaluation cache (persisted as CSV so that an interrupted fit resumes).

An evaluator has ``map(list of parameter dicts) -> list of result dicts`` (ē, s̄, max d, wall time,
iterations, divergence) and ``close()``; :func:`make_evaluator` picks one.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from isocloth.validation.fitting import FitProblem

__all__ = ["SerialEvaluator", "ProcessEvaluator", "RayEvaluator", "make_evaluator", "EvaluationCache",
           "parameter_key", "rows_to_csv"]


def parameter_key(params: dict) -> tuple:
    """Hashable key of a parameter set (values rounded to 12 significant digits)."""
    return tuple(sorted((k, float(f"{float(v):.12g}")) for k, v in params.items()))


def _evaluate(problem: "FitProblem", replay, params: dict) -> dict:
    run = replay.run({**problem.fixed, **params}, kind=problem.kind)
    out = {k: float(v) for k, v in params.items()}
    out.update({"mean_error": run.loss, "mean_std": run.errors.mean_std, "max_dispersion": run.errors.max_dispersion,
                "wall_time": run.wall_time, "mean_iterations": run.mean_iterations, "diverged": run.diverged})
    return out


# ------------------------------------------------------------------ evaluators
class SerialEvaluator:
    """Evaluates in this process (no start-up cost; good for small fits and tests)."""

    workers = 1

    def __init__(self, problem: "FitProblem"):
        self.problem = problem
        self.replay = problem.build()

    def map(self, params_list: list[dict]) -> list[dict]:
        return [_evaluate(self.problem, self.replay, p) for p in params_list]

    def close(self) -> None:
        pass


_WORKER: dict = {}


def _worker_init(problem: "FitProblem") -> None:
    import os

    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    _WORKER["problem"] = problem
    _WORKER["replay"] = problem.build()


def _worker_eval(params: dict) -> dict:
    return _evaluate(_WORKER["problem"], _WORKER["replay"], params)


class ProcessEvaluator:
    """Evaluates over local worker processes (concurrent.futures.ProcessPoolExecutor); each worker
    builds the replay once."""

    def __init__(self, problem: "FitProblem", workers: int):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        self.workers = int(workers)
        self.pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx, initializer=_worker_init,
                                        initargs=(problem,))

    def map(self, params_list: list[dict]) -> list[dict]:
        return list(self.pool.map(_worker_eval, params_list))

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class _RayReplay:
    """A Ray actor holding one replay."""

    def __init__(self, problem: "FitProblem"):
        import os

        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, "1")
        self.problem = problem
        self.replay = problem.build()

    def evaluate(self, params: dict) -> dict:
        return _evaluate(self.problem, self.replay, params)


class RayEvaluator:
    """Evaluates on a Ray cluster (``ray.init(address=...)``), one actor per worker
    (:class:`isocloth.distributed.ActorMap`).

    Raises
    ------
    ImportError
        If Ray is not installed (with the command that installs it).
    """

    def __init__(self, problem: "FitProblem", address: str, workers: int | None = None):
        from isocloth.distributed import ActorMap

        self._actors = ActorMap(_RayReplay, (problem,), address=address, workers=workers,
                                purpose="evaluating on a cluster (--address; leave it out to use the local cores)")
        self.workers = self._actors.workers

    def map(self, params_list: list[dict]) -> list[dict]:
        return self._actors.map("evaluate", params_list)

    def close(self) -> None:
        self._actors.close()


def make_evaluator(problem: "FitProblem", *, workers: int | None = None, address: str | None = None):
    """An evaluator: Ray when ``address`` is given, else local processes (``workers`` > 1, default
    the CPU count), else this process.

    Raises
    ------
    ImportError
        For ``address`` without Ray installed.
    """
    import os

    if address:
        return RayEvaluator(problem, address, workers)
    n = workers if workers is not None else (os.cpu_count() or 1)
    if n <= 1:
        return SerialEvaluator(problem)
    return ProcessEvaluator(problem, n)


# ------------------------------------------------------------------ cache
class EvaluationCache:
    """Evaluations by parameter set, optionally persisted as CSV (atomic rewrite after each batch).

    Every row carries the ``problem`` fingerprint; rows of another problem found in the file are
    ignored (and dropped at the next save).

    Parameters
    ----------
    path : CSV file or None (memory only)
    fingerprint : FitProblem.fingerprint()
    """

    _TEXT = ("stage", "model", "problem")

    def __init__(self, path: str | Path | None = None, fingerprint: str = ""):
        self.path = Path(path) if path is not None else None
        self.fingerprint = fingerprint
        self.rows: list[dict] = []
        self._by_key: dict = {}
        self.resumed = 0
        if self.path is not None and self.path.exists():
            self._load()

    def _load(self) -> None:
        with open(self.path, newline="") as fh:
            for r in csv.DictReader(fh):
                if r.get("problem") != self.fingerprint:
                    continue
                row = {}
                for k, v in r.items():
                    if k in self._TEXT:
                        row[k] = v
                    elif k == "diverged":
                        row[k] = v == "True"
                    elif v is not None and v != "":
                        row[k] = float(v)
                self.rows.append(row)
                self._by_key[parameter_key({k[2:]: v for k, v in row.items() if k.startswith("p:")})] = row
        self.resumed = len(self.rows)

    def get(self, params: dict) -> dict | None:
        return self._by_key.get(parameter_key(params))

    def add(self, params: dict, result: dict, stage: str) -> dict:
        row = {"stage": stage}
        row.update({f"p:{k}": float(v) for k, v in params.items()})
        row.update({k: v for k, v in result.items() if k not in params})
        row["problem"] = self.fingerprint
        self.rows.append(row)
        self._by_key[parameter_key(params)] = row
        return row

    def save(self) -> None:
        if self.path is None:
            return
        from isocloth.io.atomic import atomic_write_text

        atomic_write_text(self.path, rows_to_csv(self.rows))


def rows_to_csv(rows: list[dict]) -> str:
    """CSV text of dict rows (union of the keys, in first-seen order); floats with repr."""
    keys: list[str] = []
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (repr(float(v)) if isinstance(v, (float, np.floating)) else v) for k, v in r.items()})
    return buf.getvalue()
