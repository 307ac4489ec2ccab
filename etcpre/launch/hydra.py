"""What etcrun does for MPICH's launcher, Hydra (etcpre/launch/mpi.py starts it;
docs/protocols.md P9).

Hydra's account of a rank that died does not say which rank failed: its PID and
EXIT CODE are of the lowest rank it found ended badly, which may be one it stopped
itself, and so may its EXIT STRING. So etcrun gives each rank of its own host a
lifeline, a FIFO the rank holds open while it lives (`ETC_MPI_LIFELINES`,
runtime/net/mpi/mpi.c): a rank's end closes it as it closes the rank's pipes to
Hydra, before Hydra can stop any other, so the first to close, alone, is the rank
that failed. Hydra's list of every rank's exit status (`-print-all-exitcodes`) then
says how it ended. The account and that list come on Hydra's stdout, among the
program's lines, and are held back from them.
"""

from __future__ import annotations

import os
import re
import selectors
from collections.abc import Callable
from pathlib import Path

from etcpre.launch.ended import signal_name

FLAGS = ["-print-all-exitcodes"]
BAR = re.compile(r"^={40,}$")
HEAD = "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES"
AFTER = ("YOUR APPLICATION TERMINATED WITH THE EXIT STRING:",
         "This typically refers to a problem with your application.",
         "Please see the FAQ page for debugging suggestions")
# on stderr: the library's line when a rank calls MPI_Abort; the launcher's and
# its proxies' own lines
LINE = re.compile(r"^Abort\(\d+\) on node \d+ |^\[(mpiexec|proxy:[^\]@]*)@[^\]]*\] ")
ABORT = re.compile(r"^Abort\((\d+)\) on node \d+ \(rank (\d+) in comm", re.M)
# the end of stdout: each host's ranks' wait statuses, in rank order, the first
# host's on the line that says so, each other host's on a line of its own
EXIT_CODES = re.compile(rb"\[mpiexec@[^\]]*\] Exit codes: (.*)$")
HOST_CODES = re.compile(r"\[[^\]]+\] (-?\d+(?:,-?\d+)*)")
MORE_CODES = re.compile(rb"^\[[^\]]+\] -?\d+(?:,-?\d+)*\n?$")


def codes_of(raw: bytes) -> list[list[int]]:
    """Each host's statuses in `[host] s,s,...` groups."""
    return [[int(c) for c in group.split(",")]
            for group in HOST_CODES.findall(raw.decode(errors="replace"))]


class Stdout:
    """Hydra's stdout: the program's lines, written on, and Hydra's own, held."""

    def __init__(self, write: Callable[[bytes], None]) -> None:
        self.write = write
        self.waiting: list[bytes] = []  # a blank line or a bar: the account's start?
        self.held: list[tuple[bytes, bool]] = []  # from the account on: (line, Hydra's?)
        self.told = False  # the account began: the rest of stdout waits for the end
        self.inside = False  # between the account's bars
        self.codes: list[list[int]] = []  # each host's ranks' wait statuses
        self.in_codes = False  # the lines after the codes' first may be more of them

    def line(self, raw: bytes) -> None:
        """One line of Hydra's stdout. From the account's head on, stdout waits for
        the run's end (the run is ending): only a failed run's account is left out
        then (finish). A blank line or a bar waits for the next line to tell."""
        if self.in_codes and MORE_CODES.match(raw):
            self.codes += codes_of(raw)
            return
        self.in_codes = False
        m = EXIT_CODES.search(raw)
        if m:  # asked for by FLAGS: never the program's (its text before is)
            self.codes = codes_of(m.group(1))
            self.in_codes = True
            raw = raw[: m.start()]
            if not raw:
                return
            raw += b"\n"
        text = raw.decode(errors="replace").rstrip("\n")
        if self.told:
            account = self.inside or text.startswith(AFTER)
            if self.inside:
                self.inside = not BAR.match(text)
            self.held.append((raw, account))
            return
        waiting = [x.decode(errors="replace").rstrip("\n") for x in self.waiting]
        if text == HEAD and waiting and BAR.match(waiting[-1]):
            self.held = [(x, True) for x in self.waiting] + [(raw, True)]
            self.waiting = []
            self.told = self.inside = True
            return
        if (not text and not waiting) or (BAR.match(text) and waiting in ([], [""])):
            self.waiting.append(raw)
            return
        self.flush_waiting()  # the program's own
        if not text or BAR.match(text):
            self.waiting = [raw]
            return
        self.write(raw)

    def flush_waiting(self) -> None:
        for raw in self.waiting:
            self.write(raw)
        self.waiting = []

    def finish(self, failed: bool) -> list[str]:
        """Writes what is held (all of it if the run went well: then it was the
        program's); returns Hydra's account of a failed run."""
        self.flush_waiting()
        kept = b"".join(raw for raw, hydra in self.held if not (failed and hydra))
        if kept:
            self.write(kept)
        account = [raw.decode(errors="replace").rstrip("\n") for raw, hydra in self.held
                   if hydra and raw.strip()]
        self.held = []
        return account if failed else []


class Lifelines:
    """One FIFO per rank in a directory, read here. A rank writes a byte into its own
    once it holds it, and its end closes it: seen in the relay's selector, in the
    order the ranks ended."""

    LIMIT = 256  # more ranks: no lifelines (a descriptor each)

    def __init__(self, where: Path, n: int) -> None:
        self.fds: dict[int, int] = {}  # read end -> rank, of ranks not seen ended
        self.held: set[int] = set()  # the ranks that said they hold theirs
        self.batches: list[list[int]] = []  # the ranks seen ended, by wake-up
        try:
            for rank in range(n if n <= self.LIMIT else 0):
                os.mkfifo(where / str(rank), 0o600)
                # no writer yet: not readable until the rank holds it
                self.fds[os.open(where / str(rank), os.O_RDONLY | os.O_NONBLOCK)] = rank
        except OSError:
            for fd in self.fds:
                os.close(fd)
            raise

    def watch(self, sel: selectors.BaseSelector) -> None:
        for fd, rank in self.fds.items():
            sel.register(fd, selectors.EVENT_READ, ("rank", rank))

    def ended(self, sel: selectors.BaseSelector, fds: list[int]) -> None:
        """These read ends became readable at one wake-up: a rank holds its lifeline
        now, or has ended (one that ends without having held its own is not counted
        as ended: it may not have been the rank)."""
        gone = []
        for fd in fds:
            rank = self.fds[fd]
            try:
                data = os.read(fd, 64)
                if data:
                    self.held.add(rank)
                    data = os.read(fd, 64)  # it may have ended since
            except BlockingIOError:
                continue  # held, and running
            except OSError:
                data = b""
            if not data:
                gone.append(fd)
        ranks = sorted(self.fds[fd] for fd in gone if self.fds[fd] in self.held)
        if ranks:
            self.batches.append(ranks)
        self.forget(sel, gone)

    def forget(self, sel: selectors.BaseSelector, fds: list[int]) -> None:
        for fd in fds:
            if fd in sel.get_map():
                sel.unregister(fd)
            os.close(fd)
            del self.fds[fd]

    def close(self, sel: selectors.BaseSelector) -> None:
        """Stops watching (the ranks not seen ended are not counted as ended)."""
        self.forget(sel, list(self.fds))


def rank_statuses(codes: list[list[int]], n: int) -> list[int] | None:
    """Hydra's statuses in rank order: those of one host that ran all n ranks (a
    host without statuses is left out of Hydra's list, and several hosts' are not
    in rank order)."""
    return codes[0] if len(codes) == 1 and len(codes[0]) == n else None


def failed_first(batches: list[list[int]], held: set[int],
                 statuses: list[int] | None) -> list[int]:
    """The ranks of the first wake-up at which one ended badly, by their statuses:
    one, the rank that failed; several when they ended at once (Hydra stopped the
    others first). None when a rank that ended badly never held its lifeline: it
    may have been the first."""
    if statuses is None:
        return []
    if any(status and k not in held for k, status in enumerate(statuses)):
        return []
    for batch in batches:
        bad = [k for k in batch if k < len(statuses) and statuses[k]]
        if bad:
            return bad
    return []


def any_signalled(codes: list[list[int]]) -> bool:
    """Whether Hydra's statuses (each host's ranks' wait statuses) say a rank was
    killed by a signal: Hydra's own exit status is then no rank's exit code (SIGINT
    alone makes it 2, a bad setting's status)."""
    return any(os.WIFSIGNALED(status) for host in codes for status in host)


def how_it_ended(k: int, statuses: list[int]) -> str | None:
    """How rank k ended, from its status."""
    status = statuses[k]
    if os.WIFSIGNALED(status):
        return f"killed by {signal_name(os.WTERMSIG(status))}"
    if os.WIFEXITED(status) and os.WEXITSTATUS(status):
        return f"exited with status {os.WEXITSTATUS(status)} while the run was going on"
    return None


def explain(stderr_lines: list[str], batches: list[list[int]], held: set[int],
            codes: list[list[int]], n: int) -> str | None:
    """The `etc: error:` line (without its prefix) for a failed run whose ranks
    said nothing, or None when Hydra's output and the ranks' ends do not tell."""
    m = ABORT.search("\n".join(stderr_lines))
    if m:
        return f"node {m.group(2)}: ended the run with MPI_Abort (status {m.group(1)})"
    statuses = rank_statuses(codes, n)
    first = failed_first(batches, held, statuses)
    if statuses is None or not first:
        return None
    if len(first) == 1:
        how = how_it_ended(first[0], statuses) or "ended while the run was going on"
        return f"node {first[0]}: {how}"
    each = [f"node {k} {how_it_ended(k, statuses) or 'ended'}" for k in first]
    return (f"one of nodes {', '.join(str(k) for k in first)} ended the run: they ended "
            f"at once ({'; '.join(each)}), and MPICH's launcher, which stops the others "
            "when one ends, does not say which was first")
