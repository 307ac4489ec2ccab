"""Helpers the tests share: running etcc and etcrun, where programs and samples are."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from etcpre import toolchain
from etcpre.launch import mpi as mpi_launch

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PROGRAMS = ROOT / "tests" / "e2e" / "programs"
SAMPLES = ROOT / "samples"

# `make test-asan` builds every program with ASan+UBSan against the sanitized runtime.
SANITIZE = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer",
            "-fno-sanitize-recover=undefined"] if os.environ.get("ETC_TEST_SANITIZE") else []


def etcc(*args: str, cwd: Path | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "etcc"), *args], capture_output=True, text=True,
                          timeout=300, check=False, cwd=cwd or ROOT, env=env)


def etcrun(*args: str, timeout: float = 120,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "etcrun"), *args], capture_output=True, text=True,
                          timeout=timeout, check=False, cwd=ROOT, env=env)


Builder = Callable[..., Path]  # the `build` fixture: build(source, *flags, target=)


def run(prog: Path, *args: str, nodes: int | None = None, timeout: float = 120,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs a program through etcrun (-n nodes when given)."""
    cmd = [*(["-n", str(nodes)] if nodes is not None else []), str(prog), *args]
    return etcrun(*cmd, timeout=timeout, env=env)


def processes_of(prog: Path) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "exe") == str(prog):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def shm_entries() -> set[str]:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


class Leftovers:
    """Checks that a run leaves no process, shared-memory entry or temporary file."""

    def __init__(self, prog: Path, tmp: Path) -> None:
        self.prog, self.tmp = prog, tmp
        self.shm = shm_entries()
        self.env = {**os.environ, "TMPDIR": str(tmp)}

    def check(self) -> None:
        deadline = time.monotonic() + 5
        while processes_of(self.prog) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_of(self.prog) == [], "node processes left running"
        assert shm_entries() - self.shm == set(), "shared memory left in /dev/shm"
        assert list(self.tmp.iterdir()) == [], "temporary files left behind"


def sample_expected(name: str, n: int) -> list[str]:
    lines = (SAMPLES / f"{name}.out").read_text().splitlines()
    if name == "hello":
        return [f"hello from node {k} of {n}" for k in range(n)] + \
            [f"all {n} node(s) said hello"]
    if name == "getloop":
        return [re.sub(r"from node \d+", f"from node {n - 1}", lines[0])]
    return lines


def check_sample(name: str, n: int, stdout: str, causal: bool = True) -> None:
    """`causal`: lines of different nodes appear in the order they were written
    (smp); on tcp each node's lines keep their order, but nodes' lines may mix."""
    got = stdout.splitlines()
    want = sample_expected(name, n)
    if name == "hello" and not causal:
        assert sorted(got) == sorted(want), stdout
    elif name == "hello":
        # the greetings come in any order; the summary comes after all of them
        assert sorted(got[:-1]) == sorted(want[:-1]) and got[-1] == want[-1], stdout
    else:
        assert got == want, stdout


# ---------------------------------------------------------------- targets

# Every test that runs a program on each target loops over the target table, so a
# new target is tested without a change here; one whose toolchain is missing on
# this machine is skipped, saying why.
TARGETS = list(toolchain.TARGETS.values())
TARGET_IDS = [t.name for t in TARGETS]
# Those that run more than one node: where remote operations happen.
MULTI_NODE_TARGETS = [t for t in TARGETS if t.max_nodes > 1]
# Layers whose etc_net_extend grows a message they still hold (docs/protocols.md,
# N13: a coalescing buffer's last frame); the others always refuse.
GROWING = {"tcp", "mpi"}
# Layers whose etc_net_put takes big blocks on itself (N12: tcp T11, mpi P10); the
# others return -1 and the core sends the bytes as messages.
PUTTING = {"tcp", "mpi"}
# The node counts a target's programs run on: 1, 2 and 3 nodes, within its limit;
# smp, the cheapest, on more.
NODE_COUNTS = {"smp": [1, 2, 4, 16]}
# Targets whose nodes' output lines appear in the order they were written, across
# nodes (smp writes them under one lock; tcp relays each node's own lines in order,
# but lines of different nodes may mix): check_sample(causal=...).
CAUSAL = {"seq", "smp"}


def node_counts(target: toolchain.Target) -> list[int]:
    return [n for n in NODE_COUNTS.get(target.name, [1, 2, 3]) if n <= target.max_nodes]


def target_runs() -> list[tuple[toolchain.Target, int]]:
    """(target, nodes) for every target and each of its node counts."""
    return [(t, n) for t in TARGETS for n in node_counts(t)]


def run_ids(runs: list[tuple[toolchain.Target, int]]) -> list[str]:
    return [f"{t.name}-{n}" for t, n in runs]


def require(target: toolchain.Target) -> None:
    """Skips the test when the target cannot be used on this machine."""
    why = target.missing()
    if why:
        pytest.skip(f"target {target.name}: {why}")


def plain_mpi_launcher(n: int) -> tuple[list[str], dict[str, str]]:
    """The MPI launcher -n N, with what Open MPI needs here (as etcrun adds it, P9):
    ETC_MPIRUN's when set (`make test` runs the mpi tests again under MPICH so),
    else mpirun or mpiexec."""
    env = {**os.environ}
    cmd = mpi_launch.plain_command(n, env)
    env.pop("ETC_MPIRUN", None)
    env.pop("ETC_NODES", None)
    return cmd, env
