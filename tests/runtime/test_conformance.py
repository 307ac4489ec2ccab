"""The network layer interface (runtime/net/net.h) holds on every target of the
target table: conform_net.c, a stand-in core that defines only the services net.h
offers, is linked with each layer alone (libetc_net_<target>.a, so a layer that uses
any other core symbol does not link) and run through etcrun on 1 to 4 nodes, with
the normal and the debug build of the layer (ETC_ASSERT): per-pair order, messages
that grow after they were sent (N13), messages above the frame size, an overflow
burst from a node that only makes thread-boundary calls, the boundary word, finish
with queued output; and an abort on one node ends the whole run at once, reported
once, with nothing left behind."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from etcpre import toolchain

from support import GROWING, PUTTING, ROOT, TARGET_IDS, TARGETS, Leftovers, etcrun, require

HERE = Path(__file__).resolve().parent
FLAVOURS = ["runtime", "runtime-debug"]  # build/<flavour>/: make, make runtime-debug

Conform = Callable[[toolchain.Target, str], Path]


@pytest.fixture(scope="module")
def conform(tmp_path_factory: pytest.TempPathFactory) -> Conform:
    """conform(target, flavour) -> the conformance program linked with that layer."""
    out = tmp_path_factory.mktemp("conform")
    cache: dict[tuple[str, str], Path] = {}

    def _build(target: toolchain.Target, flavour: str) -> Path:
        require(target)
        key = (target.name, flavour)
        if key not in cache:
            lib = toolchain.home() / "build" / flavour / "lib" / f"libetc_net_{target.name}.a"
            assert lib.is_file(), f"{lib} is missing (make; make runtime-debug)"
            prog = out / f"conform_{target.name}_{flavour}"
            cmd = [*toolchain.c_compiler(target.name), "-std=c11", "-D_GNU_SOURCE", "-O2",
                   "-Wall", "-Wextra", "-Werror", "-no-pie", f"-I{ROOT / 'runtime'}",
                   f"-I{ROOT / 'runtime' / 'include'}", str(HERE / "conform_net.c"), str(lib),
                   *target.link_flags, "-pthread", "-o", str(prog)]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            assert proc.returncode == 0, proc.stderr
            cache[key] = prog
        return cache[key]

    return _build


def nodes_of(target: toolchain.Target) -> list[int]:
    return [n for n in (1, 2, 3, 4) if n <= target.max_nodes]


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_layer_conforms(conform: Conform, target: toolchain.Target, flavour: str,
                        tmp_path: Path) -> None:
    prog = conform(target, flavour)
    left = Leftovers(prog, tmp_path)
    for n in nodes_of(target):
        proc = etcrun("-n", str(n), str(prog), timeout=240, env=left.env)
        assert proc.returncode == 0, f"{n} nodes: {proc.stderr}"
        assert proc.stderr == "", proc.stderr
        plural = "node" if n == 1 else "nodes"
        assert (f"conform: {target.name}, {n} {plural}, max message " in proc.stdout
                and ": order, extend, big, put, burst, boundary, finish: ok\n" in proc.stdout
                ), proc.stdout
        # N11: tcp receives a big data message's rest in place (one of max_message
        # from every other node in the big phase), the other layers never
        placed = int(re.search(r"received (\d+) messages in place", proc.stdout)[1])
        assert (placed >= n - 1) if target.name == "tcp" else (placed == 0), proc.stdout
        # N13: the coalescing layers let most pieces join the message before them
        # (a poll, flush or other message ends one), the others never
        joined = int(re.search(r"joined (\d+) pieces", proc.stdout)[1])
        growing = target.name in GROWING and n > 1
        assert joined > 20000 * (n - 1) // 2 if growing else joined == 0, proc.stdout
        # N12: tcp and mpi take the blocks from 16 KiB (tcp: 5 of the 7 sizes) or 64
        # KiB (mpi: 4) on themselves, to each of 2 neighbours in 3 rounds (tcp may
        # leave one to messages when output waits before it); the others none
        puts = int(re.search(r"put (\d+) blocks through the layer", proc.stdout)[1])
        assert 0 < puts <= 5 * 2 * 3 if target.name in PUTTING and n > 1 else puts == 0, \
            proc.stdout
        for k in range(1, n):  # a line printed just before etc_net_finish
            assert f"conform: node {k} of {n} finishing\n" in proc.stdout, proc.stdout
        # node 0's last output, without a newline, written when it finished: as it
        # is where the node writes the run's stdout itself, with a newline where its
        # output is relayed (N10)
        relayed = n > 1 or target.launcher is not None
        assert "conform: the end" in proc.stdout
        assert ("conform: the end\n" in proc.stdout) == relayed, proc.stdout
        left.check()


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_abort_ends_every_node(conform: Conform, target: toolchain.Target,
                               tmp_path: Path) -> None:
    prog = conform(target, "runtime")
    left = Leftovers(prog, tmp_path)
    for n in nodes_of(target):
        t0 = time.monotonic()
        proc = etcrun("-n", str(n), str(prog), "abort", timeout=60, env=left.env)
        assert time.monotonic() - t0 < 20, f"{n} nodes: the run did not end at once"
        assert proc.returncode != 0
        want = f"etc: error: node {n - 1}: conformance: node {n - 1} ends the run on purpose"
        assert want in proc.stderr, proc.stderr
        assert proc.stderr.count("etc: error:") == 1, proc.stderr
        left.check()
