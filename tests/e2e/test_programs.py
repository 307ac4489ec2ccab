"""Test programs that exercise the runtime end to end, on seq and on 1-16 smp nodes."""

from __future__ import annotations

import os

import pytest

from support import SANITIZE, Builder, run

NODES = [1, 2, 4, 16]


@pytest.mark.parametrize("n", NODES)
def test_every_remote_operation_between_every_pair(build: Builder, n: int) -> None:
    proc = run(build("remote_ops.tc"), nodes=n, timeout=120)
    assert proc.returncode == 0, proc.stderr
    pairs = 1 if n == 1 else n * (n - 1)
    assert proc.stdout == f"remote ops: {n} nodes, {pairs} pairs, 0 errors\n"


# Block moves take one of three paths: a memcpy through the shared windows and
# heap (the default), process_vm_readv/writev (ETC_SMP_SHARED=0, and for memory
# outside them), or messages (ETC_SMP_DIRECT=0, as where process_vm_* is denied).
# Every path must give the same results.
MODES = {"shared": {}, "process_vm": {"ETC_SMP_SHARED": "0"}, "messages": {"ETC_SMP_DIRECT": "0"}}


@pytest.mark.parametrize("mode", ["process_vm", "messages"])
def test_remote_operations_on_every_block_move_path(build: Builder, mode: str) -> None:
    proc = run(build("remote_ops.tc"), nodes=4, env={**os.environ, **MODES[mode]})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "remote ops: 4 nodes, 12 pairs, 0 errors\n"


@pytest.mark.parametrize("n", NODES)
def test_block_moves_of_malloced_memory(build: Builder, n: int) -> None:
    # also: a fork() inside a node gets private copies and cannot write into it
    proc = run(build("heap_blocks.tc"), nodes=n, timeout=120)
    assert proc.returncode == 0, proc.stderr
    pairs = 1 if n == 1 else n * (n - 1)
    assert proc.stdout == f"heap blocks: {n} nodes, {pairs} pairs, 0 errors\n"


@pytest.mark.parametrize("mode", ["process_vm", "messages"])
def test_block_moves_of_malloced_memory_on_every_path(build: Builder, mode: str) -> None:
    proc = run(build("heap_blocks.tc"), nodes=4, env={**os.environ, **MODES[mode]})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "heap blocks: 4 nodes, 12 pairs, 0 errors\n"


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


@pytest.mark.parametrize("n", NODES)
def test_every_node_has_its_own_globals(build: Builder, n: int) -> None:
    proc = run(build("globals_per_node.tc"), nodes=n)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{n} nodes, {n} distinct copies of value, same address: yes\n"


@pytest.mark.parametrize(("n", "total"), [(1, 1_000_000), (2, 1_000_000), (4, 1_000_000),
                                          (16, 300_000)])
def test_stress_nothing_lost_or_duplicated(build: Builder, n: int, total: int) -> None:
    proc = run(build("stress.tc"), str(total), nodes=n, timeout=180)
    assert proc.returncode == 0, proc.stderr
    pairs = 1 if n == 1 else n * (n - 1)
    m = total // pairs * pairs
    assert proc.stdout == (f"stress: {n} nodes, {m} values and {m} syncs delivered, "
                           "0 errors, sums agree\n")


@pytest.mark.parametrize("n", [2, 4])
def test_a_burst_bigger_than_a_ring_arrives_while_the_sender_stays_busy(build: Builder,
                                                                          n: int) -> None:
    # what does not fit in a ring waits in the sender's overflow queue; a sender
    # that never goes idle must still move it on at its thread boundaries (the
    # nop balancer sends nothing that would make it poll)
    proc = run(build("burst.tc"), nodes=n, timeout=60, env={**os.environ, "ETC_LB": "nop"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "burst: 300000 syncs from node 0 to node 1, all arrived\n"


@pytest.mark.parametrize("target", ["seq", "smp"])
def test_waiting_threads_do_not_keep_the_run_alive(build: Builder, target: str) -> None:
    for n in ([1] if target == "seq" else [1, 4]):
        proc = run(build("quiescence.tc", target=target), nodes=n, timeout=30)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == f"started {n} waiters\n"


@pytest.mark.parametrize(("target", "n"), [("seq", 1), ("smp", 1), ("smp", 2)])
def test_call_in_loops_and_ifs(build: Builder, target: str, n: int) -> None:
    proc = run(build("call_loop.tc", target=target), "200000", nodes=n)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == \
        "calls: 200000 iterations, sum 66566700000, odd 900000, fetched 42\n"


def tree_checksum(depth: int, fanout: int, iters: int) -> int:
    """What token_work.tc computes: leaf k spins a 64-bit LCG from k."""
    total = 0
    for k in range(fanout ** depth):
        x = k
        for _ in range(iters):
            x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
        total += x & 0xFFFF
    return total


@pytest.mark.parametrize("n", NODES)
def test_tokens_give_the_same_result_anywhere(build: Builder, n: int) -> None:
    proc = run(build("token_work.tc"), "6", "3", "100", nodes=n)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"tree(6, 3): 729 leaves, checksum {tree_checksum(6, 3, 100)}\n"


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
