"""What every command shares: no Python traceback reaches the user, ever."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable


class ArgParser(argparse.ArgumentParser):
    """argparse whose usage errors read `prog: error: ...` and exit with status 2."""

    def __init__(self, *args: object, help_flag: str = "-h", **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.help_flag = help_flag

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n(try '{self.prog} {self.help_flag}')\n")


def run_main(prog: str, body: Callable[[list[str]], int], argv: list[str] | None = None) -> int:
    """Run a command body; turn every unexpected failure into a one-line message."""
    args = sys.argv[1:] if argv is None else argv
    try:
        return body(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); stay quiet like cat does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except RecursionError:
        sys.stderr.write(f"{prog}: error: input nested too deeply\n")
        return 1
    except Exception as exc:  # noqa: BLE001 - the promise is: never a traceback
        sys.stderr.write(
            f"{prog}: internal error: {type(exc).__name__}: {exc}\n"
            f"{prog}: note: please report this with the input that caused it\n"
        )
        return 70
