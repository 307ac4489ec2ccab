"""Faults on the smp target: a node that crashes, calls exit() or abort(), and Ctrl-C.
Each ends the whole run with `etc: error: node K: ...` (or the interrupt message)
and a non-zero status, and leaves nothing behind: no process, no /dev/shm entry,
no temporary file."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
from pathlib import Path

import pytest

from support import BIN, SANITIZE, Builder, Leftovers, run


@pytest.mark.parametrize("n", [1, 4])
def test_a_crashing_node_ends_the_run(build: Builder, tmp_path: Path, n: int) -> None:
    prog = build("crash.tc")
    left = Leftovers(prog, tmp_path)
    proc = run(prog, nodes=n, env=left.env, timeout=30)
    assert proc.returncode != 0
    if SANITIZE:  # a sanitizer catches the fault, reports it and exits with status 1
        assert "AddressSanitizer: SEGV" in proc.stderr or "runtime error:" in proc.stderr
        if n > 1:  # (one node runs in the program's own process: no supervisor)
            assert f"etc: error: node {n - 1}: exited with status 1" in proc.stderr
    else:
        assert f"etc: error: node {n - 1}: segmentation fault (SIGSEGV)" in proc.stderr
    assert f"node {n - 1} about to crash" in proc.stdout  # its output before the crash
    left.check()


def test_a_core_dump_holds_only_the_nodes_own_memory(build: Builder, tmp_path: Path) -> None:
    # Every node maps the others' globals and heap slices (address space of up to
    # 64 GiB a node); a core dump must leave them out, or a crash handler's pipe
    # would be fed every untouched page as zeros.
    pattern = Path("/proc/sys/kernel/core_pattern").read_text().strip()
    if pattern.startswith("|") or "/" in pattern:
        pytest.skip(f"core dumps do not go to the working directory here ({pattern!r})")
    if SANITIZE:
        pytest.skip("sanitizer builds turn the crash into an error report, not a dump")

    def allow_cores() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    proc = subprocess.run([str(build("crash.tc"))], cwd=tmp_path, preexec_fn=allow_cores,
                          env={**os.environ, "ETC_NODES": "3"}, capture_output=True,
                          text=True, timeout=60, check=False)
    assert "node 2: segmentation fault" in proc.stderr, proc.stderr
    cores = [f for f in tmp_path.iterdir() if f.name.startswith("core")]
    if not cores:
        pytest.skip("the kernel wrote no core file (a hard limit or a setting forbids it)")
    for core in cores:
        assert core.stat().st_size < 1 << 30, f"{core.name}: {core.stat().st_size} bytes"


@pytest.mark.parametrize(("how", "message"), [
    ("exit", "exited with status 3 while the run was going on"),
    ("abort", "aborted (SIGABRT)"),
])
def test_exit_or_abort_in_a_node_ends_the_run(build: Builder, tmp_path: Path, how: str,
                                             message: str) -> None:
    prog = build("exit_early.tc")
    left = Leftovers(prog, tmp_path)
    proc = run(prog, how, nodes=3, env=left.env, timeout=30)
    assert proc.returncode != 0
    assert f"etc: error: node 2: {message}" in proc.stderr
    left.check()


@pytest.mark.parametrize("to_group", [False, True], ids=["launcher", "process-group"])
def test_sigint_stops_every_node(build: Builder, tmp_path: Path, to_group: bool) -> None:
    prog = build("forever.tc")
    left = Leftovers(prog, tmp_path)
    p = subprocess.Popen([str(BIN / "etcrun"), "-n", "4", str(prog)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=left.env,
                         start_new_session=True)
    assert p.stdout is not None
    assert p.stdout.readline() == "running\n"
    if to_group:
        os.killpg(p.pid, signal.SIGINT)
    else:
        p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 130
    assert "etc: interrupted (SIGINT): stopped all 4 nodes" in err
    left.check()


def test_a_fatal_runtime_error_is_reported_once(build: Builder, tmp_path: Path) -> None:
    prog = build("check_misuse.tc", "-g")
    left = Leftovers(prog, tmp_path)
    proc = run(prog, "over", nodes=2, env=left.env, timeout=30)
    assert proc.returncode == 1
    assert proc.stderr.count("etc: error:") == 1, proc.stderr
    left.check()
