"""Wall-clock budgets: a deadline that the solvers' iteration loops check.

A caller that must not stall (an environment step of a learning run, a rollout worker) runs its
steps inside :func:`wall_clock_budget`; the fast projection, the contact projection's passes and the
active-set QPs call :func:`check_budget` once per iteration, which raises
:class:`StepBudgetExceeded` once the deadline has passed. A step is a function of its input state,
so the caller keeps the last state it completed. Budgets nest (the earliest deadline holds) and are
per thread.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

__all__ = ["StepBudgetExceeded", "wall_clock_budget", "check_budget"]

_local = threading.local()


class StepBudgetExceeded(Exception):
    """The wall-clock budget of :func:`wall_clock_budget` ran out inside a step."""


@contextmanager
def wall_clock_budget(seconds: float | None):
    """Run the enclosed steps with a budget of ``seconds`` [s] of wall-clock time (None: no budget).

    Raises
    ------
    ValueError
        If ``seconds`` is not a positive number.
    StepBudgetExceeded
        From inside the enclosed code, at the first check after the deadline.
    """
    if seconds is None:
        yield
        return
    seconds = float(seconds)
    if not seconds > 0:
        raise ValueError(f"the wall-clock budget must be a positive number of seconds, got {seconds}")
    previous = getattr(_local, "deadline", None)
    deadline = time.perf_counter() + seconds
    _local.deadline = (deadline, seconds) if previous is None or deadline < previous[0] else previous
    try:
        yield
    finally:
        _local.deadline = previous


def check_budget() -> None:
    """Raise :class:`StepBudgetExceeded` if the current thread's budget has run out (no budget: nothing)."""
    current = getattr(_local, "deadline", None)
    if current is not None and time.perf_counter() > current[0]:
        raise StepBudgetExceeded(f"the wall-clock budget of {current[1]:g} s ran out")
