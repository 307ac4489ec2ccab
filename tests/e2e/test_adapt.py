"""Self-allocating nodes (ETC_ADAPT=1, etcrun --adapt; runtime/core/adapt.c,
docs/protocols.md A1-A4), driven through the injectable load source (ETC_LOADAVG):
under every balancer, with the machine said to be overloaded, every node but 0 is
dormant, takes no work from the balancer and still serves its own activations; told
the machine is idle again, the dormant nodes wake up and take work. Also: idle nodes
burn no CPU while one node computes, on every target."""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

import pytest

from etcpre import toolchain

import support
from support import Builder, etcrun, run

NODES = 4
TREE = ["6", "3", "20000"]  # 729 leaves
# balancers that move tokens to idle nodes while the run goes on (minima passes one
# token once, at the start; nop never)
MOVERS = [lb for lb in toolchain.BALANCERS if lb not in ("minima", "nop")]
OVERLOADED = "0.00 0.00 0.00 99/100 1\n"
MULTI_NODE = [t.name for t in support.MULTI_NODE_TARGETS]
# the targets whose nodes a launcher starts, each a process that talks by messages
LAUNCHED = [t.name for t in support.TARGETS if t.launcher]


def _load_file(tmp_path: Path, text: str) -> dict[str, str]:
    f = tmp_path / "loadavg"
    f.write_text(text)
    return {**os.environ, "ETC_LOADAVG": str(f)}


@cache
def _checksum(prog: Path) -> str:
    """The tree's checksum on one node, where no balancer and no adapt can act."""
    proc = run(prog, *TREE, nodes=1)
    assert proc.returncode == 0, proc.stderr
    found = re.search(r"^phase 1 checksum (\d+)$", proc.stdout, re.M)
    assert found, proc.stdout
    return found.group(1)


def _leaves(out: str, phase: int) -> dict[int, int]:
    return {int(k): int(v) for k, v in
            re.findall(rf"^phase {phase} node (\d+) leaves (\d+)$", out, re.M)}


def _check_activations_served(out: str) -> None:
    assert re.findall(r"^node (\d+) says (\d+)$", out, re.M) == [
        (str(k), str(k)) for k in range(NODES)], out


@pytest.mark.parametrize("lb", toolchain.BALANCERS)
def test_dormant_nodes_serve_their_activations_and_wake_up(build: Builder, lb: str,
                                                            tmp_path: Path) -> None:
    prog = build("adapt.tc")
    env = _load_file(tmp_path, OVERLOADED)
    proc = etcrun("--adapt", "--lb", lb, "-n", str(NODES), str(prog), *TREE, "wake",
                  env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    _check_activations_served(proc.stdout)
    expect = _checksum(prog)
    for phase in (1, 2):
        assert f"phase {phase} checksum {expect}\n" in proc.stdout, proc.stdout
        assert sum(_leaves(proc.stdout, phase).values()) == 3 ** 6, proc.stdout
    # overloaded: the balancer gave the dormant nodes nothing
    assert _leaves(proc.stdout, 1) == {0: 3 ** 6, 1: 0, 2: 0, 3: 0}, proc.stdout
    if lb in MOVERS:  # awake again: they take work
        assert any(_leaves(proc.stdout, 2)[k] > 0 for k in range(1, NODES)), proc.stdout


def test_without_adapt_the_load_is_ignored(build: Builder, tmp_path: Path) -> None:
    # what makes the test above able to fail: the same run without --adapt spreads
    # the first tree over the nodes
    prog = build("adapt.tc")
    proc = run(prog, *TREE, nodes=NODES, env=_load_file(tmp_path, OVERLOADED))
    assert proc.returncode == 0, proc.stderr
    assert any(_leaves(proc.stdout, 1)[k] > 0 for k in range(1, NODES)), proc.stdout


def _one_cpu(tmp_path: Path, runnable: int) -> dict[str, str]:
    """A machine of one CPU (a fake cgroup quota) running `runnable` tasks."""
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    (cgroup / "cpu.max").write_text("100000 100000\n")
    return {**_load_file(tmp_path, f"0.00 0.00 0.00 {runnable}/100 1\n"),
            "ETC_CGROUP_DIR": str(cgroup), "ETC_ADAPT": "1"}


@pytest.mark.parametrize(("runnable", "dormant"), [(2, {3}), (3, {2, 3}), (1, set())])
def test_the_highest_numbered_nodes_go_first(build: Builder, tmp_path: Path, runnable: int,
                                             dormant: set[int]) -> None:
    # A1: one task too many sends node 3 to sleep, two nodes 2 and 3
    prog = build("adapt.tc")
    # leaves 5 times longer than elsewhere (about 0.15 s of work): every awake node
    # gets some even on a loaded machine
    proc = run(prog, *TREE[:2], "100000", nodes=NODES, env=_one_cpu(tmp_path, runnable))
    assert proc.returncode == 0, proc.stderr
    _check_activations_served(proc.stdout)
    leaves = _leaves(proc.stdout, 1)
    assert {k for k in range(NODES) if leaves[k] == 0} == dormant, proc.stdout


@pytest.mark.parametrize("target", LAUNCHED)
def test_dormant_nodes_on_message_passing_targets(build: Builder, tmp_path: Path,
                                                  target: str) -> None:
    prog = build("adapt.tc", target=target)
    proc = etcrun("--adapt", "-n", str(NODES), str(prog), *TREE, "wake",
                  env=_load_file(tmp_path, OVERLOADED), timeout=120)
    assert proc.returncode == 0, proc.stderr
    _check_activations_served(proc.stdout)
    assert _leaves(proc.stdout, 1) == {0: 3 ** 6, 1: 0, 2: 0, 3: 0}, proc.stdout
    assert any(_leaves(proc.stdout, 2)[k] > 0 for k in range(1, NODES)), proc.stdout


@pytest.mark.parametrize("target", MULTI_NODE)
def test_a_bad_adapt_setting_is_an_error(build: Builder, target: str) -> None:
    prog = build("hello.tc", target=target)
    proc = run(prog, nodes=2, env={**os.environ, "ETC_ADAPT": "yes"})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "etc: error: ETC_ADAPT='yes' is not 0 or 1\n"


@pytest.mark.parametrize("target", MULTI_NODE)
@pytest.mark.parametrize("nodes", [2, 8, 64])
def test_idle_nodes_burn_no_cpu(build: Builder, target: str, nodes: int) -> None:
    # the rule: one node computing for 1 s, every other node idle, the run uses
    # at most 1.1 s of CPU (start-up and the end left out: each node measures its own
    # process from MAIN's first message to its last)
    prog = build("idle_cpu.tc", target=target)
    proc = run(prog, "1", nodes=nodes, timeout=180)
    assert proc.returncode == 0, proc.stderr
    cpu = {int(k): float(v) for k, v in re.findall(r"^cpu (\d+) ([\d.]+)$", proc.stdout, re.M)}
    assert sorted(cpu) == list(range(nodes)) and "done" in proc.stdout.splitlines(), proc.stdout
    idle = sum(cpu.values()) - cpu[0]
    assert sum(cpu.values()) <= 1.1, f"node 0 used {cpu[0]:.3f} s, the idle nodes {idle:.3f} s"
