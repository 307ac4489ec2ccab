"""etcrun: running programs on N nodes, and its errors."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from etcpre import toolchain

from support import TARGETS, Builder, etcrun, require


@pytest.mark.parametrize("target", [t for t in TARGETS if t.max_nodes < 65534],
                         ids=[t.name for t in TARGETS if t.max_nodes < 65534])
def test_node_limit_of_the_target(build: Builder, target: toolchain.Target) -> None:
    # etcrun knows the limit from the target table; the program itself agrees
    prog = build("hello.tc", target=target.name)
    n = target.max_nodes + 1
    proc = etcrun("-n", str(n), str(prog))
    assert proc.returncode == 2
    limit = "1 node" if target.max_nodes == 1 else f"at most {target.max_nodes} nodes"
    assert f"built for the {target.name} target, which runs on {limit}, not {n}" in proc.stderr
    alone = subprocess.run([str(prog)], capture_output=True, text=True, timeout=30,
                           check=False, env={**os.environ, "ETC_NODES": str(n)})
    assert alone.returncode != 0 and "etc: error:" in alone.stderr, alone.stderr


def test_seq_runs_one_node_only(build: Builder) -> None:
    prog = build("hello.tc", target="seq")
    assert etcrun("-n", "1", str(prog)).returncode == 0
    proc = etcrun("-n", "2", str(prog))
    assert proc.returncode == 2
    assert "built for the seq target, which runs on 1 node, not 2 (rebuild it with etcc " \
        "-target smp, tcp or mpi)" in proc.stderr


def test_node_count_from_option_or_environment(build: Builder) -> None:
    prog = build("hello.tc")
    proc = etcrun("-n", "3", str(prog))
    assert proc.stdout.splitlines()[-1] == "all 3 node(s) said hello"
    proc = etcrun(str(prog), env={**os.environ, "ETC_NODES": "2"})
    assert proc.stdout.splitlines()[-1] == "all 2 node(s) said hello"
    proc = etcrun("-n", "4", str(prog), env={**os.environ, "ETC_NODES": "2"})
    assert proc.stdout.splitlines()[-1] == "all 4 node(s) said hello"


def test_program_arguments_pass_through(build: Builder) -> None:
    proc = etcrun("-n", "2", str(build("fib.tc")), "12")
    assert proc.stdout == "fib(12) = 144\n"


def test_balancer_from_option_or_environment(build: Builder) -> None:
    prog = build("fib.tc", "-prof")
    proc = etcrun("-n", "2", "--lb", "nop", str(prog), "10")
    assert "balancer nop" in proc.stderr
    proc = etcrun("-n", "2", str(prog), "10", env={**os.environ, "ETC_LB": "nop"})
    assert "balancer nop" in proc.stderr
    proc = etcrun("-n", "2", "--lb", "spn", str(prog), "10", env={**os.environ, "ETC_LB": "nop"})
    assert "balancer spn" in proc.stderr


def test_errors(build: Builder, tmp_path: Path) -> None:
    cases = [
        (["-n", "2", str(tmp_path / "missing")], "no such file"),
        (["--frobnicate", "x"], "unrecognized arguments"),
        (["-n", "0", str(build("fib.tc"))], "'0' is not a node count (1 to 65534, or auto)"),
        (["--lb", "best", str(build("fib.tc"))], "unknown load balancer 'best'"),
        (["--prof", str(build("fib.tc"))], "was not built with -prof"),
        (["--hosts", "h", str(build("fib.tc"))], "--hosts needs a tcp or mpi program"),
    ]
    for args, message in cases:
        proc = etcrun(*args)
        assert proc.returncode == 2, args
        assert message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    script = tmp_path / "notetc"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    proc = etcrun(str(script))
    assert proc.returncode == 2
    assert "not a Threaded-C program built by etcc" in proc.stderr
    proc = etcrun(str(tmp_path))
    assert proc.returncode == 2 and "not an executable program" in proc.stderr


def test_unknown_balancer_in_the_environment_is_a_runtime_error(build: Builder) -> None:
    proc = etcrun("-n", "2", str(build("fib.tc")), env={**os.environ, "ETC_LB": "nope"})
    assert proc.returncode == 2
    assert "etc: error: unknown load balancer 'nope'; valid ones:" in proc.stderr


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_the_launcher_leaves_nothing_open(build: Builder, target: toolchain.Target) -> None:
    # a file the launcher opened and left to the collector is a descriptor held
    # for as long as etcrun lives (Python says so only when asked to)
    require(target)
    prog = build("fib.tc", target=target.name)
    proc = etcrun("-n", str(min(2, target.max_nodes)), str(prog), "15",
                  env={**os.environ, "PYTHONWARNINGS": "always::ResourceWarning"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "fib(15) = 610\n"
    assert "ResourceWarning" not in proc.stderr, proc.stderr
