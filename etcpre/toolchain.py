"""Where the runtime is, what it offers, and how a built program describes itself.

`make` builds the runtime into `build/runtime/` of the repository (the package is
installed in editable mode); `ETC_HOME` may point elsewhere (a directory with
`runtime/include/etc.h` and `build/runtime/lib/`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

TARGETS = ("seq", "smp", "tcp")
DEFAULT_TARGET = "smp"

# Every balancer of reference section 6, as registered in runtime/lb/registry.c
# (a test keeps the two lists equal).
BALANCERS = (
    "spn", "dual", "shis", "snd", "his", "range", "catapult", "rand", "rand-rcv-info",
    "rand-rcv", "rand-snd-info", "rand-hybrid-noinfo", "rand-hybrid",
    "rand-hybrid-piggyback", "minima", "nop",
)

MARKER = re.compile(rb"@\(#\)etc-program target=(\w+) prof=([01]) check=([01]) abi=(\d+)")


class ToolchainError(Exception):
    """A problem with the installation; the message is ready for the user."""


def home() -> Path:
    env = os.environ.get("ETC_HOME")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent


def include_dir() -> Path:
    d = home() / "runtime" / "include"
    if not (d / "etc.h").is_file():
        raise ToolchainError(f"the runtime's header is missing: {d / 'etc.h'} (set ETC_HOME?)")
    return d


def gdb_script() -> Path:
    """The gdb extension for Threaded-C programs (docs/debugging.md)."""
    return home() / "runtime" / "gdb" / "etc-gdb.py"


def library(target: str, check: bool, prof: bool, sanitize: bool) -> Path:
    """The runtime archive for a target and build variant."""
    variant = ("_check" if check else "") + ("_prof" if prof else "")
    sub = "runtime-san" if sanitize else "runtime"
    lib = home() / "build" / sub / "lib" / f"libetc_{target}{variant}.a"
    if not lib.is_file():
        hint = "make runtime-san" if sanitize else "make"
        raise ToolchainError(f"the runtime for target '{target}' is not built ({lib}); "
                             f"run '{hint}' at the top of the etc repository")
    return lib


@dataclass(frozen=True)
class ProgramInfo:
    target: str
    prof: bool
    check: bool


def program_info(path: Path) -> ProgramInfo | None:
    """What etcc built `path` for, read from the marker the runtime links in."""
    with path.open("rb") as f:
        data = f.read()
    m = MARKER.search(data)
    if m is None:
        return None
    return ProgramInfo(m.group(1).decode(), m.group(2) == b"1", m.group(3) == b"1")
