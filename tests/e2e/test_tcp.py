"""The tcp target: nodes as processes started by etcrun, connected by TCP.

Samples and test programs on 1, 2 and 3 nodes on localhost; the faults (kill -9 of
a node, a node that exits early, a stranger without the secret, a garbage frame, a
node that cannot start, Ctrl-C) with no process left behind; and, as root with
`ip netns`, two "hosts" in two network namespaces joined by a veth pair."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from support import (
    BIN,
    ROOT,
    SAMPLES,
    SANITIZE,
    Builder,
    Leftovers,
    check_sample,
    processes_of,
    run,
)

NODES = [1, 2, 3]
NAMES = sorted(p.stem for p in SAMPLES.glob("*.tc"))


@pytest.mark.parametrize("n", NODES)
@pytest.mark.parametrize("name", NAMES)
def test_sample_tcp(build: Builder, name: str, n: int) -> None:
    proc = run(build(f"{name}.tc", target="tcp"), nodes=n, timeout=60)
    assert proc.returncode == 0, proc.stderr
    check_sample(name, n, proc.stdout, causal=False)


@pytest.mark.parametrize("n", NODES)
def test_programs_tcp(build: Builder, n: int) -> None:
    pairs = 1 if n == 1 else n * (n - 1)
    cases = [
        ("remote_ops.tc", [], f"remote ops: {n} nodes, {pairs} pairs, 0 errors\n"),
        ("globals_per_node.tc", [],
         f"{n} nodes, {n} distinct copies of value, same address: yes\n"),
        ("quiescence.tc", [], f"started {n} waiters\n"),
        ("call_loop.tc", ["20000"],
         "calls: 20000 iterations, sum 6656670000, odd 90000, fetched 42\n"),
    ]
    for src, args, want in cases:
        proc = run(build(src, target="tcp"), *args, nodes=n, timeout=60)
        assert proc.returncode == 0, f"{src}: {proc.stderr}"
        assert proc.stdout == want, src
    m = 300_000 // pairs * pairs
    proc = run(build("stress.tc", target="tcp"), "300000", nodes=n, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (f"stress: {n} nodes, {m} values and {m} syncs delivered, "
                           "0 errors, sums agree\n")


def test_tag_output(build: Builder) -> None:
    proc = run(build("hello.tc", target="tcp"), nodes=2, env={**os.environ})
    assert proc.returncode == 0
    tagged = subprocess.run([str(BIN / "etcrun"), "--tag-output", "-n", "2",
                             str(build("hello.tc", target="tcp"))], capture_output=True,
                            text=True, timeout=60, check=False)
    assert tagged.returncode == 0, tagged.stderr
    assert sorted(tagged.stdout.splitlines()) == sorted(
        ["[0] hello from node 0 of 2", "[1] hello from node 1 of 2",
         "[0] all 2 node(s) said hello"])


def test_tcp_program_alone_runs_one_node(build: Builder) -> None:
    prog = build("fib.tc", target="tcp")
    proc = subprocess.run([str(prog), "15"], capture_output=True, text=True, timeout=30,
                          check=False, env={k: v for k, v in os.environ.items()
                                            if not k.startswith("ETC_")})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "fib(15) = 610\n"
    proc = subprocess.run([str(prog)], capture_output=True, text=True, timeout=30, check=False,
                          env={**os.environ, "ETC_NODES": "3"})
    assert proc.returncode != 0
    assert "etc: error: a tcp program runs on 3 nodes only through etcrun" in proc.stderr


# ---------------------------------------------------------------- faults


def _start(prog: Path, n: int, env: dict[str, str],
           *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(BIN / "etcrun"), *extra, "-n", str(n), str(prog)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)


def test_kill_9_of_a_node_ends_the_run(build: Builder, tmp_path: Path) -> None:
    prog = build("forever.tc", target="tcp")
    left = Leftovers(prog, tmp_path)
    p = _start(prog, 3, left.env)
    assert p.stdout is not None and p.stdout.readline() == "running\n"
    victims = sorted(processes_of(prog))
    assert len(victims) == 3
    t0 = time.monotonic()
    os.kill(victims[-1], signal.SIGKILL)
    _, err = p.communicate(timeout=20)
    assert time.monotonic() - t0 < 5.0
    assert p.returncode != 0
    assert "etc: error: lost node" in err and "killed by SIGKILL" in err, err
    assert err.count("etc: error:") == 1, err
    left.check()


def test_a_node_that_exits_early(build: Builder, tmp_path: Path) -> None:
    prog = build("exit_early.tc", target="tcp")
    left = Leftovers(prog, tmp_path)
    proc = run(prog, nodes=3, env=left.env, timeout=30)
    assert proc.returncode != 0
    assert "etc: error: node 2 (host localhost): exited with status 3" in proc.stderr
    left.check()


def test_a_crashing_node(build: Builder, tmp_path: Path) -> None:
    prog = build("crash.tc", target="tcp")
    left = Leftovers(prog, tmp_path)
    proc = run(prog, nodes=2, env=left.env, timeout=30)
    assert proc.returncode != 0
    if SANITIZE:  # a sanitizer catches the fault, reports it and exits with status 1
        assert "AddressSanitizer: SEGV" in proc.stderr or "runtime error:" in proc.stderr
        assert "etc: error: node 1 (host localhost): exited with status 1" in proc.stderr
    else:  # the node reports it, and the launcher adds nothing
        assert ("etc: error: node 1: segmentation fault (SIGSEGV) in thread 0 of 'boom'"
                in proc.stderr), proc.stderr
        assert proc.stderr.count("etc: error:") == 1, proc.stderr
    assert "node 1 about to crash" in proc.stdout
    left.check()


def _listening_ports(pid: int) -> list[int]:
    """TCP ports process `pid` listens on (from /proc)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:  # LISTEN
                ports.append(int(f[1].split(":")[1], 16))
    return ports


def test_a_stranger_without_the_secret_is_closed_and_logged(build: Builder,
                                                           tmp_path: Path) -> None:
    prog = build("forever.tc", target="tcp")
    left = Leftovers(prog, tmp_path)
    p = _start(prog, 2, left.env)
    assert p.stdout is not None and p.stdout.readline() == "running\n"
    pid = sorted(processes_of(prog))[0]
    ports = _listening_ports(pid)
    assert ports, "the node has no listening socket"
    with socket.create_connection(("127.0.0.1", ports[0]), timeout=5) as s:
        s.sendall(b"ETCN" + b"\x01\x00\x00\x00" + b"x" * 32)  # a wrong secret
        s.settimeout(5)
        assert s.recv(1) == b""  # closed by the node
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=20)
    assert "closed a connection from 127.0.0.1" in err and "run's secret" in err, err
    assert p.returncode == 130
    left.check()


def test_a_garbage_frame_ends_the_run(build: Builder, tmp_path: Path) -> None:
    prog = build("forever.tc", target="tcp")
    left = Leftovers(prog, tmp_path)
    proc = run(prog, nodes=2, env={**left.env, "ETC_TCP_FAULT": "garbage"}, timeout=30)
    assert proc.returncode == 1
    assert "etc: error: node 0: bad frame from node 1" in proc.stderr, proc.stderr
    left.check()


def test_a_node_that_cannot_start_is_named(build: Builder, tmp_path: Path) -> None:
    prog = build("fib.tc", target="tcp")
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost\n127.0.0.2\n")  # 127.0.0.2: started through --rsh
    (tmp_path / "tmp").mkdir()
    left = Leftovers(prog, tmp_path / "tmp")
    hang = tmp_path / "hang-rsh"
    hang.write_text("#!/bin/sh\n# a remote shell that never starts the node\nexec sleep 60\n")
    hang.chmod(0o755)
    fail = tmp_path / "fail-rsh"
    fail.write_text("#!/bin/sh\necho 'ssh: connect to host $1: No route to host' >&2\n"
                    "exit 255\n")
    fail.chmod(0o755)

    def etcrun(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(BIN / "etcrun"), "--hosts", str(hosts), *args, "-n", "2",
                               str(prog)], capture_output=True, text=True, timeout=30,
                              check=False, env=left.env)

    t0 = time.monotonic()
    proc = etcrun("--rsh", str(hang), "--timeout", "2")
    assert proc.returncode == 1
    assert "node 1 on host 127.0.0.2 did not connect within 2 s" in proc.stderr, proc.stderr
    assert time.monotonic() - t0 < 10
    proc = etcrun("--rsh", str(fail))
    assert proc.returncode == 1
    assert "node 1 on host 127.0.0.2 exited before connecting (exited with status 255)" \
        in proc.stderr, proc.stderr
    assert "No route to host" in proc.stderr  # what the remote shell said is shown
    hosts.write_text("no-such-host.invalid\n")
    proc = etcrun("--rsh", str(fail))
    assert proc.returncode == 2
    assert "etcrun: error: cannot resolve host 'no-such-host.invalid'" in proc.stderr
    left.check()
    assert not any(Path("/proc").glob("*/cmdline")) or \
        all(b"hang-rsh" not in p.read_bytes() for p in Path("/proc").glob("[0-9]*/cmdline")
            if p.exists())


def test_sigint_stops_every_tcp_node(build: Builder, tmp_path: Path) -> None:
    prog = build("forever.tc", target="tcp")
    left = Leftovers(prog, tmp_path)
    p = _start(prog, 3, left.env)
    assert p.stdout is not None and p.stdout.readline() == "running\n"
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=20)
    assert p.returncode == 130
    assert "etc: interrupted (SIGINT): stopped all 3 nodes" in err
    left.check()


# ---------------------------------------------------------------- two "hosts"

NETNS = ("etc-test-a", "etc-test-b")
ADDRS = ("10.231.77.1", "10.231.77.2")


def _netns_available() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    if shutil.which("ip") is None:
        return "needs the ip command (iproute2)"
    probe = subprocess.run(["ip", "netns", "add", "etc-test-probe"], capture_output=True,
                           text=True, check=False)
    if probe.returncode != 0:
        return f"ip netns is not usable here: {probe.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", "etc-test-probe"], check=False)
    return None


@pytest.fixture
def two_hosts() -> object:
    why = _netns_available()
    if why:
        pytest.skip(why)
    sh = lambda *a: subprocess.run(a, check=True, capture_output=True)  # noqa: E731
    for ns in NETNS:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        sh("ip", "netns", "add", ns)
    try:
        sh("ip", "link", "add", "etcva", "netns", NETNS[0], "type", "veth", "peer", "name",
           "etcvb", "netns", NETNS[1])
        for ns, dev, addr in ((NETNS[0], "etcva", ADDRS[0]), (NETNS[1], "etcvb", ADDRS[1])):
            sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        yield
    finally:
        for ns in NETNS:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def test_two_hosts_in_network_namespaces(build: Builder, tmp_path: Path,
                                         two_hosts: object) -> None:
    prog = build("remote_ops.tc", target="tcp")
    hosts = tmp_path / "hosts"
    hosts.write_text(f"{ADDRS[0]}:2\n{ADDRS[1]}:2\n")
    rsh = tmp_path / "netns-rsh"
    rsh.write_text("#!/bin/sh\n# host -> its network namespace, then run the command there\n"
                   f'case "$1" in {ADDRS[0]}) ns={NETNS[0]};; {ADDRS[1]}) ns={NETNS[1]};; '
                   'esac\nshift\nexec ip netns exec "$ns" sh -c "$*"\n')
    rsh.chmod(0o755)
    proc = subprocess.run(["ip", "netns", "exec", NETNS[0], str(BIN / "etcrun"), "--hosts",
                           str(hosts), "--rsh", str(rsh), "-n", "4", str(prog)],
                          capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "remote ops: 4 nodes, 12 pairs, 0 errors\n"


@pytest.mark.parametrize("target", ["smp", "tcp"])
def test_a_node_in_a_long_thread_is_stopped_too(build: Builder, tmp_path: Path,
                                                target: str) -> None:
    prog = build("long_thread_crash.tc", target=target)
    left = Leftovers(prog, tmp_path)
    t0 = time.monotonic()
    proc = run(prog, "30", nodes=2, env=left.env, timeout=60)
    assert time.monotonic() - t0 < 10, "the spinning node was not stopped"
    assert proc.returncode != 0
    assert "node 0 finished spinning" not in proc.stdout
    assert "node 1" in proc.stderr and "etc: error:" in proc.stderr
    left.check()


def test_a_reader_that_goes_away_does_not_break_the_run(build: Builder,
                                                         tmp_path: Path) -> None:
    prog = build("hello.tc", target="tcp")
    left = Leftovers(prog, tmp_path)
    p = subprocess.Popen(f"{BIN / 'etcrun'} -n 3 {prog} | head -c 1", shell=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=left.env)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0
    assert len(out) == 1 and b"Traceback" not in err
    left.check()
