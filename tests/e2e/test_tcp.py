"""The tcp target: nodes as processes started by etcrun, connected by TCP.

(Samples and test programs run on tcp with every other target: test_samples.py,
test_programs.py.) Here: what is tcp's own: the wire version the node and the
launcher speak, tagged output, the faults (kill -9 of a node, a node that exits
early, a stranger without the secret, a garbage frame, a node that cannot start,
Ctrl-C, a killed control connection) with no process left behind; hostile local
connections (silent ones during start-up, idle strangers after it, rate-limited
warnings); 256 nodes on one host; and, as root with `ip netns`, two "hosts" in two
network namespaces joined by a veth pair."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from etcpre.launch import tcp as launch_tcp

from support import (
    BIN,
    ROOT,
    Builder,
    Leftovers,
    processes_of,
    run,
)


def test_the_node_and_the_launcher_speak_the_same_wire_version() -> None:
    # a node's HELLO and its peer handshakes carry it; the launcher rejects any other
    got = re.search(r"^#define WIRE_VERSION (\d+)$",
                    (ROOT / "runtime" / "net" / "tcp" / "tcp.c").read_text(), re.MULTILINE)
    assert got, "tcp.c defines no WIRE_VERSION"
    assert int(got.group(1)) == launch_tcp.WIRE_VERSION


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


def _ports_of_nodes(prog: Path, count: int, timeout: float = 10.0) -> list[int]:
    """The listening ports of the first `count` node processes of `prog` to be up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ports = [p for pid in sorted(processes_of(prog)) for p in _listening_ports(pid)]
        if len(ports) >= count:
            return ports[:count]
        time.sleep(0.02)
    raise AssertionError(f"fewer than {count} nodes of {prog} listen after {timeout:g} s")


def _silent(port: int, count: int) -> list[socket.socket]:
    """`count` connections to `port` that never say anything."""
    return [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]


def test_silent_connections_do_not_delay_start_up(build: Builder, tmp_path: Path) -> None:
    # Anyone on the host may connect to a node's port. Silent connections queued
    # ahead of the real peers must not hold them up (each was read with a 2 s
    # blocking timeout: 20 of them failed the run at its 30 s start-up timeout).
    prog = build("hello.tc", target="tcp")
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:2\n127.0.0.2:1\n")  # node 2: started late, through --rsh
    (tmp_path / "tmp").mkdir()
    left = Leftovers(prog, tmp_path / "tmp")
    delay = 2.0
    late = tmp_path / "late-rsh"
    late.write_text(f"#!/bin/sh\n# a remote shell that takes its time\nsleep {delay}\nshift\n"
                    'exec sh -c "$*"\n')
    late.chmod(0o755)
    t0 = time.monotonic()
    p = _start(prog, 3, left.env, "--hosts", str(hosts), "--rsh", str(late))
    strangers = []
    try:
        for port in _ports_of_nodes(prog, 2):  # nodes 0 and 1, waiting for node 2
            strangers += _silent(port, 20)
        assert time.monotonic() - t0 < delay, "the test was too slow to open its connections"
        out, err = p.communicate(timeout=60)
    finally:
        for s in strangers:
            s.close()
    took = time.monotonic() - t0
    assert p.returncode == 0, err
    assert sorted(out.splitlines()) == sorted(
        [f"hello from node {k} of 3" for k in range(3)] + ["all 3 node(s) said hello"])
    assert took < delay + 4.0, f"start-up took {took:.1f} s"
    left.check()


def test_idle_strangers_are_closed_on_time_and_logged_sparingly(build: Builder,
                                                                tmp_path: Path) -> None:
    # After start-up strangers are closed at their deadline (2 s) even while
    # every node computes (no traffic, no poll); their warnings are limited to 5
    # lines and one that counts the rest. The launcher listens no longer.
    prog = build("busy_wait.tc", target="tcp")
    left = Leftovers(prog, tmp_path)
    p = subprocess.Popen([str(BIN / "etcrun"), "-n", "2", str(prog), "5"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=left.env,
                         start_new_session=True)
    assert p.stdout is not None and p.stdout.readline() == "running\n"
    assert _listening_ports(p.pid) == [], "the launcher still listens after start-up"
    port = _ports_of_nodes(prog, 1)[0]
    t0 = time.monotonic()
    strangers = _silent(port, 30)
    try:
        for s in strangers:
            s.settimeout(max(0.1, t0 + 4.0 - time.monotonic()))
            assert s.recv(1) == b"", "a stranger was answered"
        took = time.monotonic() - t0
    finally:
        for s in strangers:
            s.close()
    assert 1.5 < took < 4.0, f"strangers closed after {took:.1f} s (deadline 2 s)"
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert out == "done\n"
    closed = [ln for ln in err.splitlines() if "closed a connection from 127.0.0.1" in ln]
    assert len(closed) == 5 and all("no handshake in time" in ln for ln in closed), err
    assert "closed 25 more connections (not logged one by one)" in err, err
    assert len(err.splitlines()) == 6, err
    left.check()


def test_256_nodes_on_one_host(build: Builder, tmp_path: Path) -> None:
    # 32,640 connections on loopback (keepalive probes on every one of them, 1 s
    # apart, used to time out while nodes waited for GO: one run in five failed
    # with 192 nodes). The heavy test of this file: about 5 s here, 60 s at most.
    prog = build("hello.tc", target="tcp")
    left = Leftovers(prog, tmp_path)
    n = 256
    proc = run(prog, nodes=n, env=left.env, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(proc.stdout.splitlines()) == sorted(
        [f"hello from node {k} of {n}" for k in range(n)] + [f"all {n} node(s) said hello"])
    assert proc.stderr == ""
    left.check()


def _ss_kill() -> str | None:
    if os.geteuid() != 0:
        return "needs root to kill a connection (ss -K)"
    if shutil.which("ss") is None:
        return "needs the ss command (iproute2)"
    return None


def _control_connection(launcher: int, node: int) -> tuple[str, str]:
    """(the node's end, the launcher's end) of a node's connection to the launcher."""
    rows = []
    for line in subprocess.run(["ss", "-tnpH", "state", "established"], capture_output=True,
                               text=True, check=True).stdout.splitlines():
        addrs = re.findall(r"(\d+\.\d+\.\d+\.\d+:\d+)", line)
        pid = re.search(r"pid=(\d+),", line)
        if len(addrs) >= 2 and pid:
            rows.append((addrs[0], addrs[1], int(pid.group(1))))
    ends = {a for a, _, pid in rows if pid == launcher}
    found = [(a, b) for a, b, pid in rows if pid == node and b in ends]
    assert len(found) == 1, rows
    return found[0]


@pytest.mark.parametrize("end", ["node", "launcher"])
def test_a_lost_control_connection_is_named(build: Builder, tmp_path: Path, end: str) -> None:
    # Node 1's connection to the launcher is killed (ss -K, on the node's or the
    # launcher's end) while the run goes on: the error says what was lost, not
    # that the program called exit().
    why = _ss_kill()
    if why:
        pytest.skip(why)
    prog = build("forever.tc", target="tcp")
    left = Leftovers(prog, tmp_path)
    p = _start(prog, 2, left.env)
    assert p.stdout is not None and p.stdout.readline() == "running\n"
    node_end, launcher_end = _control_connection(p.pid, sorted(processes_of(prog))[1])
    local, peer = (node_end, launcher_end) if end == "node" else (launcher_end, node_end)
    killed = subprocess.run(["ss", "-K", "-tn", "src", local, "dst", peer], capture_output=True,
                            text=True, check=False)
    if killed.returncode != 0 or local not in killed.stdout:
        pytest.skip(f"ss -K cannot kill connections here: {killed.stderr.strip()}")
    _, err = p.communicate(timeout=20)
    assert p.returncode == 1
    assert "etc: error: node 1: lost the control connection to the launcher" in err, err
    assert err.count("etc: error:") == 1, err
    assert "exit()" not in err
    left.check()


@pytest.mark.parametrize(("fault", "why"), [("garbage", "oversized"),
                                          ("block", "a malformed block header")])
def test_a_garbage_frame_ends_the_run(build: Builder, tmp_path: Path, fault: str,
                                      why: str) -> None:
    prog = build("forever.tc", target="tcp")
    left = Leftovers(prog, tmp_path)
    proc = run(prog, nodes=2, env={**left.env, "ETC_TCP_FAULT": fault}, timeout=30)
    assert proc.returncode == 1
    assert "etc: error: node 0: bad frame from node 1" in proc.stderr, proc.stderr
    assert why in proc.stderr, proc.stderr
    left.check()


def test_a_node_that_cannot_start_is_named(build: Builder, tmp_path: Path) -> None:
    prog = build("fib.tc", target="tcp")
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:1\n127.0.0.2:1\n")  # 127.0.0.2: started through --rsh
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
    hosts.write_text("no-such-host.invalid:1\n")
    proc = etcrun("--rsh", str(fail))
    assert proc.returncode == 2
    assert "etcrun: error: cannot resolve host 'no-such-host.invalid'" in proc.stderr
    left.check()
    assert not any(Path("/proc").glob("*/cmdline")) or \
        all(b"hang-rsh" not in p.read_bytes() for p in Path("/proc").glob("[0-9]*/cmdline")
            if p.exists())


# ---------------------------------------------------------------- hosts without a count


def _fake_load(tmp: Path, name: str, runnable: int) -> str:
    f = tmp / name
    f.write_text(f"0.50 0.40 0.30 {runnable}/321 4567\n")
    return str(f)


def _quota_rsh(tmp: Path, cpus: int) -> Path:
    """A remote shell to a "host" whose cgroup allows `cpus` CPUs, idle otherwise."""
    cgroup = tmp / f"cgroup-{cpus}"
    cgroup.mkdir()
    (cgroup / "cpu.max").write_text(f"{cpus * 100000} 100000\n")
    rsh = tmp / f"rsh-{cpus}"
    rsh.write_text(f"#!/bin/sh\nshift\nexport ETC_CGROUP_DIR={cgroup} "
                   f"ETC_LOADAVG={_fake_load(tmp, f'load-{cpus}', 1)}\nexec sh -c \"$*\"\n")
    rsh.chmod(0o755)
    return rsh


def test_a_host_without_a_count_gets_the_nodes_auto_finds_there(build: Builder,
                                                                 tmp_path: Path) -> None:
    # issue 18: `-n auto` applies per host: each bare entry gets the CPUs the program
    # may use on that host less its other jobs' runnable tasks, this host's decided
    # by etcrun, another's asked by running the program there (ETC_QUERY=auto-nodes)
    prog = build("hello.tc", target="tcp")
    here = len(os.sched_getaffinity(0))
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost  # this host\n127.0.0.2\n127.0.0.3:auto\n")
    env = {**os.environ, "ETC_LOADAVG": _fake_load(tmp_path, "load-here", 1)}
    rsh = _quota_rsh(tmp_path, 1)  # a quota below this host's CPUs: it shows
    for count in ([], ["-n", "auto"]):
        proc = subprocess.run([str(BIN / "etcrun"), "-v", "--hosts", str(hosts), "--rsh",
                               str(rsh), *count, str(prog)], capture_output=True, text=True,
                              timeout=60, check=False, env=env)
        assert proc.returncode == 0, proc.stderr
        n = here + 1 + 1
        assert f"all {n} node(s) said hello" in proc.stdout
        assert (f"etcrun: --hosts localhost: auto, {here} node{'s' if here > 1 else ''} "
                f"({here} usable CPU{'s' if here > 1 else ''}, 0 busy with other jobs)"
                in proc.stderr), proc.stderr
        for remote in ("127.0.0.2", "127.0.0.3"):
            assert (f"etcrun: --hosts {remote}: auto, 1 node (1 usable CPU, 0 busy with "
                    f"other jobs)" in proc.stderr), proc.stderr
    # with a count, the nodes fill the hosts in order: here, then 127.0.0.2
    proc = subprocess.run([str(BIN / "etcrun"), "--hosts", str(hosts), "--rsh", str(rsh),
                           "-n", str(here + 1), str(prog)], capture_output=True, text=True,
                          timeout=60, check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"all {here + 1} node(s) said hello" in proc.stdout


def test_a_host_that_cannot_say_its_cpus_is_named(build: Builder, tmp_path: Path) -> None:
    prog = build("fib.tc", target="tcp")
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:1\n127.0.0.2\n")
    fail = tmp_path / "fail-rsh"
    fail.write_text("#!/bin/sh\necho \"ssh: connect to host $1: No route to host\" >&2\n"
                    "exit 255\n")
    fail.chmod(0o755)
    hang = tmp_path / "hang-rsh"
    hang.write_text("#!/bin/sh\nexec sleep 60\n")
    hang.chmod(0o755)

    def etcrun(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(BIN / "etcrun"), "--hosts", str(hosts), *args, str(prog),
                               "10"], capture_output=True, text=True, timeout=30, check=False)

    proc = etcrun("--rsh", str(fail))
    assert proc.returncode == 2
    assert proc.stderr == ("etcrun: error: host 127.0.0.2: cannot ask how many CPUs the "
                           "program may use there: ssh: connect to host 127.0.0.2: No route "
                           "to host\n")
    t0 = time.monotonic()
    proc = etcrun("--rsh", str(hang), "--timeout", "1")
    assert proc.returncode == 2
    assert "etcrun: error: host 127.0.0.2: no answer in time" in proc.stderr, proc.stderr
    assert time.monotonic() - t0 < 10
    for bad, why in (("127.0.0.2:0\n", "expected 'host', 'host:count' or 'host:auto'"),
                     ("127.0.0.2:many\n", "expected 'host', 'host:count' or 'host:auto'"),
                     ("# nobody\n", "no hosts in the file")):
        hosts.write_text(bad)
        proc = etcrun("--rsh", str(fail))
        assert proc.returncode == 2 and why in proc.stderr, proc.stderr


def test_the_program_answers_what_auto_means_on_its_host(build: Builder,
                                                          tmp_path: Path) -> None:
    # what etcrun asks a remote host: the runtime's rule (core/cpus.c), the one
    # etcrun applies here (etcpre/cpus.py)
    from etcpre import cpus
    prog = build("fib.tc", target="tcp")
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    (cgroup / "cpu.max").write_text("150000 100000\n")
    for runnable in (1, 2, 9):
        env = {**os.environ, "ETC_CGROUP_DIR": str(cgroup),
               "ETC_LOADAVG": _fake_load(tmp_path, "load", runnable), "ETC_QUERY": "auto-nodes"}
        proc = subprocess.run([str(prog)], capture_output=True, text=True, timeout=30,
                              check=False, env=env)
        found = cpus.auto_nodes(env)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == (f"etc-auto-nodes {found.nodes} usable {found.usable} "
                               f"busy {found.busy}\n")
    proc = subprocess.run([str(prog)], capture_output=True, text=True, timeout=30,
                          check=False, env={**os.environ, "ETC_QUERY": "weather"})
    assert proc.returncode == 2
    assert proc.stderr == ("etc: error: ETC_QUERY='weather' is not a question this program "
                           "answers (auto-nodes)\n")


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
