"""A launcher relaying a run's output (N10): reading the nodes' pipes, and writing
etcrun's own stdout and stderr."""

from __future__ import annotations

import os
import sys
from typing import BinaryIO


class Sinks:
    """A reader that went away (`| head`) is not a failure of the run: its output is
    dropped from then on. Any other write error (a full disk), or a stdout closed
    before the run, is one: `write` returns its message, once."""

    def __init__(self) -> None:
        self.out: BinaryIO | None = getattr(sys.stdout, "buffer", None)  # None: closed
        self.err: BinaryIO | None = getattr(sys.stderr, "buffer", None)
        self._closed_unsaid = self.out is None  # (not a reader that went away later)

    def write(self, stream: str, data: bytes) -> str | None:
        sink = self.out if stream == "out" else self.err
        if sink is None:
            if stream == "out" and self._closed_unsaid:
                self._closed_unsaid = False
                return "cannot write to standard output: it is closed"
            return None
        try:
            sink.write(data)
            sink.flush()
        except OSError as exc:
            if stream == "out":
                self.out = None
            else:
                self.err = None
            if not isinstance(exc, BrokenPipeError):
                name = "standard output" if stream == "out" else "standard error"
                return f"cannot write to {name}: {exc.strerror or exc}"
        return None


def read_pipe(fd: int) -> bytes | None:
    """What a node's non-blocking output pipe holds now: b"" at its end (or a read
    error, which ends it too), None when nothing is there yet."""
    try:
        return os.read(fd, 65536)
    except BlockingIOError:
        return None
    except OSError:
        return b""
