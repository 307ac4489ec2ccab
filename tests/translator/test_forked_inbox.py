"""forked.Inbox: what etcpre's process knows only after forking the clang child (the
rewrites of libclang's view) reaches the child whole, whatever its size and whenever
the child asks; a send never waits for the child, and never fails because the child
ended first."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from etcpre.passes import forked


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
