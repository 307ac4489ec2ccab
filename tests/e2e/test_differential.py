"""Differential: every sample, EBS program and e2e program gives the same output on
every target of the target table. With one node, every target prints what seq prints;
with three nodes, every other target prints the lines smp prints (compared as a
multiset: on tcp and mpi, lines of different nodes may come in another order). A
program whose output depends on the target by design, or whose run fails by design,
is listed with the reason instead.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from etcpre import toolchain

from support import PROGRAMS, SAMPLES, TARGETS, Builder, require, run

EBS = SAMPLES / "ebs"

# (source, arguments): small sizes; each run takes well under a second
CASES: list[tuple[Path, list[str]]] = [
    *[(tc, []) for tc in sorted(SAMPLES.glob("*.tc"))],
    *[(tc, []) for tc in sorted(EBS.glob("*.tc"))],
    (PROGRAMS / "blocks.tc", []),
    (PROGRAMS / "burst.tc", []),
    (PROGRAMS / "busy_wait.tc", ["0.01"]),
    (PROGRAMS / "call_loop.tc", ["20000"]),
    (PROGRAMS / "debug_me.tc", ["12"]),
    (PROGRAMS / "globals_per_node.tc", []),
    (PROGRAMS / "heap_blocks.tc", []),
    (PROGRAMS / "invoke_stream.tc", ["2000"]),
    (PROGRAMS / "lb_fib.tc", ["15"]),
    (PROGRAMS / "lb_idle.tc", ["0.05"]),
    (PROGRAMS / "lb_knary.tc", ["3", "4", "1", "200"]),
    (PROGRAMS / "lb_queens.tc", ["8", "2"]),
    (PROGRAMS / "launcher_lookalike.tc", []),
    (PROGRAMS / "leak.tc", []),
    (PROGRAMS / "poll_wait.tc", []),
    (PROGRAMS / "prof_parts.tc", ["0.01"]),
    (PROGRAMS / "quiescence.tc", []),
    (PROGRAMS / "remote_ops.tc", []),
    (PROGRAMS / "stress.tc", ["30000"]),
    (PROGRAMS / "token_work.tc", ["4", "3", "10"]),
]

# Not compared, and why.
EXCLUDED = {
    "adapt": "prints the leaves each node ran, which depend on the balancer's timing",
    "check_misuse": "reports a misuse in the checking build: its run fails by design",
    "crash": "a node crashes by design",
    "deadlock": "deadlocks by design",
    "endless": "runs until interrupted",
    "exit_early": "a node exits early by design",
    "forever": "runs until interrupted",
    "idle_cpu": "prints measured CPU times, which differ from run to run",
    "long_thread_crash": "a node crashes by design",
    "remote_misuse": "misuses a remote slot or node: its run fails by design",
    "shared_maps": "prints whether memory is shared between nodes, which only smp does",
    "signals": "a node crashes by design",
    "timing": "prints measured times, which differ from run to run",
    "unterminated": "each node writes a line without its newline, in an order no target fixes",
}
NEEDS_TWO_NODES = {"burst"}  # one node sending to another


def test_every_program_is_compared_or_excluded_with_a_reason() -> None:
    compared = {tc.stem for tc, _ in CASES if tc.parent == PROGRAMS}
    assert compared | set(EXCLUDED) == {tc.stem for tc in PROGRAMS.glob("*.tc")}
    assert not compared & set(EXCLUDED)
    assert {tc.stem for tc, _ in CASES if tc.parent == EBS} == \
        {tc.stem for tc in EBS.glob("*.tc")}
    assert {tc.stem for tc, _ in CASES if tc.parent == SAMPLES} == \
        {tc.stem for tc in SAMPLES.glob("*.tc")}


# leak.tc loses memory on purpose (for the valgrind tests): a sanitized build's leak
# check must not fail it here
ENV = {"leak": {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}}


Output = Callable[[Path, list[str], str, int], str]


@pytest.fixture(scope="module")
def output(build: Builder) -> Output:
    """output(source, args, target, nodes) -> its stdout, run once (the references,
    seq and smp, are compared with every other target)."""
    seen: dict[tuple[str, tuple[str, ...], str, int], str] = {}

    def _output(source: Path, args: list[str], target: str, n: int) -> str:
        key = (str(source), tuple(args), target, n)
        if key not in seen:
            proc = run(build(source, target=target), *args, nodes=n, timeout=120,
                       env=ENV.get(source.stem))
            assert proc.returncode == 0, f"{target} on {n} node(s): {proc.stderr}"
            seen[key] = proc.stdout
        return seen[key]

    return _output


def ids(cases: list[tuple[Path, list[str]]]) -> list[str]:
    return [f"{tc.parent.name}/{tc.stem}" for tc, _ in cases]


ONE_NODE = [c for c in CASES if c[0].stem not in NEEDS_TWO_NODES]


# each target against seq on one node, each target of three nodes or more against smp
ONE_NODE_TARGETS = [t for t in TARGETS if t.name != "seq"]
THREE_NODE_TARGETS = [t for t in TARGETS if t.name not in ("seq", "smp") and t.max_nodes >= 3]


def against(output: Output, source: Path, args: list[str], reference: str,
            target: toolchain.Target, n: int) -> tuple[str, str]:
    """(the reference target's output, the target's) on n nodes."""
    require(target)
    ref = output(source, args, reference, n)
    assert ref, "no output to compare"
    return ref, output(source, args, target.name, n)


@pytest.mark.parametrize("target", ONE_NODE_TARGETS, ids=[t.name for t in ONE_NODE_TARGETS])
@pytest.mark.parametrize(("source", "args"), ONE_NODE, ids=ids(ONE_NODE))
def test_one_node_same_output_on_every_target(output: Output, source: Path, args: list[str],
                                              target: toolchain.Target) -> None:
    seq, text = against(output, source, args, "seq", target, 1)
    assert text == seq, f"{target.name} differs from seq:\n{text}\n---\n{seq}"


@pytest.mark.parametrize("target", THREE_NODE_TARGETS, ids=[t.name for t in THREE_NODE_TARGETS])
@pytest.mark.parametrize(("source", "args"), CASES, ids=ids(CASES))
def test_three_nodes_same_output_as_smp(output: Output, source: Path, args: list[str],
                                        target: toolchain.Target) -> None:
    smp, text = against(output, source, args, "smp", target, 3)
    assert Counter(text.splitlines()) == Counter(smp.splitlines()), \
        f"smp:\n{smp}\n{target.name}:\n{text}"
