"""Work in a forked child, its result back through a pipe (pickled); what the parent
knows only after the fork goes to the child through an `Inbox`.

The clang view runs libclang this way so that a crash of libclang (deep nesting
exhausts the C stack) is an error message, never the death of etcpre; the lowering
runs half of the threaded functions this way while this process does the other half.
A child sees everything this process had when it forked (the syntax tree, the model)
without copying it, and leaves with os._exit: no handler, no buffered output of ours.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import signal
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


def usable_cpus() -> int:
    """The CPUs this process may run on: work split in two only pays with two."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _pipe() -> tuple[int, int]:
    """os.pipe(), its ends above the standard descriptors: a command started with one
    of those closed would get it as a pipe end, which a child's setup (the clang
    child's stderr to /dev/null) would then replace, and our stderr would write into."""
    ends = []
    for fd in os.pipe():
        if fd <= 2:
            above = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
            os.close(fd)
            fd = above
        ends.append(fd)
    return ends[0], ends[1]


class ChildError(Exception):
    """The child gave no result: killed by a signal (`signal_name`), or what it sent
    could not be read."""

    def __init__(self, message: str, signal_name: str | None = None) -> None:
        super().__init__(message)
        self.signal_name = signal_name


class ChildRaised(Exception):
    """The work raised in the child (a bug of etcpre): the message holds its traceback."""


class Unsent(Exception):
    """The parent sent nothing to the child's inbox (it closed it, or ended)."""


class Inbox:
    """One value (pickled) from the parent to a child it forked before knowing it. The
    child drains the pipe on a thread of its own from its start, so that the parent's
    send never waits for the child to ask."""

    def __init__(self) -> None:
        self._read, self._write = _pipe()
        self._reader: threading.Thread | None = None
        self._data = b""

    def send(self, value: object) -> None:
        """In the parent, once. A child that ended before reading it (its result says
        why) is no error here."""
        try:
            with os.fdopen(self._write, "wb") as out:
                self._write = -1
                out.write(pickle.dumps(value))
        except BrokenPipeError:
            pass

    def close(self) -> None:
        """In the parent: nothing will be sent (the child's receive raises Unsent)."""
        if self._write >= 0:
            os.close(self._write)
            self._write = -1

    def receive(self) -> object:
        """In the child: the value sent, once it is all there."""
        assert self._reader is not None
        self._reader.join()
        if not self._data:
            raise Unsent("etcpre sent the child nothing")
        return pickle.loads(self._data)

    def _in_child(self) -> None:
        os.close(self._write)
        self._write = -1

        def drain() -> None:
            chunks = []
            while chunk := os.read(self._read, 1 << 16):
                chunks.append(chunk)
            self._data = b"".join(chunks)

        self._reader = threading.Thread(target=drain, name="etcpre-inbox", daemon=True)
        self._reader.start()

    def _in_parent(self) -> None:
        os.close(self._read)
        self._read = -1

    def _discard(self) -> None:  # the fork failed
        self.close()
        os.close(self._read)
        self._read = -1


class Forked(Generic[T]):
    """`work` running in a child process; `result()` waits for what it returns."""

    def __init__(self, work: Callable[[], T], child_setup: Callable[[], None] | None = None,
                 runner: Callable[[Callable[[], T]], T] | None = None,
                 inbox: Inbox | None = None) -> None:
        """Forks. In the child, `child_setup` runs first and `runner(work)` (default:
        `work()`) gives the result, which must pickle; `work` may wait for what the
        parent sends to `inbox`. Raises OSError when the fork fails (nothing was
        started)."""
        rfd, wfd = _pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(rfd)
            os.close(wfd)
            if inbox is not None:
                inbox._discard()
            raise
        if pid == 0:  # the child: never returns into the caller's code
            os.close(rfd)
            status = 0
            try:
                if inbox is not None:
                    inbox._in_child()
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
        if inbox is not None:
            inbox._in_parent()
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
