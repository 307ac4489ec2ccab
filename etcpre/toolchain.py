"""Where the runtime is, what it offers, and how a built program describes itself.

`make` builds the runtime into `build/runtime/` of the repository (the package is
installed in editable mode); `ETC_HOME` may point elsewhere (a directory with
`runtime/include/etc.h` and `build/runtime/lib/`). `ETC_RUNTIME=debug` picks the
runtime built with its internal checks (`make runtime-debug`).

`TARGETS` is the one table of targets: one row per network layer
(`runtime/net/<name>/`, which the runtime Makefile finds by itself). etcc, etcrun and
every test that loops over targets read it, so a new layer is a folder there and a
row here.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType


@dataclass(frozen=True)
class Target:
    """One network layer, as etcc, etcrun and the tests know it."""

    name: str  # etcc -target NAME; runtime/net/NAME/; libetc_NAME*.a
    summary: str
    max_nodes: int  # etcrun -n is checked against it (the layer checks too)
    default_nodes: int | None = 1  # without -n; None: the program decides (smp: the CPUs)
    # etcpre.launch.<launcher>.launch() starts the nodes; None: etcrun execs the
    # program, which starts its own (seq: itself; smp: it forks them)
    launcher: str | None = None
    hosts: bool = False  # takes etcrun --hosts
    compiler: str | None = None  # the C compiler etcc uses for it; None: $CC or cc
    link_flags: tuple[str, ...] = ()  # after the runtime archive when etcc links
    tools: tuple[str, ...] = ()  # programs it needs on this machine (besides cc)
    # an environment variable that may name another compiler in place of `compiler`
    # (mpi: ETC_MPICC=mpicc.mpich); the runtime Makefile's layer.mk reads it too
    compiler_env: str | None = None

    def compiler_command(self) -> str | None:
        if self.compiler_env and os.environ.get(self.compiler_env, "").strip():
            return os.environ[self.compiler_env]
        return self.compiler

    def missing(self) -> str | None:
        """Why this target cannot be used on this machine, or None."""
        chosen = self.compiler_command()
        tools = [(shlex.split(chosen)[0] if chosen and t == self.compiler else t)
                 for t in self.tools]
        absent = [t for t in tools if shutil.which(t) is None]
        if absent:
            return f"{', '.join(absent)} {'is' if len(absent) == 1 else 'are'} not installed"
        return None


TARGETS: MappingProxyType[str, Target] = MappingProxyType({t.name: t for t in (
    Target("seq", "one node, no messages", max_nodes=1),
    Target("smp", "N processes on this machine, shared-memory rings", max_nodes=1024,
           default_nodes=None),
    Target("tcp", "N processes on one or several hosts, connected by TCP", max_nodes=65534,
           launcher="tcp", hosts=True),
    # mpicc both compiles and links (it adds MPI's flags and libraries); the same
    # binary also runs under a plain `mpirun -n N` or `srun -n N`
    Target("mpi", "N MPI ranks, started by mpirun, mpiexec or ETC_MPIRUN", max_nodes=65534,
           launcher="mpi", hosts=True, compiler="mpicc", tools=("mpicc", "mpiexec"),
           compiler_env="ETC_MPICC"),
)})
DEFAULT_TARGET = "smp"

# Every balancer of reference section 6, as registered in runtime/lb/registry.c
# (a test keeps the two lists equal).
BALANCERS = (
    "spn", "dual", "shis", "snd", "his", "range", "catapult", "rand", "rand-rcv-info",
    "rand-rcv", "rand-snd-info", "rand-hybrid-noinfo", "rand-hybrid",
    "rand-hybrid-piggyback", "minima", "nop",
)

MARKER = re.compile(
    rb"@\(#\)etc-program target=(\w+) prof=([01]) check=([01])(?: trace=([01]))? abi=(\d+)")


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


def target(name: str) -> Target:
    """The row of a target etcc or a program's marker named."""
    row = TARGETS.get(name)
    if row is None:
        raise ToolchainError(f"unknown target '{name}' (valid: {', '.join(TARGETS)})")
    return row


def c_compiler(name: str) -> list[str]:
    """The C compiler command etcc compiles and links a target's programs with."""
    return shlex.split(target(name).compiler_command() or os.environ.get("CC") or "cc")


def _search_dirs(cc: list[str]) -> list[str]:
    """The directories `cc` searches for #include <...>, in its order (as it prints
    them with -v), or none when it cannot say."""
    if not cc:
        return []
    try:  # (the C locale: the list's first and last lines are matched as gcc prints them)
        proc = subprocess.run([*cc, "-E", "-Wp,-v", "-x", "c", os.devnull, "-o", os.devnull],
                              capture_output=True, text=True, timeout=30, check=False,
                              env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return []
    dirs, inside = [], False
    for line in proc.stderr.splitlines():
        if line.startswith("#include <...> search starts here"):
            inside = True
        elif line.startswith("End of search list"):
            break
        elif inside and line.startswith(" "):
            dirs.append(os.path.normpath(line.strip().removesuffix(" (framework directory)")))
    return dirs


def target_include_dirs(name: str) -> list[str]:
    """What a target's own compiler adds to a plain C compiler's header search: the
    translator must see a program's headers as that compiler will (mpi: <mpi.h>
    through mpicc)."""
    if target(name).compiler_command() is None:
        return []
    try:
        plain = _search_dirs(shlex.split(os.environ.get("CC") or "cc"))
    except ValueError:  # a $CC that is no command line: etcc says so where it uses $CC
        plain = []
    # (a plain compiler that cannot say: all of the target compiler's, which is what
    # that compiler searches)
    return [d for d in _search_dirs(c_compiler(name)) if d not in set(plain)]


# ETC_RUNTIME: which build of the runtime etcc links (-fsanitize always takes the
# sanitized one, which also has the debug build's checks).
RUNTIME_BUILDS = {"": ("runtime", "make"), "debug": ("runtime-debug", "make runtime-debug")}


def gdb_script() -> Path:
    """The gdb extension for Threaded-C programs (docs/debugging.md)."""
    return home() / "runtime" / "gdb" / "etc-gdb.py"


def library(name: str, check: bool, prof: bool, sanitize: bool, trace: bool = False) -> Path:
    """The runtime archive for a target and build variant."""
    flavour = os.environ.get("ETC_RUNTIME", "")
    if flavour not in RUNTIME_BUILDS:
        raise ToolchainError(f"ETC_RUNTIME='{flavour}' is not a runtime build (valid: "
                             "'debug', or unset for the normal one)")
    sub, hint = ("runtime-san", "make runtime-san") if sanitize else RUNTIME_BUILDS[flavour]
    variant = ("_check" if check else "") + ("_prof" if prof else "") + ("_trace" if trace else "")
    lib = home() / "build" / sub / "lib" / f"libetc_{name}{variant}.a"
    if not lib.is_file():
        why = target(name).missing()
        if why:
            raise ToolchainError(f"the target '{name}' is not available here: {why}")
        raise ToolchainError(f"the runtime for target '{name}' is not built ({lib}); "
                             f"run '{hint}' at the top of the etc repository")
    return lib


@dataclass(frozen=True)
class ProgramInfo:
    target: str
    prof: bool
    check: bool
    trace: bool = False


def program_info(path: Path) -> ProgramInfo | None:
    """What etcc built `path` for, read from the marker the runtime links in."""
    with path.open("rb") as f:
        data = f.read()
    m = MARKER.search(data)
    if m is None:
        return None
    return ProgramInfo(m.group(1).decode(), m.group(2) == b"1", m.group(3) == b"1",
                       m.group(4) == b"1")
