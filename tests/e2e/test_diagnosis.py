"""Run-time diagnosis (reference section 3, issue 15): a deadlock, a crash, an
interrupt and a misuse across nodes each end with a message that says where, on
every target, in the normal and the checking build (etcc -g)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
from pathlib import Path

import pytest

from etcpre import toolchain

import support
from support import BIN, PROGRAMS, SANITIZE, Builder, Leftovers, processes_of, run

# (target, nodes) for every target of the table: three nodes, two where a launcher
# starts them (slower to start), within the target's limit (seq: one)
TARGETS = [(t.name, min(t.max_nodes, 2 if t.launcher else 3)) for t in support.TARGETS]
# the targets with more than one node, on two
MULTI_NODE = [(t.name, 2) for t in support.MULTI_NODE_TARGETS]
BUILDS = {"normal": [], "checking": ["-g"]}


def tc(name: str) -> str:
    return str(PROGRAMS / name)


def line_of(name: str, marker: str) -> int:
    """The line of program `name` that holds `marker` (once)."""
    lines = (PROGRAMS / name).read_text().splitlines()
    found = [i + 1 for i, s in enumerate(lines) if marker in s]
    assert len(found) == 1, marker
    return found[0]


def nodes_text(n: int) -> str:
    return "node 0" if n == 1 else f"nodes 0-{n - 1}"


# ---------------------------------------------------------------- what is left waiting


@pytest.mark.parametrize("build_name", BUILDS)
@pytest.mark.parametrize(("target", "n"), TARGETS)
def test_a_deadlock_is_an_error_naming_the_waiting_functions(
        build: Builder, target: str, n: int, build_name: str) -> None:
    prog = build("deadlock.tc", *BUILDS[build_name], target=target)
    proc = run(prog, nodes=n, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == f"started {n} workers\n"
    assert (f"etc: error: deadlock: the run ended with {n + 1} threaded function activations "
            f"waiting on sync slots: 'MAIN' x1 on node 0, 'worker' x{n} on {nodes_text(n)}\n"
            ) in proc.stderr, proc.stderr
    assert proc.stderr.count("etc: error:") == 1, proc.stderr
    notes = [s for s in proc.stderr.splitlines() if s.startswith("etc: note:")]
    if build_name == "normal":
        assert notes == ["etc: note: build with etcc -g to see each waiting slot and the "
                         "INIT_SYNC that armed it"], proc.stderr
        return
    main_line = line_of("deadlock.tc", "INIT_SYNC(0, NUM_NODES")
    worker_line = line_of("deadlock.tc", "INIT_SYNC(0, 2, 2, 1)")
    want = [f"etc: note: node 0: 'MAIN' slot 0 awaits {n} more signal{'s' if n > 1 else ''} "
            f"(armed by the INIT_SYNC at {tc('deadlock.tc')}:{main_line})"]
    want += [f"etc: note: node {k}: 'worker' slot 0 awaits 1 more signal (armed by the "
             f"INIT_SYNC at {tc('deadlock.tc')}:{worker_line})" for k in range(n)]
    assert sorted(notes) == sorted(want), proc.stderr


@pytest.mark.parametrize("build_name", BUILDS)
@pytest.mark.parametrize(("target", "n"), TARGETS)
def test_functions_left_waiting_after_main_are_a_warning(
        build: Builder, target: str, n: int, build_name: str) -> None:
    proc = run(build("quiescence.tc", *BUILDS[build_name], target=target), nodes=n, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"started {n} waiters\n"
    activations = "activation" if n == 1 else "activations"
    assert (f"etc: warning: the run ended with {n} threaded function {activations} still "
            f"waiting on sync slots: 'waiter' x{n} on {nodes_text(n)}\n") in proc.stderr
    assert "etc: error" not in proc.stderr
    if build_name == "checking":
        line = line_of("quiescence.tc", "INIT_SYNC")
        for k in range(n):
            assert (f"etc: note: node {k}: 'waiter' slot 0 awaits 1 more signal (armed by the "
                    f"INIT_SYNC at {tc('quiescence.tc')}:{line})") in proc.stderr


def test_a_run_that_ends_cleanly_says_nothing(build: Builder) -> None:
    proc = run(build("remote_ops.tc"), nodes=2)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


# ---------------------------------------------------------------- fatal signals

# kind -> (what the report says, the signal)
SIGNALS = {
    "segv": ("segmentation fault", "SIGSEGV"),
    "fpe": ("integer division by zero", "SIGFPE"),
    "ill": ("illegal instruction", "SIGILL"),
    "abort": ("aborted", "SIGABRT"),
    "bus": ("bus error", "SIGBUS"),
    "stack": ("segmentation fault", "SIGSEGV"),
}
# the line of the faulting statement (bus and stack: in a C function the thread calls)
FAULT_MARK = {"segv": "FAULT segv", "fpe": "FAULT fpe", "ill": "FAULT ill",
              "abort": "FAULT abort", "bus": "FAULT bus", "stack": "FAULT stack"}


@pytest.mark.parametrize("build_name", BUILDS)
@pytest.mark.parametrize(("target", "n"), TARGETS)
@pytest.mark.parametrize("kind", SIGNALS)
def test_a_fatal_signal_names_the_node_thread_and_line(
        build: Builder, tmp_path: Path, kind: str, target: str, n: int,
        build_name: str) -> None:
    if SANITIZE and kind in ("segv", "fpe", "stack"):
        pytest.skip("UBSan and ASan catch this before the signal (their own report)")
    prog = build("signals.tc", *BUILDS[build_name], target=target)
    left = Leftovers(prog, tmp_path)
    proc = run(prog, kind, nodes=n, env=left.env, timeout=60)
    if n > 1 or toolchain.TARGETS[target].launcher:  # a node of a run reported it
        assert proc.returncode == 1, proc.stderr
    else:  # the program's own process: it dies of the signal (or a sanitizer exits)
        assert proc.returncode != 0, proc.stderr
    last = n - 1
    assert f"crunching on node {last}\n" in proc.stdout
    what, sig = SIGNALS[kind]
    if build_name == "checking":
        line = line_of("signals.tc", FAULT_MARK[kind])
        if kind == "stack":  # any line of the recursive function, by compiler
            first = line_of("signals.tc", "static int deep")
            line = next((k for k in range(first, line + 1)
                         if f"signals.tc:{k}: " in proc.stderr), line)
        where = f"{tc('signals.tc')}:{line}: "
        thread = "in thread 1 of 'crunch'"
    else:
        where = ""
        thread = f"in thread 1 of 'crunch' ({tc('signals.tc')}:{line_of('signals.tc', 'THREAD_1')})"
    want = f"etc: error: node {last}: {where}{what} ({sig}) {thread}"
    assert want in proc.stderr, proc.stderr
    assert proc.stderr.count("etc: error:") == 1, proc.stderr
    if kind == "segv":
        assert "at address 0x0 (a null pointer)" in proc.stderr
    if kind == "stack":
        assert "(the stack overflowed: a recursion too deep?)" in proc.stderr
    left.check()


# ---------------------------------------------------------------- interrupts


def _as_from_a_terminal() -> None:
    # a shell without job control starts background commands with SIGINT ignored,
    # and a program rightly keeps it so: the user at a terminal has it by default
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def _interrupt(prog: Path, env: dict[str, str], sig: int,
               *args: str) -> subprocess.CompletedProcess[str]:
    p = subprocess.Popen([str(BIN / "etcrun"), str(prog), *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
                         preexec_fn=_as_from_a_terminal)
    try:
        assert p.stdout is not None
        # a run that never says it is running fails here, not hangs the suite
        assert select.select([p.stdout], [], [], 60)[0], "no 'running' line in 60 s"
        assert p.stdout.readline() == "running\n"
        os.killpg(p.pid, sig)
        out, err = p.communicate(timeout=20)
    finally:  # a run that outlived the signal must not outlive the test
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


@pytest.mark.parametrize(("target", "n", "sig"), [
    ("seq", 1, signal.SIGINT), ("seq", 1, signal.SIGTERM), ("smp", 1, signal.SIGINT),
    ("smp", 1, signal.SIGHUP), ("smp", 4, signal.SIGINT), ("smp", 2, signal.SIGTERM),
    ("tcp", 1, signal.SIGTERM), ("tcp", 2, signal.SIGINT), ("tcp", 3, signal.SIGHUP),
    ("mpi", 1, signal.SIGINT), ("mpi", 2, signal.SIGTERM), ("mpi", 3, signal.SIGHUP)])
def test_an_interrupt_names_the_thread_each_node_ran(build: Builder, tmp_path: Path, target: str,
                                                     n: int, sig: int) -> None:
    # every node is in a thread that never ends (on mpi the others POLL() once first,
    # so that their RSYNC leaves: P11)
    prog = build("endless.tc", target=target)
    left = Leftovers(prog, tmp_path)
    args = ["poll"] if target == "mpi" else []
    proc = _interrupt(prog, {**left.env, "ETC_NODES": str(n)}, sig, *args)
    name = signal.Signals(sig).name
    start = line_of("endless.tc", "THREADED endless")
    thread = f"in thread 0 of 'endless' ({tc('endless.tc')}:{start})"
    if n == 1 and toolchain.TARGETS[target].launcher is None:
        # the program's own process is the node: it dies
        assert proc.returncode in (-sig, 128 + sig), proc.stderr
        assert f"etc: interrupted ({name}): node 0 was {thread}\n" == proc.stderr
    else:  # a supervisor or launcher stops the nodes, asking each what it ran (R11, L7)
        assert proc.returncode == 128 + sig, proc.stderr
        which = "node 0 was" if n == 1 else f"nodes 0-{n - 1} were"
        plural = "node" if n == 1 else "nodes"
        assert (f"etc: interrupted ({name}): stopped all {n} {plural}; {which} "
                f"{thread}\n") == proc.stderr
    left.check()


def test_an_interrupt_between_threads(build: Builder, tmp_path: Path) -> None:
    # a loop of short threads: the node is in one, or between two (and then names the
    # next one it has), never idle
    prog = build("forever.tc", target="seq")
    proc = _interrupt(prog, {**os.environ}, signal.SIGINT)
    assert proc.stderr.startswith("etc: interrupted (SIGINT): node 0 was "), proc.stderr
    assert "idle" not in proc.stderr, proc.stderr


def test_one_smp_node_runs_in_the_programs_own_process(build: Builder) -> None:
    # no supervisor, no fork: what a debugger expects (docs/debugging.md)
    prog = build("forever.tc")
    p = subprocess.Popen([str(prog)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env={**os.environ, "ETC_NODES": "1"})
    try:
        assert p.stdout is not None and p.stdout.readline() == "running\n"
        assert processes_of(prog) == [p.pid]
    finally:
        p.terminate()
        p.communicate(timeout=20)


# ---------------------------------------------------------------- misuse across nodes


@pytest.mark.parametrize(("target", "n"), MULTI_NODE)
def test_a_remote_over_signal_names_the_sender_and_its_line(build: Builder, target: str,
                                                           n: int) -> None:
    proc = run(build("remote_misuse.tc", "-g", target=target), "over", nodes=n, timeout=60)
    assert proc.returncode == 1, proc.stderr
    line = line_of("remote_misuse.tc", "MISUSE over")
    assert (f"etc: error: node 0: {tc('remote_misuse.tc')}:{line}: in thread 0 of 'sender' on "
            f"node {n - 1}: RSYNC from another node: sync slot 0 of 'MAIN' signalled more times "
            "than it can absorb") in proc.stderr, proc.stderr
    assert proc.stderr.count("etc: error:") == 1, proc.stderr


@pytest.mark.parametrize("build_name", BUILDS)
@pytest.mark.parametrize(("target", "n"), TARGETS)
def test_invoke_to_a_node_that_does_not_exist(build: Builder, target: str, n: int,
                                              build_name: str) -> None:
    proc = run(build("remote_misuse.tc", *BUILDS[build_name], target=target), "invoke",
               nodes=n, timeout=60)
    assert proc.returncode == 1, proc.stderr
    where = ""
    if build_name == "checking":
        where = f"{tc('remote_misuse.tc')}:{line_of('remote_misuse.tc', 'MISUSE invoke')}: "
    nodes = "the run has 1 node: 0" if n == 1 else f"the run has {n} nodes: 0-{n - 1}"
    assert (f"etc: error: node 0: {where}in thread 0 of 'MAIN': INVOKE: node {n} does not "
            f"exist ({nodes})\n") in proc.stderr, proc.stderr
    assert proc.stderr.count("etc: error:") == 1, proc.stderr
