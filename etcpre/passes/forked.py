"""Work in a forked child, its result back through a pipe (pickled).

The clang view runs libclang this way so that a crash of libclang (deep nesting
exhausts the C stack) is an error message, never the death of etcpre; the lowering
runs half of the threaded functions this way while this process does the other half.
A child sees everything this process had when it forked (the syntax tree, the model)
without copying it, and leaves with os._exit: no handler, no buffered output of ours.
"""

from __future__ import annotations

import os
import pickle
import signal
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


def usable_cpus() -> int:
    """The CPUs this process may run on: work split in two only pays with two."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class ChildError(Exception):
    """The child gave no result: killed by a signal (`signal_name`), or what it sent
    could not be read."""

    def __init__(self, message: str, signal_name: str | None = None) -> None:
        super().__init__(message)
        self.signal_name = signal_name


class ChildRaised(Exception):
    """The work raised in the child (a bug of etcpre): the message holds its traceback."""


class Forked(Generic[T]):
    """`work` running in a child process; `result()` waits for what it returns."""

    def __init__(self, work: Callable[[], T], child_setup: Callable[[], None] | None = None,
                 runner: Callable[[Callable[[], T]], T] | None = None) -> None:
        """Forks. In the child, `child_setup` runs first and `runner(work)` (default:
        `work()`) gives the result, which must pickle. Raises OSError when the
        fork fails (nothing was started)."""
        rfd, wfd = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(rfd)
            os.close(wfd)
            raise
        if pid == 0:  # the child: never returns into the caller's code
            os.close(rfd)
            status = 0
            try:
                if child_setup is not None:
                    child_setup()
                value = runner(work) if runner is not None else work()
                payload = pickle.dumps(("ok", value))
            except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
                import traceback  # noqa: PLC0415 - only a failing child needs it

                trace = "".join(traceback.format_exception(exc)[-6:])
                payload = pickle.dumps(("error", f"{type(exc).__name__}: {exc}\n{trace}"))
                status = 1
            try:
                with os.fdopen(wfd, "wb") as out:
                    out.write(payload)
            finally:
                os._exit(status)
        os.close(wfd)
        self._pid = pid
        self._rfd = rfd

    def result(self) -> T:
        """The child's result; ChildError when it died or its result is unreadable,
        ChildRaised when the work raised."""
        with os.fdopen(self._rfd, "rb") as inp:
            data = inp.read()
        _, wstatus = os.waitpid(self._pid, 0)
        if os.WIFSIGNALED(wstatus):
            sig = os.WTERMSIG(wstatus)
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = f"signal {sig}"
            raise ChildError(f"killed by {name}", name)
        try:
            tag, value = pickle.loads(data)
        except Exception as exc:  # noqa: BLE001 - a truncated or foreign payload
            raise ChildError(f"its result was lost ({exc})") from None
        if tag == "error":
            raise ChildRaised(str(value))
        return value  # type: ignore[no-any-return]
