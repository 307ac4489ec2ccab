"""etcrun's launcher for tcp programs: start N nodes, wire them up, watch them.

Nodes run on this host (default) or on the hosts of `--hosts FILE` (etcpre/launch/
hosts.py: `host:count` or `host` for auto, per line), started with `--rsh`, ssh by
default, in the same directory with the same program path. Each node gets the
launcher's control address in its environment and the run's random secret as the
first line of its standard input (never on a command line, where other users could
read it). The launcher:

1. collects every node's HELLO (secret, address, executable fingerprint) on a
   control socket bound to the one interface the nodes need; a connection without
   the secret is closed and logged; once every node has said HELLO it stops listening;
2. sends everyone the address table, waits for READY from all, sends GO;
3. relays every node's stdout and stderr line by line (never mid-line), with
   `[K] ` in front when asked (--tag-output);
4. ends the run: 0 when every node says FINISHED and exits 0; otherwise it prints
   one `etc: error: ...` (a lost node, a node that did not start or connect in
   time, naming its host), stops every node and reaps them all. SIGINT/SIGTERM stop
   everything the same way.

The node side is runtime/net/tcp/tcp.c; the control protocol is text lines, described
with the rest in docs/protocols.md (rules L1-L6, T1-T10).
"""

from __future__ import annotations

import argparse
import hmac
import os
import secrets
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from etcpre.launch.ended import signal_name
from etcpre.launch.hosts import (
    HostsError,
    HostSlots,
    is_local,
    on_host,
    placement,
    rsh_command,
)
from etcpre.launch.interrupted import interrupted_line
from etcpre.launch.sinks import Sinks, read_pipe

WIRE_VERSION = 3  # runtime/net/tcp/tcp.c says the same (a test keeps them equal)
STOP_GRACE = 2.0
WHERE_WAIT = 0.3  # L7: how long the nodes have to say what they run (each waits 50 ms)
SUSPECT_GRACE = 1.0  # how long a lost node's own exit status may take to say why
HELLO_GRACE = 10.0  # L1: a connection's time to say HELLO (hundreds of nodes start at once)
LOG_BURST, LOG_WINDOW = 5, 10.0  # closed connections logged one by one per window (T8)
# L1/T5: keepalive on the control connections finds a host that vanished without a
# word; patient (about 30 s), as the nodes' own, so that a loaded loopback's drops
# never end a live run
KEEPALIVE = (10, 5, 4)  # idle seconds, seconds between probes, probes


class LaunchError(Exception):
    """A problem starting the run; the message is ready for the user."""


@dataclass
class Node:
    k: int
    host: str
    proc: subprocess.Popen[bytes] | None = None
    conn: socket.socket | None = None
    addr: str = ""
    fingerprint: tuple[str, str] = ("", "")
    ready: bool = False
    finished: bool = False
    said_fatal: bool = False  # printed its own error, then exits with status 1
    said_error: bool = False  # wrote an `etc: error: node K: ...` line on its stderr
    ctl_lost: str | None = None  # why its control connection ended before FINISHED
    said_lost: int | None = None  # reported that node K vanished, then exits with 1
    suspect_since: float | None = None  # another node lost it: wait a moment for why
    exited: int | None = None
    ran: str | None = None  # what it was running when the run was interrupted (L7)
    line: bytearray = field(default_factory=bytearray)
    out: dict[str, bytearray] = field(default_factory=lambda: {"out": bytearray(),
                                                                "err": bytearray()})


def bind_address(hosts: list[str]) -> str:
    """The address of the one interface the nodes need to reach the launcher."""
    remote = [h for h in hosts if not is_local(h)]
    if not remote:
        return "127.0.0.1"
    try:
        info = socket.getaddrinfo(remote[0], 9, type=socket.SOCK_DGRAM)
    except OSError as exc:
        raise LaunchError(f"cannot resolve host '{remote[0]}': {exc}") from None
    family, _, _, _, sockaddr = info[0]
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.connect(sockaddr)  # no packet is sent: this only picks the route
        return s.getsockname()[0]


class Launcher:
    def __init__(self, prog: Path, args: list[str], n: int, env: dict[str, str],
                 opts: argparse.Namespace) -> None:
        self.prog = prog.resolve()
        self.args = args
        self.n = n
        self.env = env
        self.timeout = opts.timeout
        self.rsh = rsh_command(opts.rsh)
        self.tag = opts.tag_output
        slots = opts.host_slots or [HostSlots("localhost", n)]  # etcrun resolved --hosts
        self.nodes = [Node(k, h) for k, h in enumerate(placement(slots, n))]
        self.secret = secrets.token_hex(32)
        self.sel = selectors.DefaultSelector()
        self.error: str | None = None
        self.status = 0
        self.interrupted = 0
        self.phase = "start"  # "run" once every node has been told GO
        # control connections that have not said HELLO yet: (input, peer, deadline)
        self.pending: dict[socket.socket, tuple[bytearray, object, float]] = {}
        self.sinks = Sinks()
        self.listen: socket.socket | None = None  # closed once every node said HELLO
        self.rejected = 0  # closed connections logged in this log window ...
        self.untold = 0  # ... and those not logged one by one, the last of them:
        self.untold_last = ""
        self.log_window_end = 0.0

    # ---------------------------------------------------------------- output

    def _write(self, stream: str, data: bytes) -> None:
        """Writes to etcrun's own stdout/stderr; a write error fails the run (N10)."""
        why = self.sinks.write(stream, data)
        if why is not None:
            self.fail(why)

    def emit(self, node: Node, stream: str, data: bytes, eof: bool) -> None:
        buf = node.out[stream]
        buf += data
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                if not (eof and buf):
                    break
                buf += b"\n"  # N10: a last line without one is not glued to the next
                nl = len(buf) - 1
            line = bytes(buf[: nl + 1])
            del buf[: nl + 1]
            if stream == "err" and line.startswith(f"etc: error: node {node.k}: ".encode()):
                node.said_error = True  # it said why it ends: nothing to add (T7, T10)
            self._write(stream, (f"[{node.k}] ".encode() if self.tag else b"") + line)

    def say(self, msg: str) -> None:
        self._write("err", msg.encode() + b"\n")

    def fail(self, msg: str | None, status: int = 1) -> None:
        """The first failure ends the run; later ones are consequences."""
        if self.error is None:
            self.error = msg or ""
            self.status = status
            if msg:
                self.say(f"etc: error: {msg}")

    # ---------------------------------------------------------------- starting

    def start(self, listen: socket.socket) -> None:
        host, port = listen.getsockname()[:2]
        control = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        for node in self.nodes:
            env = {"ETC_TCP_CONTROL": control, "ETC_TCP_NODE": str(node.k),
                   "ETC_NODES": str(self.n)}
            for key in ("ETC_LB", "ETC_ADAPT", "ETC_PROF_OUT", "ETC_PROF_HZ", "ETC_TCP_FAULT",
                        "ETC_TRACE_DIR", "ETC_TRACE_LIMIT"):
                if key in self.env:
                    env[key] = self.env[key]
            if is_local(node.host):
                cmd = [str(self.prog), *self.args]
                full_env = {**self.env, **env}
            else:
                cmd = on_host(self.rsh, node.host, self.prog, env, self.args)
                full_env = dict(self.env)
            try:
                node.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=subprocess.PIPE, env=full_env,
                                             start_new_session=True)
            except OSError as exc:
                raise LaunchError(f"cannot start node {node.k} on host {node.host}: "
                                  f"{cmd[0]}: {exc.strerror}") from None
            assert node.proc.stdin and node.proc.stdout and node.proc.stderr
            try:  # unbuffered: a node that died at once must not break the launcher
                os.write(node.proc.stdin.fileno(), self.secret.encode() + b"\n")
            except OSError:
                pass  # its exit is reported below
            if node.k == 0:
                self._relay_stdin(node.proc.stdin)
            else:
                _close_quietly(node.proc.stdin)
            os.set_blocking(node.proc.stdout.fileno(), False)
            os.set_blocking(node.proc.stderr.fileno(), False)
            self.sel.register(node.proc.stdout, selectors.EVENT_READ, ("out", node))
            self.sel.register(node.proc.stderr, selectors.EVENT_READ, ("err", node))

    def _relay_stdin(self, pipe: object) -> None:
        """Node 0 reads the user's standard input (after the secret line)."""
        # Raw descriptors, not sys.stdin's buffered reader: a daemon thread blocked
        # inside a buffered read holds its lock, and the interpreter aborts when it
        # finds that lock taken at exit ("could not acquire lock ... at shutdown").
        def copy() -> None:
            try:
                dest = pipe.fileno()  # type: ignore[attr-defined]
                while chunk := os.read(source, 65536):
                    while chunk:
                        chunk = chunk[os.write(dest, chunk):]
            except (OSError, ValueError):
                pass
            finally:
                _close_quietly(pipe)
        try:
            source = sys.stdin.fileno()
        except (AttributeError, OSError, ValueError):  # no standard input, or closed
            _close_quietly(pipe)
            return
        threading.Thread(target=copy, daemon=True).start()

    # ---------------------------------------------------------------- control

    def accept(self, listen: socket.socket) -> None:
        try:
            conn, peer = listen.accept()
        except OSError:
            return
        conn.setblocking(False)
        self.sel.register(conn, selectors.EVENT_READ, ("ctl", None))
        self.pending[conn] = (bytearray(), peer, time.monotonic() + HELLO_GRACE)

    def stop_listening(self) -> None:
        """Every node has said HELLO: nobody else needs to connect (L1)."""
        if self.listen is not None:
            self.sel.unregister(self.listen)
            self.listen.close()
            self.listen = None
        for conn, (_, peer, _) in list(self.pending.items()):
            self.reject(conn, peer, "it did not present the run's secret")

    def control(self, conn: socket.socket, node: Node | None) -> None:
        try:
            data = conn.recv(65536)
        except BlockingIOError:
            return
        except OSError as exc:
            data = b""
            if node is not None and not node.finished:
                node.ctl_lost = exc.strerror or str(exc)
        if node is None:  # not yet identified: expect HELLO
            buf, peer, _ = self.pending[conn]
            buf += data
            if not data or (b"\n" not in buf and len(buf) > 4096):
                self.reject(conn, peer, "it did not present the run's secret")
                return
            if b"\n" in buf:
                line, _, rest = bytes(buf).partition(b"\n")
                self.hello(conn, peer, line.decode(errors="replace"), rest)
            return
        if not data:
            self.sel.unregister(conn)
            conn.close()
            node.conn = None
            if not node.finished and node.ctl_lost is None:
                node.ctl_lost = "closed by the node's end"
            if not node.finished and node.suspect_since is None:
                node.suspect_since = time.monotonic()  # its exit status will say why
            return
        node.line += data
        while b"\n" in node.line:
            raw, _, rest = bytes(node.line).partition(b"\n")
            node.line = bytearray(rest)
            self.message(node, raw.decode(errors="replace"))

    def reject(self, conn: socket.socket, peer: object, why: str) -> None:
        self.log_rejected(f"from {peer}: {why}")
        self.pending.pop(conn, None)
        self.sel.unregister(conn)
        conn.close()

    def log_rejected(self, what: str | None) -> None:
        """T8: at most LOG_BURST lines per LOG_WINDOW seconds and one counting the
        rest, so that a flood of strangers cannot fill stderr. `what` None: only
        that count, if its window is over; "": the count now (the run ends)."""
        now = time.monotonic()
        if now >= self.log_window_end or what == "":
            if self.untold:
                self.say(f"etc: warning: launcher: closed {self.untold} more connection"
                         f"{'s' if self.untold != 1 else ''} (not logged one by one); the "
                         f"last {self.untold_last}")
            self.rejected = self.untold = 0
        if not what:
            return
        if self.rejected == 0:
            self.log_window_end = now + LOG_WINDOW
        if self.rejected < LOG_BURST:
            self.rejected += 1
            self.say(f"etc: warning: launcher: closed a connection {what}")
        else:
            self.untold += 1
            self.untold_last = what

    def hello(self, conn: socket.socket, peer: object, line: str, rest: bytes) -> None:
        parts = line.split()
        if len(parts) != 8 or parts[0] != "HELLO" or \
                not hmac.compare_digest(parts[3].encode(), self.secret.encode()):
            self.reject(conn, peer, "it did not present the run's secret")
            return
        try:
            version, k = int(parts[1]), int(parts[2])
        except ValueError:
            self.reject(conn, peer, "malformed HELLO")
            return
        if version != WIRE_VERSION or not 0 <= k < self.n or self.nodes[k].conn is not None:
            self.reject(conn, peer, f"wrong version or node in its HELLO ({version}, {k})")
            return
        node = self.nodes[k]
        del self.pending[conn]
        self.sel.modify(conn, selectors.EVENT_READ, ("ctl", node))
        _tune(conn)
        node.conn = conn
        node.addr = parts[5]
        node.fingerprint = (parts[6], parts[7])
        node.line = bytearray(rest)

    def message(self, node: Node, line: str) -> None:
        words = line.split()
        if not words:
            return
        if words[0] == "RAN":
            node.ran = line.partition(" ")[2].strip()
        elif words[0] == "READY":
            node.ready = True
        elif words[0] == "FINISHED":
            node.finished = True
        elif words[0] == "LOST" and len(words) == 2 and words[1].isdigit():
            k = int(words[1])
            if 0 <= k < self.n:
                node.said_lost = k
                lost = self.nodes[k]
                if lost.suspect_since is None:
                    lost.suspect_since = time.monotonic()
        elif words[0] == "FATAL":
            node.said_fatal = True
            self.fail(None)  # the node printed its own error

    def exited(self, node: Node) -> None:
        """A node's process ended: fine after FINISHED, else the run fails (once)."""
        status = node.exited
        assert status is not None
        if node.conn is not None:
            # it is gone, so all it said is in our socket buffer: read it first
            self.control(node.conn, node)
        self.drain(node)  # and what it wrote last, which may say why
        if (status == 0 and node.finished) or self.error is not None or self.interrupted:
            return  # (an interrupted run's nodes were stopped: that is said once)
        if node.said_fatal or node.said_lost is not None:
            return  # the cause is reported elsewhere
        if node.said_error:
            self.fail(None)  # the node printed why (a lost control connection, ...)
        elif self.phase == "start" and node.conn is None and node.ctl_lost is None:
            self.fail(f"node {node.k} on host {node.host} exited before connecting "
                      f"({describe(status)})")
        elif status >= 0 and node.ctl_lost not in (None, "closed by the node's end"):
            # its connection broke before it ended (a killed process's may break too:
            # then the signal is the cause, below)
            self.fail(self.ctl_message(node) + f"; then it {describe(status)}")
        elif status >= 0:
            self.fail(f"node {node.k} (host {node.host}): exited with status {status} while "
                      "the run was going on (a node must not call exit(); MAIN ends with "
                      "END_FUNCTION() or RETURN())")
        else:
            self.fail(f"lost node {node.k} (host {node.host}): {describe(status)}")

    def ctl_message(self, node: Node) -> str:
        return (f"node {node.k} (host {node.host}): lost its control connection to the "
                f"launcher ({node.ctl_lost})")

    def drain(self, node: Node) -> None:
        """Relays what a node that exited still has in its output pipes."""
        assert node.proc is not None
        for stream, pipe in (("out", node.proc.stdout), ("err", node.proc.stderr)):
            if pipe is None or pipe.closed:
                continue
            while True:
                data = read_pipe(pipe.fileno())
                if data is None:
                    break
                if data:
                    self.emit(node, stream, data, eof=False)
                    continue
                try:
                    self.sel.unregister(pipe)
                except (KeyError, ValueError):
                    pass
                self.emit(node, stream, b"", eof=True)
                pipe.close()
                break

    def send_all(self, line: str) -> None:
        for node in self.nodes:
            if node.conn is not None:
                try:
                    node.conn.setblocking(True)
                    node.conn.sendall(line.encode())
                    node.conn.setblocking(False)
                except OSError:
                    pass

    # ---------------------------------------------------------------- the loop

    def pump(self, timeout: float) -> None:
        for key, _ in self.sel.select(timeout):
            kind, node = key.data
            if kind == "listen":
                self.accept(key.fileobj)  # type: ignore[arg-type]
            elif kind == "ctl":
                self.control(key.fileobj, node)  # type: ignore[arg-type]
            else:
                data = read_pipe(key.fd)
                if data is None:
                    continue
                self.emit(node, kind, data, eof=not data)
                if not data:
                    self.sel.unregister(key.fileobj)
        now = time.monotonic()
        for conn, (_, peer, deadline) in list(self.pending.items()):
            if now > deadline:
                self.reject(conn, peer, "no HELLO in time")
        self.log_rejected(None)
        for node in self.nodes:
            if node.proc is not None and node.exited is None and node.proc.poll() is not None:
                node.exited = node.proc.returncode
                self.exited(node)
            elif node.suspect_since is not None and node.exited is None and \
                    now - node.suspect_since > SUSPECT_GRACE:
                # still running but unreachable (a broken link, a remote host gone)
                self.fail(self.ctl_message(node) if node.ctl_lost is not None else
                          f"lost node {node.k} (host {node.host}): its connections broke")

    def wait_for(self, what: str, deadline: float) -> bool:
        """Pumps until every node has said HELLO (`what` "hello") or READY ("ready")."""
        while not all(self._has(nd, what) for nd in self.nodes):
            if self.error is not None or self.interrupted:
                return False
            left = deadline - time.monotonic()
            if left <= 0:
                missing = [nd for nd in self.nodes if not self._has(nd, what)]
                names = ", ".join(f"node {nd.k} on host {nd.host}" for nd in missing[:8])
                more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
                verb = "connect" if what == "hello" else "get ready"
                self.fail(f"{names}{more} did not {verb} within {self.timeout:g} s "
                          "(see --timeout)")
                return False
            self.pump(min(left, 0.1))
        return True

    @staticmethod
    def _has(node: Node, what: str) -> bool:
        return node.conn is not None if what == "hello" else node.ready

    def run(self) -> int:
        addr = bind_address([nd.host for nd in self.nodes])
        family = socket.AF_INET6 if ":" in addr else socket.AF_INET
        listen = socket.socket(family, socket.SOCK_STREAM)
        listen.bind((addr, 0))
        listen.listen(self.n + 64)
        listen.setblocking(False)
        self.listen = listen
        self.sel.register(listen, selectors.EVENT_READ, ("listen", None))
        old = {s: signal.signal(s, self._signal) for s in (signal.SIGINT, signal.SIGTERM,
                                                          signal.SIGHUP)}
        try:
            self.start(listen)
            deadline = time.monotonic() + self.timeout
            if self.wait_for("hello", deadline):
                self.stop_listening()
                prints = {nd.fingerprint for nd in self.nodes}
                if len(prints) != 1:
                    self.fail("the nodes do not run the same executable (addresses differ): "
                              f"{self.prog} must be the same binary on every host")
                else:
                    self.send_all("TABLE " + " ".join(nd.addr for nd in self.nodes) + "\n")
                    if self.wait_for("ready", deadline):
                        self.phase = "run"
                        self.send_all("GO\n")
            while self.error is None and not self.interrupted and \
                    not all(nd.exited is not None for nd in self.nodes):
                self.pump(0.2)
        finally:
            self.stop()
            for s, h in old.items():
                signal.signal(s, h)
            if self.listen is not None:
                self.listen.close()
        if self.interrupted:
            name = signal.Signals(self.interrupted).name
            self.say(interrupted_line(name, self.n, [nd.ran for nd in self.nodes]))
            return 128 + self.interrupted
        return self.status

    def _signal(self, signum: int, frame: object) -> None:
        self.interrupted = signum

    def ask_where(self) -> None:
        """L7: each running node says what it runs, to name a thread that never ends."""
        self.send_all("WHERE\n")
        deadline = time.monotonic() + WHERE_WAIT
        while time.monotonic() < deadline and \
                any(nd.ran is None and nd.conn is not None and nd.exited is None
                    for nd in self.nodes):
            self.pump(0.01)

    def stop(self) -> None:
        """Stops whatever still runs, reaps every process, relays the last output.
        A node's own thread watching the launcher makes it exit on KILL or when the
        control connection closes, even in the middle of a long thread, also on a
        remote host where the launcher can only end the ssh client."""
        try:
            if self.interrupted and self.error is None and self.phase == "run":
                self.ask_where()
            if self.error is not None or self.interrupted:
                self.send_all("KILL\n")
            deadline = time.monotonic() + STOP_GRACE
            while time.monotonic() < deadline and \
                    any(nd.proc and nd.proc.poll() is None for nd in self.nodes):
                self.pump(0.05)
        finally:
            for nd in self.nodes:
                if nd.conn is not None:
                    try:
                        self.sel.unregister(nd.conn)
                    except (KeyError, ValueError):
                        pass
                    nd.conn.close()
                    nd.conn = None
                if nd.proc and nd.proc.poll() is None:
                    try:
                        os.killpg(nd.proc.pid, signal.SIGKILL)
                    except OSError:
                        pass
            for nd in self.nodes:
                if nd.proc:
                    nd.proc.wait()
        end = time.monotonic() + 1.0
        while self.sel.get_map() and time.monotonic() < end and \
                any(k.data[0] in ("out", "err") for k in self.sel.get_map().values()):
            self.pump(0.05)
        for nd in self.nodes:
            for stream in ("out", "err"):
                if nd.out[stream]:
                    self.emit(nd, stream, b"", eof=True)
        for conn in list(self.pending):
            conn.close()
        self.log_rejected("")


def _tune(conn: socket.socket) -> None:
    """A node's control connection: no delay for its short lines, and keepalive."""
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for opt, value in zip(("TCP_KEEPIDLE", "TCP_KEEPINTVL", "TCP_KEEPCNT"), KEEPALIVE,
                          strict=True):
        if hasattr(socket, opt):  # Linux; elsewhere the system's defaults
            conn.setsockopt(socket.IPPROTO_TCP, getattr(socket, opt), value)


def _close_quietly(f: object) -> None:
    try:
        f.close()  # type: ignore[attr-defined]
    except OSError:
        pass


def describe(status: int | None) -> str:
    if status is None:
        return "still running"
    if status < 0:
        return f"killed by {signal_name(-status)}"
    return f"exited with status {status}"


def launch(prog: Path, args: list[str], n: int, env: dict[str, str],
           opts: argparse.Namespace) -> int:
    try:
        return Launcher(prog, args, n, env, opts).run()
    except (LaunchError, HostsError) as exc:
        sys.stderr.write(f"etcrun: error: {exc}\n")
        return 2
