"""forked.Inbox: what etcpre's process knows only after forking the clang child (the
rewrites of libclang's view) reaches the child whole, whatever its size and whenever
the child asks; a send never waits for the child, and never fails because the child
ended first."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from etcpre.passes import forked

ROOT = Path(__file__).resolve().parents[2]


def test_a_value_sent_after_the_fork_reaches_the_child() -> None:
    inbox = forked.Inbox()
    child = forked.Forked(lambda: inbox.receive() * 2, inbox=inbox)  # type: ignore[operator]
    inbox.send(21)
    assert child.result() == 42


def test_a_large_send_does_not_wait_for_the_child_to_ask(tmp_path: Path) -> None:
    sent = tmp_path / "sent"
    big = b"x" * (4 << 20)  # far more than a pipe holds

    def work() -> object:
        deadline = time.monotonic() + 30
        while not sent.exists():  # the child asks only once the parent's send returned
            if time.monotonic() > deadline:
                return "the send waited for the child"
            time.sleep(0.01)
        return inbox.receive() == big

    inbox = forked.Inbox()
    child = forked.Forked(work, inbox=inbox)
    inbox.send(big)
    sent.touch()
    assert child.result() is True


def test_a_child_told_nothing_ends_with_an_error() -> None:
    inbox = forked.Inbox()
    child = forked.Forked(inbox.receive, inbox=inbox)
    inbox.close()
    with pytest.raises(forked.ChildRaised, match="Unsent"):
        child.result()


def test_a_child_that_ended_first_is_no_error_for_the_send() -> None:
    inbox = forked.Inbox()
    child = forked.Forked(lambda: os.getpid(), inbox=inbox)
    pid = child.result()  # ended without reading
    assert pid != os.getpid()
    inbox.send(b"y" * (1 << 20))  # no BrokenPipeError


def test_pipes_stay_off_the_standard_descriptors() -> None:
    # a command started with stderr closed: a pipe would take descriptor 2, which the
    # clang child's setup points at /dev/null (and etcpre's stderr would write into)
    script = """
import os, sys
from etcpre.passes import forked
os.close(2)
inbox = forked.Inbox()
ends = (inbox._read, inbox._write)
def quiet():
    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
child = forked.Forked(lambda: len(inbox.receive()), quiet, inbox=inbox)
inbox.send(b"x" * 100000)
print(min(*ends, child._rfd) > 2, child.result())
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False, cwd=ROOT)
    assert proc.stdout == "True 100000\n", proc.stdout + proc.stderr
