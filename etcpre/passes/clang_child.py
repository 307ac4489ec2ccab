"""The clang view's child: libclang reads the file in a forked process, started as soon
as the syntax tree is there.

libclang parses recursively: deeply nested code exhausts the C stack of the thread it
runs on and kills the process with SIGSEGV, which no Python handler can catch. So the
clang work runs in a forked child, on a thread with a large stack (virtual memory; only
the pages used are touched); a crash of the child becomes an error message, never the
death of etcpre.

The child loads libclang, the clang view and the cursor walk itself. This process never
imports them: it goes on (loading the passes after the clang view, indexing the tree)
while the child works, and only the facts come back.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from etcpre.passes import forked

if TYPE_CHECKING:  # loaded while the child works: making their classes takes a while
    import tree_sitter

    from etcpre.options import Options
    from etcpre.passes.facts import Facts
    from etcpre.passes.text import WorkingText

T = TypeVar("T")

PARSE_STACK_BYTES = 1 << 30  # enough for nesting far deeper than gcc's default accepts
SPLIT_FROM_BYTES = 32 << 10  # of function definitions: below, a second child costs more


class NotBuilt(Exception):
    """The cursor walk's C library is missing or unusable; the message is ready for the
    user."""


class IsolatedError(Exception):
    """libclang crashed in the child; the message is ready for the user."""


class IsolatedBug(Exception):
    """The work raised in the child: a bug of etcpre (the message holds the traceback)."""


class Pending:
    """The clang children at work; `facts()` waits for what they found."""

    def __init__(self, runs: list[forked.Forked[Facts | NotBuilt]], failed: str = "") -> None:
        self._runs = runs  # the first part's child (or the only one) first
        self._failed = failed  # why a child could not be started

    def facts(self) -> Facts:
        """The facts, or Facts.fatal when libclang crashed or a child could not be
        started. Raises NotBuilt (for the user) and IsolatedBug."""
        from etcpre.passes.facts import Diag, Facts  # noqa: PLC0415 - see the imports

        values: list[Facts | NotBuilt] = []
        crashed = ""
        for run in self._runs:  # every child is waited for, whatever the others did
            try:
                values.append(result(run))
            except IsolatedError as exc:
                crashed = crashed or f"{exc} while reading the file"
        if self._failed or crashed:
            return Facts(fatal=Diag(None, 0, True, self._failed or crashed))
        for value in values:
            if isinstance(value, NotBuilt):
                raise value
        facts = values[0]
        assert isinstance(facts, Facts)
        if facts.fatal is None:
            for later in values[1:]:
                assert isinstance(later, Facts)
                facts.absorb(later)
        facts.settle()
        return facts


def start(working: WorkingText, root: tree_sitter.Node, options: Options) -> Pending:
    """Forks the child that gathers the clang view's facts about the working text; two
    children, each walking half of the file's functions, when the file is big and two
    CPUs are there."""
    path = os.path.abspath(working.source.name)
    data = working.data

    def work(part: tuple[int, bool] | None) -> Callable[[], Facts | NotBuilt]:
        def gather() -> Facts | NotBuilt:
            from etcpre.passes import clang_view, cursor_walk  # noqa: PLC0415 - the child's

            try:
                cursor_walk.check()
            except NotBuilt as exc:
                return exc  # the user's message, not a bug
            return clang_view.collect(path, data, root, options, part)
        return gather

    cut = split_at(root)
    runs: list[forked.Forked[Facts | NotBuilt]] = []
    try:
        if cut is not None:
            runs.append(fork(work((cut, True))))
            runs.insert(0, fork(work((cut, False))))
        else:
            runs.append(fork(work(None)))
    except OSError as exc:
        return Pending(runs, f"cannot start the process that runs libclang: {exc.strerror or exc}")
    return Pending(runs)


def split_at(root: tree_sitter.Node) -> int | None:
    """The start of the function definition that splits the file's definitions into two
    parts nearest to equal bytes (the walk's work goes with them), when there are
    SPLIT_FROM_BYTES of them and two usable CPUs; else None."""
    defs = [c for c in root.children
            if c.type in ("function_definition", "threaded_function_definition")]
    total = sum(c.end_byte - c.start_byte for c in defs)
    if total < SPLIT_FROM_BYTES or forked.usable_cpus() < 2:
        return None
    best: tuple[int, int] | None = None  # (distance from half the bytes, cut)
    before = 0
    for c in defs:
        if before and (best is None or abs(2 * before - total) < best[0]):
            best = (abs(2 * before - total), c.start_byte)
        before += c.end_byte - c.start_byte
    return best[1] if best is not None else None


def fork(work: Callable[[], T]) -> forked.Forked[T]:
    """`work` in a forked child on a thread with a large stack, its stderr silenced.
    Raises OSError when the fork fails."""
    return forked.Forked(work, _quiet, _in_big_thread)


def result(run: forked.Forked[T]) -> T:
    """What the child returned (it must pickle). An exception in the child comes back
    as IsolatedBug with its traceback; a child killed by a signal (a libclang crash)
    as IsolatedError."""
    try:
        return run.result()
    except forked.ChildRaised as exc:
        raise IsolatedBug(str(exc)) from None
    except forked.ChildError as exc:
        if exc.signal_name is not None:
            raise IsolatedError(f"libclang crashed ({exc.signal_name})") from None
        raise IsolatedError(f"libclang's results were lost ({exc})") from None


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
