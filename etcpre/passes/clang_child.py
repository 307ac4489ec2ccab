"""The clang view's child: libclang reads the file in a forked process, started before
anything else of the translation.

libclang parses recursively: deeply nested code exhausts the C stack of the thread it
runs on and kills the process with SIGSEGV, which no Python handler can catch. So the
clang work runs in a forked child, on a thread with a large stack (virtual memory; only
the pages used are touched); a crash of the child becomes an error message, never the
death of etcpre.

The child loads libclang, the clang view and the cursor walk itself while this
process parses the file and finds the rewrites libclang's view needs (`view_edits`),
which it then sends (`Pending.show`). This process never imports libclang: it goes on
(loading the passes after the clang view, the analysis that needs no facts) while the
child works, and only the facts come back.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from etcpre.passes import forked

if TYPE_CHECKING:  # loaded while the child works: making their classes takes a while
    from etcpre.options import Options
    from etcpre.passes.facts import Facts
    from etcpre.passes.text import Edit, WorkingText

T = TypeVar("T")

PARSE_STACK_BYTES = 1 << 30  # enough for nesting far deeper than gcc's default accepts


class NotBuilt(Exception):
    """The cursor walk's C library is missing or unusable; the message is ready for the
    user."""


class IsolatedBug(Exception):
    """The work raised in the child: a bug of etcpre (the message holds the traceback)."""


class Pending:
    """The clang child at work; `facts()` waits for what it found."""

    def __init__(self, run: forked.Forked[Facts | NotBuilt] | None,
                 inbox: forked.Inbox | None = None, failed: str = "") -> None:
        self._run = run
        self._inbox = inbox
        self._failed = failed  # why there is no child

    def show(self, edits: list[Edit]) -> None:
        """Sends the child the rewrites of libclang's view (`view_edits` of the working
        text's tree), which it waits for before parsing."""
        if self._inbox is not None:
            self._inbox.send(edits)
            self._inbox = None

    def facts(self) -> Facts:
        """The facts, or Facts.fatal when libclang crashed (the child was killed by a
        signal), its results were lost, or the child could not be started. Raises
        NotBuilt (for the user) and IsolatedBug."""
        from etcpre.passes.facts import Diag, Facts  # noqa: PLC0415 - see the imports

        if self._run is None:
            return Facts(fatal=Diag(None, 0, True, self._failed))
        if self._inbox is not None:  # not shown: the child ends (a bug of the caller)
            self._inbox.close()
        try:
            value = self._run.result()
        except forked.ChildRaised as exc:
            raise IsolatedBug(str(exc)) from None
        except forked.ChildError as exc:
            what = (f"libclang crashed ({exc.signal_name})" if exc.signal_name is not None
                    else f"libclang's results were lost ({exc})")
            return Facts(fatal=Diag(None, 0, True, f"{what} while reading the file"))
        if isinstance(value, NotBuilt):
            raise value
        return value


def start(working: WorkingText, options: Options) -> Pending:
    """Forks the child that gathers the clang view's facts about the working text, on a
    thread with a large stack, its stderr silenced. It loads libclang, then waits for
    `Pending.show`."""
    path = os.path.abspath(working.source.name)
    data = working.data
    inbox = forked.Inbox()

    def work() -> Facts | NotBuilt:
        from etcpre.passes import clang_view, cursor_walk  # noqa: PLC0415 - the child's only

        try:
            cursor_walk.check()
        except NotBuilt as exc:
            return exc  # the user's message, not a bug
        args = clang_view.clang_args(options, os.path.dirname(path) or ".")
        edits: list[Edit] = inbox.receive()  # type: ignore[assignment]
        return clang_view.collect(path, data, edits, args)

    try:
        return Pending(forked.Forked(work, _quiet, _in_big_thread, inbox), inbox)
    except OSError as exc:
        return Pending(None, failed="cannot start the process that runs libclang: "
                                    f"{exc.strerror or exc}")


def _quiet() -> None:
    # libclang reports what it recovers from on stderr; the parent says what matters
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)


def _in_big_thread(work: Callable[[], T]) -> T:
    # libclang would run the parse on a thread of its own with an 8 MiB stack; this
    # makes it use ours
    os.environ["LIBCLANG_NOTHREADS"] = "1"
    box: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            box.append(work())
        except BaseException as exc:  # noqa: BLE001 - re-raised on the calling thread
            failure.append(exc)

    threading.stack_size(PARSE_STACK_BYTES)
    thread = threading.Thread(target=run, name="etcpre-clang")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return box[0]
