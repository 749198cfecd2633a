"""isocloth run steps in a child process so that Ctrl-C stops it even inside a compiled routine that keeps
Python's interpreter lock (a CHOLMOD factorization of a large sheet lasts seconds)."""

import os
import signal
import threading
import time

import pytest

from isocloth.supervisor import Unresponsive, can_fork, supervised

pytestmark = pytest.mark.skipif(not can_fork(), reason="runs in this process where fork is not available")


def _ctrl_c_after(seconds: float) -> None:
    threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT)).start()


def _waits_for_interrupt() -> str:
    try:
        time.sleep(60)
    except KeyboardInterrupt:
        return "stopped cleanly"
    return "not stopped"


def _keeps_the_interpreter_lock() -> None:
    sum(range(10 ** 12))  # a loop in C that neither releases the lock nor looks at signals, for minutes


def _fails() -> None:
    raise ValueError("bad scene value")


def test_ctrl_c_reaches_a_responsive_child_which_ends_cleanly():
    _ctrl_c_after(0.5)
    t = time.monotonic()
    assert supervised(_waits_for_interrupt) == "stopped cleanly"
    assert time.monotonic() - t < 10


def test_a_child_that_keeps_the_interpreter_lock_is_killed_within_the_grace():
    _ctrl_c_after(0.5)
    t = time.monotonic()
    with pytest.raises(Unresponsive):
        supervised(_keeps_the_interpreter_lock, grace=0.5)
    assert time.monotonic() - t < 0.5 + 0.5 + 1.0  # signal, grace, heartbeat and process start


def test_results_and_exceptions_come_back_from_the_child():
    assert supervised(sorted, [3, 1, 2]) == [1, 2, 3]
    with pytest.raises(ValueError, match="bad scene value"):
        supervised(_fails)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers restored
