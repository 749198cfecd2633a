"""Run a long computation in a child process that Ctrl-C stops within about a second.

Python handles a signal only between bytecodes of its main thread. A compiled routine that keeps the
interpreter lock does not return to it: CHOLMOD's factorization through scikit-sparse does not release
the lock, and on a sheet of 100,000 nodes one factorization lasts seconds. ``isocloth run`` therefore
steps in a forked child process; this parent only waits. On Ctrl-C or SIGTERM the parent asks the child
to stop (SIGTERM, which the runner turns into the interruption that writes the partial results), and
stops it outright when the child's interpreter has not run for ``grace`` seconds since: the child's
heartbeat thread (which needs the interpreter lock) tells a busy compiled routine from the final writes of
an interrupted run, which may take longer and are waited for. The run folder of a stopped child is the one
of its last checkpoint; the runner checkpoints after every slow step (``isocloth.runner.SLOW_STEP``).

Where ``fork`` is not available (Windows), outside the main thread, or when stdout or stderr is not a file
(captured by a test runner or a notebook), the function runs in this process.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time

GRACE = 0.5
"""Seconds the child's interpreter may stay silent after a stop request before the child is killed."""

HEARTBEAT = 0.05
"""Seconds between the child's heartbeats."""

REAP = 0.2
"""Seconds the parent waits for a child that has closed its pipe to end before it kills it (a child that
died closes the pipe a moment before its exit code can be read)."""


class Unresponsive(KeyboardInterrupt):
    """The child did not answer a stop request within the grace time, or the request was repeated
    twice, and it was killed (SIGKILL)."""


class ChildDied(RuntimeError):
    """The child ended without a result (killed by another process, out of memory, a crash)."""


def can_fork() -> bool:
    """Whether this platform runs :func:`supervised` in a child process."""
    return "fork" in multiprocessing.get_all_start_methods()


def _streams_are_files() -> bool:
    """Whether stdout and stderr are files, which a child writes to as this process does (not so for
    streams captured in memory by a test runner or a notebook: the child's lines would be lost)."""
    try:
        sys.stdout.fileno()
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return False
    return True


def interrupt(signum, frame):
    """Signal handler that ends a computation like Ctrl-C (KeyboardInterrupt), once: further SIGINT
    and SIGTERM are ignored from then on (a batch system signals the whole process group, and this
    process's parent forwards the signal too), so that the partial results are written."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def _end_with_parent() -> None:
    """Linux: SIGTERM to this process when its parent dies (a parent killed by SIGKILL)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _child(conn, beat, fn, args, kwargs) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent forwards Ctrl-C as SIGTERM (once)
    signal.signal(signal.SIGTERM, interrupt)
    _end_with_parent()

    def heartbeat() -> None:
        while True:
            beat.value = time.monotonic()
            time.sleep(HEARTBEAT)

    threading.Thread(target=heartbeat, daemon=True).start()
    try:
        msg = ("ok", fn(*args, **kwargs))
    except BaseException as exc:  # noqa: BLE001 - every outcome goes back to the parent
        msg = ("error", exc)
    try:
        conn.send(msg)
    except Exception as exc:  # noqa: BLE001 - an exception that cannot be pickled
        conn.send(("error", RuntimeError(f"{type(msg[1]).__name__}: {msg[1]}")))
        del exc
    conn.close()


def supervised(fn, *args, grace: float = GRACE, **kwargs):
    """``fn(*args, **kwargs)`` in a forked child process; returns its result or raises its exception.

    Ctrl-C (SIGINT) or SIGTERM received by this process is forwarded to the child once as SIGTERM;
    ``fn`` must end promptly on it (``isocloth.runner.run_scene`` does: it writes the partial results and
    returns an interrupted summary). Runs ``fn`` in this process where that is not possible (see the module).

    A second request prints that the partial results are being written; a third kills the child at once.

    Raises
    ------
    Unresponsive
        If the child's interpreter stayed silent for ``grace`` [s] after the stop request, or at the third
        request: it was killed.
    ChildDied
        If the child ended without a result (killed by another process, out of memory), or with an
        exception that cannot be passed on.
    KeyboardInterrupt and any other exception of ``fn``
        Raised again here.
    """
    if not can_fork() or threading.current_thread() is not threading.main_thread() or not _streams_are_files():
        return fn(*args, **kwargs)
    ctx = multiprocessing.get_context("fork")
    beat = ctx.Value("d", time.monotonic(), lock=False)
    parent_conn, child_conn = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child_conn, beat, fn, args, kwargs))
    asked: list[float] = []  # times of the stop requests

    def stop(signum, frame) -> None:
        asked.append(time.monotonic())
        if len(asked) == 1:
            _signal_child(proc, signal.SIGTERM)
        elif len(asked) == 2:
            print("stopping: the partial results are being written; a third Ctrl-C stops at once (the steps since "
                  "the last checkpoint are lost)", file=sys.stderr, flush=True)

    previous = {}
    try:
        proc.start()
        child_conn.close()
        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        kind, value = _wait(proc, parent_conn, beat, asked, grace)
    finally:
        if proc.pid is not None:
            proc.join(REAP)
        if proc.is_alive():
            proc.kill()
            proc.join()
        for sig, h in previous.items():
            signal.signal(sig, h)
    if kind == "ok":
        return value
    if kind == "error":
        raise value
    raise ChildDied(f"the run's process ended without a result (exit code {proc.exitcode}"
                    + (": killed by another process or out of memory)" if proc.exitcode == -signal.SIGKILL else ")"))


def _signal_child(proc, sig) -> None:
    try:
        os.kill(proc.pid, sig)
    except ProcessLookupError:  # it has just ended
        pass


def _wait(proc, conn, beat, asked: list, grace: float):
    """("ok" | "error" | None, value) from the child ``proc`` through ``conn``; kills it when its heartbeat
    ``beat`` is older than ``grace`` [s] after the first stop request in ``asked``, or at the third.

    Raises
    ------
    Unresponsive
        When it killed the child.
    """
    while True:
        if conn.poll(HEARTBEAT):
            try:
                return conn.recv()
            except EOFError:  # ended without a message
                return None, None
            except Exception as exc:  # noqa: BLE001 - an exception that pickles but cannot be rebuilt
                return "error", ChildDied(f"the run's process ended with an error that cannot be passed on ({exc})")
        if not proc.is_alive():
            return None, None
        now = time.monotonic()
        if len(asked) >= 3 or (asked and now - asked[0] > grace and now - beat.value > grace):
            proc.kill()
            why = ("a third stop request" if len(asked) >= 3 else
                   f"no answer to the stop request within {grace:g} s (a compiled routine held Python's "
                   "interpreter lock)")
            raise Unresponsive(f"the run was killed after {why}")
