"""isocloth run steps in a child process so that Ctrl-C stops it even inside a compiled routine that keeps
Python's interpreter lock (a CHOLMOD factorization of a large sheet lasts seconds)."""

import os
import signal
import threading
import time

import pytest

from isocloth.supervisor import ChildDied, Unresponsive, can_fork, supervised

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
    found = signal.getsignal(signal.SIGINT)  # SIG_IGN when the suite runs in the background of a script
    assert supervised(sorted, [3, 1, 2]) == [1, 2, 3]
    with pytest.raises(ValueError, match="bad scene value"):
        supervised(_fails)
    assert signal.getsignal(signal.SIGINT) == found  # handlers restored


def _dies() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _interrupted_twice() -> str:
    try:
        os.kill(os.getpid(), signal.SIGTERM)  # as from the parent
        time.sleep(60)
    except KeyboardInterrupt:
        os.kill(os.getpid(), signal.SIGTERM)  # the same signal from a batch system to the whole group
        time.sleep(0.2)  # writing the partial results
        return "saved"
    return "not stopped"


def _slow_to_save() -> str:
    try:
        time.sleep(60)
    except KeyboardInterrupt:
        time.sleep(60)  # responsive, but the writes take long
    return "saved"


def test_a_child_that_dies_is_named():
    with pytest.raises(ChildDied, match="killed by another process or out of memory"):
        supervised(_dies)


def test_a_second_sigterm_does_not_cut_the_writes_of_the_first():
    assert supervised(_interrupted_twice) == "saved"


def test_a_third_ctrl_c_stops_a_child_at_once():
    for delay in (0.5, 0.8, 1.1):
        _ctrl_c_after(delay)
    t = time.monotonic()
    with pytest.raises(Unresponsive, match="third stop request"):
        supervised(_slow_to_save)
    assert time.monotonic() - t < 10
