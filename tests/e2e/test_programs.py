"""Test programs that exercise the runtime end to end: one table of programs and
their expected output, run on every target of the target table and each of its node
counts (support.node_counts); the stress programs also with the runtime's debug build
(its internal invariants checked); and what only smp has (its block-move paths and
shared memory)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from etcpre import toolchain

from support import (
    GROWING,
    MULTI_NODE_TARGETS,
    SANITIZE,
    TARGET_IDS,
    TARGETS,
    Builder,
    run,
    target_runs,
)
from support import PROGRAMS as PROGRAM_DIR


def pairs(n: int) -> int:
    return 1 if n == 1 else n * (n - 1)


def tree_checksum(depth: int, fanout: int, iters: int) -> int:
    """What token_work.tc computes: leaf k spins a 64-bit LCG from k."""
    total = 0
    for k in range(fanout ** depth):
        x = k
        for _ in range(iters):
            x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
        total += x & 0xFFFF
    return total


def stress_line(n: int, total: int) -> str:
    m = total // pairs(n) * pairs(n)
    return f"stress: {n} nodes, {m} values and {m} syncs delivered, 0 errors, sums agree\n"


@dataclass(frozen=True)
class Program:
    source: str
    args: tuple[str, ...]
    expect: Callable[[int], str]  # stdout on n nodes
    min_nodes: int = 1
    max_nodes: int = 64
    env: dict[str, str] = field(default_factory=dict)
    what: str = ""


PROGRAMS = [
    Program("remote_ops.tc", (),
            lambda n: f"remote ops: {n} nodes, {pairs(n)} pairs, 0 errors\n",
            what="every remote operation between every pair"),
    Program("heap_blocks.tc", (),
            lambda n: f"heap blocks: {n} nodes, {pairs(n)} pairs, 0 errors\n",
            what="block moves of malloc'ed memory; a fork() in a node gets private copies"),
    Program("blocks.tc", (),
            lambda n: f"blocks: {n} nodes, {30 * n * n + 30 * n} moves, 0 errors\n", max_nodes=4,
            what="block moves of 1 byte to 1 MiB, many at once, both ways, the source "
                 "overwritten at once (mpi: P10)"),
    Program("globals_per_node.tc", (),
            lambda n: f"{n} nodes, {n} distinct copies of value, same address: yes\n",
            what="every node has its own globals"),
    Program("quiescence.tc", (), lambda n: f"started {n} waiters\n",
            what="threads left waiting do not keep the run alive"),
    Program("call_loop.tc", ("20000",),
            lambda n: "calls: 20000 iterations, sum 6656670000, odd 90000, fetched 42\n",
            what="CALL in loops and ifs"),
    Program("token_work.tc", ("6", "3", "100"),
            lambda n: f"tree(6, 3): 729 leaves, checksum {tree_checksum(6, 3, 100)}\n",
            what="tokens give the same result anywhere"),
    Program("stress.tc", ("300000",), lambda n: stress_line(n, 300000),
            what="nothing lost or duplicated"),
    Program("poll_wait.tc", (), lambda n: f"poll wait: {n} waiters done\n",
            what="POLL() in a thread a message started delivers the messages it waits for"),
    Program("invoke_stream.tc", (),
            lambda n: f"invoke stream: {n} nodes, {19600 * pairs(n)} calls, 0 errors, "
                      "sums agree\n",
            what="pipelined INVOKEs of functions with different parameter frames, with "
                 "other messages between: calls of one function travel as one message "
                 "where the layer lets it grow (tcp, mpi: N13)"),
    # What does not fit in a channel waits in the sender's layer; a sender that
    # never goes idle must still move it on at its thread boundaries (the nop
    # balancer sends nothing that would make it poll).
    Program("burst.tc", (), lambda n: "burst: 300000 syncs from node 0 to node 1, all arrived\n",
            min_nodes=2, env={"ETC_LB": "nop"},
            what="a burst bigger than a channel arrives while the sender stays busy"),
]
RUNS = target_runs()


def cases(runs: list[tuple[toolchain.Target, int]],
          programs: list[Program]) -> list[tuple[toolchain.Target, int, Program]]:
    return [(t, n, p) for t, n in runs for p in programs if p.min_nodes <= n <= p.max_nodes]


def case_ids(cs: list[tuple[toolchain.Target, int, Program]]) -> list[str]:
    return [f"{t.name}-{n}-{p.source.removesuffix('.tc')}" for t, n, p in cs]


CASES = cases(RUNS, PROGRAMS)


@pytest.mark.parametrize(("target", "n", "program"), CASES, ids=case_ids(CASES))
def test_program(build: Builder, target: toolchain.Target, n: int, program: Program) -> None:
    proc = run(build(program.source, target=target.name), *program.args, nodes=n,
               timeout=180, env={**os.environ, **program.env})
    assert proc.returncode == 0, f"{program.what}: {proc.stderr}"
    assert proc.stdout == program.expect(n), program.what


# N13: on a layer that coalesces (tcp, mpi) pipelined calls of one function join
# the message before them; a core that stopped joining them would still compute
# right, only slower. A wrapper around etc_net_extend counts the joins.
@pytest.mark.parametrize("target", MULTI_NODE_TARGETS, ids=[t.name for t in MULTI_NODE_TARGETS])
def test_pipelined_invokes_travel_as_one_message(build: Builder,
                                                 target: toolchain.Target) -> None:
    prog = build("invoke_stream.tc", str(PROGRAM_DIR / "joins_counter.c"),
                 "-Wl,--wrap=etc_net_extend", target=target.name)
    proc = run(prog, nodes=2, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"invoke stream: 2 nodes, {19600 * 2} calls, 0 errors, sums agree\n"
    joined = sorted(re.findall(r"joins: 1000 calls joined a message on node (\d)", proc.stderr))
    assert joined == (["0", "1"] if target.name in GROWING else []), proc.stderr


# The stress programs with the runtime's debug build, on each target's largest node
# count: a broken invariant (a ring's bounds, overflow accounting, the heap's
# boundary tags, the termination counters, a token handed on twice) ends the run.
STRESS = [p for p in PROGRAMS
          if p.source in ("remote_ops.tc", "stress.tc", "burst.tc", "invoke_stream.tc")]
DEBUG_CASES = cases([(t, n) for t, n in RUNS if n == max(m for u, m in RUNS if u is t)], STRESS)


@pytest.mark.parametrize(("target", "n", "program"), DEBUG_CASES, ids=case_ids(DEBUG_CASES))
def test_stress_with_the_debug_runtime(build: Builder, target: toolchain.Target, n: int,
                                       program: Program) -> None:
    prog = build(program.source, target=target.name, runtime="debug")
    proc = run(prog, *program.args, nodes=n, timeout=180, env={**os.environ, **program.env})
    assert proc.returncode == 0, f"{program.what}: {proc.stderr}"
    assert proc.stdout == program.expect(n), program.what


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_a_million_values_and_syncs(build: Builder, target: toolchain.Target) -> None:
    n = min(4, target.max_nodes)
    proc = run(build("stress.tc", target=target.name), "1000000", nodes=n, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == stress_line(n, 1000000)


# ---------------------------------------------------------------- smp only

# Block moves take one of three paths: a memcpy through the shared windows and
# heap (the default), process_vm_readv/writev (ETC_SMP_SHARED=0, and for memory
# outside them), or messages (ETC_SMP_DIRECT=0, as where process_vm_* is denied).
# Every path must give the same results.
MODES = {"shared": {}, "process_vm": {"ETC_SMP_SHARED": "0"}, "messages": {"ETC_SMP_DIRECT": "0"}}


@pytest.mark.parametrize("mode", ["process_vm", "messages"])
@pytest.mark.parametrize("source", ["remote_ops.tc", "heap_blocks.tc"])
def test_smp_block_moves_on_every_path(build: Builder, mode: str, source: str) -> None:
    program = next(p for p in PROGRAMS if p.source == source)
    proc = run(build(source), nodes=4, env={**os.environ, **MODES[mode]})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == program.expect(4)


@pytest.mark.parametrize(("n", "mode", "want"), [
    (3, "shared", "shared"), (1, "shared", "private"), (2, "process_vm", "private"),
    (2, "messages", "private")])
def test_globals_and_heap_live_in_shared_memory(build: Builder, n: int, mode: str,
                                                 want: str) -> None:
    # what makes block moves a plain memcpy: each node's globals and heap in
    # memory every node maps (nothing to share on one node, or when turned off)
    if SANITIZE:
        want = "private"  # ASan must own malloc: sanitizer builds share nothing
    proc = run(build("shared_maps.tc"), nodes=n, env={**os.environ, **MODES[mode]})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "".join(f"node {k}: globals {want}, heap {want}\n" for k in range(n))


def test_tokens_migrate_to_an_idle_node(build: Builder) -> None:
    # ~0.3 s of work in 729 tokens, all created on node 0: node 1 must get some
    proc = run(build("token_work.tc"), "6", "3", "200000", nodes=2)
    assert proc.returncode == 0, proc.stderr
    assert "leaves ran on 2 of 2 nodes" in proc.stderr


def test_fifty_fib_runs_on_four_nodes(build: Builder) -> None:
    prog = build("fib.tc")
    for i in range(50):
        proc = run(prog, "18", nodes=4, timeout=30)
        assert proc.returncode == 0, f"run {i}: {proc.stderr}"
        assert proc.stdout == "fib(18) = 2584\n", f"run {i}"
