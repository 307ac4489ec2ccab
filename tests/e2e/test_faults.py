"""Faults, on every target of the target table that runs several nodes: a node that
crashes, calls exit() or abort(), a fatal runtime error, a node stuck in a long
thread while another fails, and Ctrl-C. Each ends the whole run with one
`etc: error: ...` naming the node (or the interrupt message) and a non-zero status,
and leaves nothing behind: no process, no /dev/shm entry, no temporary file.

Every target's message names the node and what happened; the exact wording of the
targets that have one is checked too (MESSAGES). tcp's own faults (a lost
connection, strangers, hosts that cannot start) are in test_tcp.py."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from pathlib import Path

import pytest

from etcpre import toolchain

from support import BIN, SANITIZE, TARGETS, Builder, Leftovers, require, run

MULTI = [t for t in TARGETS if t.max_nodes >= 4]
IDS = [t.name for t in MULTI]

# The exact report of each fault, per target ({k}: the node); a target missing here
# is held to the generic checks only.
MESSAGES = {
    "smp": {
        "crash": "etc: error: node {k}: segmentation fault (SIGSEGV)",
        "exit": "etc: error: node {k}: exited with status 3 while the run was going on",
        "abort": "etc: error: node {k}: aborted (SIGABRT)",
        "crash-sanitized": "etc: error: node {k}: exited with status 1",
    },
    "tcp": {
        "crash": "etc: error: node {k}: segmentation fault (SIGSEGV)",
        "exit": "etc: error: node {k} (host localhost): exited with status 3 while the run "
                "was going on",
        "abort": "etc: error: node {k}: aborted (SIGABRT)",
        "crash-sanitized": "etc: error: node {k} (host localhost): exited with status 1",
    },
    "mpi": {  # under Open MPI and MPICH alike: the rank says it
        "crash": "etc: error: node {k}: segmentation fault (SIGSEGV)",
        "exit": "etc: error: node {k}: exited with status 3 while the run was going on",
        "abort": "etc: error: node {k}: aborted (SIGABRT)",
    },
}


def check_report(target: toolchain.Target, fault: str, k: int, stderr: str,
                 generic: tuple[str, ...]) -> None:
    """One `etc: error:` that names node k and says what happened."""
    assert stderr.count("etc: error:") == 1, stderr
    line = next(x for x in stderr.splitlines() if "etc: error:" in x)
    assert f"node {k}" in line and all(g in line for g in generic), stderr
    exact = MESSAGES.get(target.name, {}).get(fault)
    if exact:
        assert exact.format(k=k) in stderr, stderr


@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("target", MULTI, ids=IDS)
def test_a_crashing_node_ends_the_run(build: Builder, tmp_path: Path,
                                      target: toolchain.Target, n: int) -> None:
    prog = build("crash.tc", target=target.name)
    left = Leftovers(prog, tmp_path)
    proc = run(prog, nodes=n, env=left.env, timeout=30)
    # docs/language.md: 1, a crash reported by a node of a multi-node run (or a
    # sanitizer's exit); where the program's own process is the node, it dies of the
    # signal (a shell sees 128 + SIGSEGV)
    own_process = n == 1 and target.launcher is None and not SANITIZE
    assert proc.returncode == (-signal.SIGSEGV if own_process else 1), proc.stderr
    if SANITIZE:  # a sanitizer catches the fault, reports it and exits with status 1
        assert "AddressSanitizer: SEGV" in proc.stderr or "runtime error:" in proc.stderr
        if n > 1 or target.launcher:  # (one smp node is the program's own process)
            check_report(target, "crash-sanitized", n - 1, proc.stderr, ("status 1",))
    else:
        check_report(target, "crash", n - 1, proc.stderr, ("SIGSEGV",))
    assert f"node {n - 1} about to crash" in proc.stdout  # its output before the crash
    left.check()


@pytest.mark.parametrize(("how", "generic"), [("exit", ("status 3",)), ("abort", ("SIGABRT",))])
@pytest.mark.parametrize("target", MULTI, ids=IDS)
def test_exit_or_abort_in_a_node_ends_the_run(build: Builder, tmp_path: Path,
                                             target: toolchain.Target, how: str,
                                             generic: tuple[str, ...]) -> None:
    prog = build("exit_early.tc", target=target.name)
    left = Leftovers(prog, tmp_path)
    proc = run(prog, how, nodes=3, env=left.env, timeout=30)
    assert proc.returncode == 1, proc.stderr  # a failure of the run, whatever the node's
    check_report(target, how, 2, proc.stderr, generic)
    left.check()


@pytest.mark.parametrize("target", MULTI, ids=IDS)
def test_a_fatal_runtime_error_is_reported_once(build: Builder, tmp_path: Path,
                                               target: toolchain.Target) -> None:
    prog = build("check_misuse.tc", "-g", target=target.name)
    left = Leftovers(prog, tmp_path)
    proc = run(prog, "over", nodes=2, env=left.env, timeout=30)
    assert proc.returncode == 1
    assert proc.stderr.count("etc: error:") == 1, proc.stderr
    assert "etc: error: node 0: " in proc.stderr and "signalled more times" in proc.stderr
    left.check()


@pytest.mark.parametrize("target", MULTI, ids=IDS)
def test_a_node_in_a_long_thread_is_stopped_too(build: Builder, tmp_path: Path,
                                                target: toolchain.Target) -> None:
    prog = build("long_thread_crash.tc", target=target.name)
    left = Leftovers(prog, tmp_path)
    t0 = time.monotonic()
    proc = run(prog, "30", nodes=2, env=left.env, timeout=60)
    assert time.monotonic() - t0 < 10, "the spinning node was not stopped"
    assert proc.returncode == 1, proc.stderr
    assert "node 0 finished spinning" not in proc.stdout
    assert "node 1" in proc.stderr and "etc: error:" in proc.stderr
    left.check()


@pytest.mark.parametrize(("sig", "to_group"), [
    (signal.SIGINT, False), (signal.SIGINT, True), (signal.SIGTERM, False),
    (signal.SIGHUP, False)], ids=["SIGINT-launcher", "SIGINT-process-group", "SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("target", MULTI, ids=IDS)
def test_an_interrupt_stops_every_node(build: Builder, tmp_path: Path,
                                       target: toolchain.Target, sig: int,
                                       to_group: bool) -> None:
    require(target)
    prog = build("forever.tc", target=target.name)
    left = Leftovers(prog, tmp_path)
    p = subprocess.Popen([str(BIN / "etcrun"), "-n", "4", str(prog)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=left.env,
                         start_new_session=True)
    assert p.stdout is not None
    assert p.stdout.readline() == "running\n"
    if to_group:
        os.killpg(p.pid, sig)
    else:
        p.send_signal(sig)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 128 + sig
    # one line and nothing else: the nodes stopped are no failure of their own
    name = signal.Signals(sig).name
    assert err.startswith(f"etc: interrupted ({name}): stopped all 4 nodes"), err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    left.check()


# ---------------------------------------------------------------- smp only


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
