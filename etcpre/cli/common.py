"""What every command shares: no Python traceback reaches the user, ever; output
that cannot be written is an error, not a crash; the same parsing of node counts."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from typing import NoReturn

from etcpre import __version__

MAX_NODES = 65534  # runtime/include/etc.h ETC_MAX_NODES


def version_text(prog: str) -> str:
    return f"{prog} (etc, the Threaded-C toolchain) {__version__}\n"


class ArgParser(argparse.ArgumentParser):
    """argparse whose usage errors read `prog: error: ...` and exit with status 2."""

    def __init__(self, *args: object, help_flag: str = "-h", **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.help_flag = help_flag
        self.add_argument("--version", action="version", version=version_text(self.prog))

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n(try '{self.prog} {self.help_flag}')\n")


def node_count(text: str) -> int:
    """A node count as ETC_NODES, etcrun -n and the runtime (sched.c) read it: decimal
    digits only (no sign, space or `_`), 1 to MAX_NODES."""
    if not re.fullmatch(r"[0-9]+", text) or not 1 <= int(text) <= MAX_NODES:
        raise ValueError(f"'{text}' is not a node count (1 to {MAX_NODES})")
    return int(text)


class StreamError(Exception):
    """Our standard output could not be written (a full disk, a closed descriptor)."""


class _Checked:
    """Standard output whose write errors become StreamError (a closed pipe stays a
    BrokenPipeError: the reader went away, as with `| head`)."""

    def __init__(self, stream: object | None) -> None:
        self._stream = stream

    def _call(self, name: str, *args: object) -> object:
        if self._stream is None:
            raise StreamError("standard output is closed")
        try:
            return getattr(self._stream, name)(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise StreamError(f"cannot write to standard output: {exc.strerror}") from None

    def write(self, text: str) -> object:
        return self._call("write", text)

    def flush(self) -> object:
        return self._call("flush") if self._stream is not None else None

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


class _Quiet:
    """Standard error when it cannot be written: what we would say is lost, and the
    exit status still says how the command went."""

    def __init__(self, stream: object | None) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            if self._stream is not None:
                self._stream.write(text)  # type: ignore[attr-defined]
                self._stream.flush()  # type: ignore[attr-defined]
        except (OSError, ValueError):
            self._stream = None
        return len(text)

    def flush(self) -> None:
        pass

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _silence_stdout() -> None:
    """After a failed write, nothing more goes to standard output (also not at exit)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
    except OSError:
        pass
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives until exit


def leave(rc: int) -> NoReturn:
    """Ends a command whose work is done: its output flushed, without Python's
    teardown, which would free the translation's objects one by one (15 ms of a
    5,000-line file's etcpre run)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        rc = rc or 1  # what was said is lost: not a success
    os._exit(rc)


def run_main(prog: str, body: Callable[[list[str]], int], argv: list[str] | None = None) -> int:
    """Run a command body; turn every unexpected failure into a one-line message."""
    args = sys.argv[1:] if argv is None else argv
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout = _Checked(stdout)  # type: ignore[assignment]
    sys.stderr = _Quiet(stderr)  # type: ignore[assignment]
    try:
        try:
            rc = body(args)
        except SystemExit as exc:  # argparse after --help, --version or a usage error
            if isinstance(exc.code, str):
                sys.stderr.write(exc.code + "\n")
            rc = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        sys.stdout.flush()
        return rc
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); stay quiet like cat does.
        _silence_stdout()
        return 141
    except StreamError as exc:
        sys.stderr.write(f"{prog}: error: {exc}\n")
        _silence_stdout()
        return 1
    except RecursionError:
        sys.stderr.write(f"{prog}: error: input nested too deeply\n")
        return 1
    except Exception as exc:  # noqa: BLE001 - the promise is: never a traceback
        sys.stderr.write(
            f"{prog}: internal error: {type(exc).__name__}: {exc}\n"
            f"{prog}: note: please report this with the input that caused it\n"
        )
        return 70
    finally:
        if isinstance(sys.stdout, _Checked):
            sys.stdout = stdout
        if isinstance(sys.stderr, _Quiet):
            sys.stderr = stderr if stderr is not None else open(os.devnull, "w")  # noqa: SIM115
