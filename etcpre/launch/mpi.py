"""etcrun's launcher for mpi programs: start N ranks with the MPI launcher, relay
their output, and say in one `etc: error: ...` line why a failed run failed.

The MPI launcher is `ETC_MPIRUN` (a command line, e.g. `srun --mpi=pmix`), else
`mpirun`, else `mpiexec`; etcrun appends `-n N program args...`. For Open MPI's
(recognised by its `--version`) it adds what this machine needs (docs/protocols.md
P9): `--oversubscribe --bind-to none` when N exceeds the CPUs, `-x VAR` for the
`ETC_*` settings, and a private session directory, removed after the run; with
`--hosts` a host file for Open MPI's or MPICH's launcher (etcpre/launch/hosts.py
decides each host's count). For MPICH's (Hydra) it asks for every rank's exit
status and gives the ranks lifelines (etcpre/launch/hydra.py). Run as
root, `OMPI_ALLOW_RUN_AS_ROOT=1` and `OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1` are in the
environment of any MPI launcher (Open MPI refuses root without them).

The ranks report their own faults (`etc: error: node K: ...`, then MPI_Abort or
death by the signal); the MPI launcher then stops the others and prints its own
account of it, which is held back and dropped. A rank that could not report (killed
from outside, a sanitizer's exit) is named from Open MPI's account, or under Hydra,
whose account does not say which rank failed, from the order in which the ranks'
lifelines closed and their statuses: `etc: error: node K: killed by SIGKILL`.
SIGINT, SIGTERM and SIGHUP stop the MPI launcher and so every rank; each rank says
what it was running, and etcrun says it once for all of them.
"""

from __future__ import annotations

import argparse
import os
import re
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from etcpre.launch import hydra
from etcpre.launch.ended import signal_name
from etcpre.launch.hosts import HostSlots, is_local
from etcpre.launch.interrupted import RANK_WAS, interrupted_line
from etcpre.launch.sinks import Sinks, read_pipe

STOP_GRACE = 3.0  # seconds the MPI launcher has to stop its ranks after a signal
DASHES = re.compile(r"^-{20,}$")
# Open MPI's accounts of a rank that ended the job (4.x: mpirun, 5.x: prterun)
KILLED = re.compile(r"process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+)")
EXIT_NAME = re.compile(r"Process name:\s*\[\[\d+,\d+\],(\d+)\]")
EXIT_CODE = re.compile(r"Exit code:\s*(\d+)")
IMPROPER = re.compile(r"process rank (\d+) with PID \d+ on node \S+ exiting improperly")
# What Open MPI's launcher prints outside its dashed blocks, about itself
OMPI_LINE = re.compile(r"^\[[^\]\s]+:\d+\] |^Set MCA parameter |^(mpirun|prterun): ")
PASS_ON = ("ETC_LB", "ETC_ADAPT", "ETC_PROF_OUT", "ETC_PROF_HZ", "ETC_TAG_OUTPUT", "ETC_NODES",
           "ETC_TRACE_DIR", "ETC_TRACE_LIMIT")


class LaunchError(Exception):
    """A problem starting the run; the message is ready for the user."""


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def mpi_command(env: dict[str, str]) -> list[str]:
    """The MPI launcher's command: ETC_MPIRUN, mpirun or mpiexec."""
    given = env.get("ETC_MPIRUN")
    if given is not None:
        try:
            cmd = shlex.split(given)
        except ValueError as exc:
            raise LaunchError(f"ETC_MPIRUN='{given}' is not a command line: {exc}") from None
        if not cmd:
            raise LaunchError("ETC_MPIRUN is set but blank: it names no MPI launcher")
        if shutil.which(cmd[0], path=env.get("PATH")) is None:
            raise LaunchError(f"ETC_MPIRUN='{given}': {cmd[0]}: command not found")
        return cmd
    for name in ("mpirun", "mpiexec"):
        path = shutil.which(name, path=env.get("PATH"))
        if path:
            return [path]
    raise LaunchError("neither mpirun nor mpiexec is installed (install Open MPI or MPICH, "
                      "or name the launcher in ETC_MPIRUN)")


def launcher_kind(cmd: list[str], env: dict[str, str]) -> str | None:
    """"openmpi" or "hydra" (MPICH's) from the MPI launcher's --version; None: another
    (srun, a wrapper), to which etcrun adds nothing but `-n N`."""
    # mpirun, or Debian's alternatives' targets: mpirun.openmpi, mpiexec.mpich, ...
    if Path(cmd[0]).name.split(".")[0] not in ("mpirun", "mpiexec", "orterun", "prterun"):
        return None
    try:
        out = subprocess.run([cmd[0], "--version"], capture_output=True, text=True,
                             timeout=20, env=env, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    said = out.stdout + out.stderr
    if "Open MPI" in said or "OpenRTE" in said:
        return "openmpi"
    return "hydra" if "HYDRA" in said else None


def allow_root(env: dict[str, str]) -> None:
    """Run as root: Open MPI refuses it without both; other launchers ignore them."""
    if os.geteuid() == 0:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"


def plain_command(n: int, env: dict[str, str]) -> list[str]:
    """The MPI launcher's command for n ranks on this host with only what it needs
    here (P9: root's permission, put in env; Open MPI's oversubscription): how a batch
    script starts an mpi program, or a raw MPI program measured beside etc starts."""
    cmd = mpi_command(env)
    allow_root(env)
    if launcher_kind(cmd, env) == "openmpi" and n > cpu_count():
        cmd += ["--oversubscribe", "--bind-to", "none"]
    return [*cmd, "-n", str(n)]


def host_file(kind: str | None, slots: list[HostSlots], where: str) -> list[str]:
    """The MPI launcher's flags that place the ranks on `slots` (P9)."""
    if kind is None:
        raise LaunchError("--hosts: etcrun knows how to give hosts to Open MPI's and MPICH's "
                          "launchers only; give them to this one (ETC_MPIRUN) its own way")
    path = Path(where) / "hosts"
    if kind == "openmpi":
        path.write_text("".join(f"{s.host} slots={s.count}\n" for s in slots))
        return ["--hostfile", str(path)]
    path.write_text("".join(f"{s.host}:{s.count}\n" for s in slots))
    return ["-f", str(path)]


def explain(text: str, status: int) -> str:
    """The `etc: error:` line for a failed run whose ranks said nothing, from what
    the MPI launcher printed."""
    m = KILLED.search(text)
    if m:
        return f"node {m.group(1)}: killed by {signal_name(int(m.group(2)))}"
    name, code = EXIT_NAME.search(text), EXIT_CODE.search(text)
    if name and code:
        return (f"node {name.group(1)}: exited with status {code.group(1)} while the run was "
                "going on")
    m = IMPROPER.search(text)
    if m:
        return f"node {m.group(1)}: exited without finishing the run"
    if status < 0:
        return f"the MPI launcher was killed by {signal_name(-status)}"
    return f"the MPI launcher failed (exit status {status}); its message is above"


class Launcher:
    def __init__(self, prog: Path, args: list[str], n: int, env: dict[str, str],
                 slots: list[HostSlots] | None = None) -> None:
        self.n = n
        self.env = dict(env)
        self.env["ETC_NODES"] = str(n)
        cmd = mpi_command(self.env)
        # absolute: a launcher may look a bare name up in PATH, or start elsewhere
        where_prog = str(prog.resolve())
        self.sel = selectors.DefaultSelector()
        self.tmp: str | None = None
        flags: list[str] = []
        allow_root(self.env)
        kind = self.kind = launcher_kind(cmd, self.env)
        if kind is not None or slots:
            # Open MPI's session directory, the ranks' lifelines under Hydra, our
            # host file: removed after the run, however it ends
            self.tmp = tempfile.mkdtemp(prefix="etc-mpi-")
        if slots:
            try:
                flags += host_file(kind, slots, self.tmp or "")
            except BaseException:
                shutil.rmtree(self.tmp or "", ignore_errors=True)
                raise
        if kind == "hydra":
            flags += hydra.FLAGS
            # MPICH's UCX device prints a backtrace of every crash after the rank's
            # own report (read when the library loads: the rank cannot turn it off)
            self.env.setdefault("UCX_HANDLE_ERRORS", "none")
        if kind == "openmpi":
            if n > (sum(s.count for s in slots) if slots else cpu_count()):
                flags += ["--oversubscribe", "--bind-to", "none"]
            for key in PASS_ON:
                if key in self.env:
                    flags += ["-x", key]
            self.env["OMPI_MCA_orte_tmpdir_base"] = self.tmp or ""
            self.env["OMPI_MCA_prte_tmpdir_base"] = self.tmp or ""
        self.cmd = [*cmd, *flags, "-n", str(n), where_prog, *args]
        self.held: list[str] = []  # the MPI launcher's own lines, held back
        self.in_block = False
        self.reported = False  # a rank printed its own `etc: error:`
        self.interrupted = 0
        self.ran: dict[int, str] = {}  # an interrupted run: what each rank said it ran
        self.partial = {"out": b"", "err": b""}
        self.sinks = Sinks()
        self.hydra_out = hydra.Stdout(lambda raw: self._write("out", raw)) \
            if kind == "hydra" else None
        self.output_error: str | None = None  # the run's output was lost: it fails
        self.watch: hydra.Lifelines | None = None
        # last: nothing after it may fail and leave its descriptors open. Lifelines
        # are FIFOs of this host: for ranks of this host only
        if kind == "hydra" and all(is_local(s.host) for s in slots or []):
            where = Path(self.tmp or "") / "lifelines"
            try:
                where.mkdir()
                self.watch = hydra.Lifelines(where, n)
                self.env["ETC_MPI_LIFELINES"] = str(where)
            except OSError:
                pass  # without them, Hydra's account is shown

    def _write(self, stream: str, data: bytes) -> None:
        """Writes to etcrun's own stdout/stderr; a write error fails the run (N10)."""
        why = self.sinks.write(stream, data)
        if why is not None and self.output_error is None:
            self.output_error = why

    def line(self, stream: str, raw: bytes) -> None:
        if stream == "out":
            if self.hydra_out:
                self.hydra_out.line(raw)
            else:
                self._write("out", raw)
            return
        text = raw.decode(errors="replace").rstrip("\n")
        if DASHES.match(text):
            self.in_block = not self.in_block
            self.held.append(text)
            return
        if self.in_block or OMPI_LINE.match(text) or (self.hydra_out and hydra.LINE.match(text)):
            self.held.append(text)
            return
        was = RANK_WAS.match(text)
        if was and int(was.group(1)) < self.n:
            # interrupted: said once, in etcrun's own line; else the MPI launcher is
            # stopping the others after a rank failed, which that rank has said
            if self.interrupted:
                self.ran[int(was.group(1))] = was.group(2)
            return
        if text.startswith(("etc: error:", "etc: interrupted")):
            self.reported = True
        self._write("err", raw)

    def relay(self, stream: str, data: bytes, eof: bool) -> None:
        buf = self.partial[stream] + data
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                break
            self.line(stream, buf[: nl + 1])
            buf = buf[nl + 1:]
        if eof and buf:
            self.line(stream, buf)
            buf = b""
        self.partial[stream] = buf

    def _signal(self, signum: int, frame: object) -> None:
        self.interrupted = signum

    def run(self) -> int:
        old = {s: signal.signal(s, self._signal)
               for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            return self._run()
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            if self.watch:
                self.watch.close(self.sel)
            self.sel.close()
            if self.tmp:
                shutil.rmtree(self.tmp, ignore_errors=True)

    def _run(self) -> int:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        try:
            proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=self.env, start_new_session=True)
        except OSError as exc:
            raise LaunchError(f"cannot start {self.cmd[0]}: {exc.strerror}") from None
        assert proc.stdout and proc.stderr
        pipes = ((proc.stdout, "out"), (proc.stderr, "err"))
        try:
            for f, kind in pipes:
                os.set_blocking(f.fileno(), False)
                self.sel.register(f, selectors.EVENT_READ, kind)
            if self.watch:
                self.watch.watch(self.sel)
            self._relay(proc)
        finally:  # the pipes are ours: closed however the relay ended
            for f, _ in pipes:
                if f in self.sel.get_map():
                    self.sel.unregister(f)
                f.close()
        status = proc.wait()
        _signal_group(proc.pid, signal.SIGKILL)  # nothing of the run outlives it
        for stream in ("out", "err"):
            self.relay(stream, b"", eof=True)
        account = self.hydra_out.finish(failed=status != 0) if self.hydra_out else []
        if self.output_error is not None:
            self._write("err", f"etc: error: {self.output_error}\n".encode())
            return 1
        if self.interrupted:
            name = signal.Signals(self.interrupted).name
            ran = [self.ran.get(k) for k in range(self.n)]
            self._write("err", f"{interrupted_line(name, self.n, ran)}\n".encode())
            return 128 + self.interrupted
        if status == 0:
            if self.held:  # warnings of a run that went well: the user may want them
                self._write("err", "".join(x + "\n" for x in self.held).encode())
            return 0
        if not self.reported:
            why = self.why(status, account)
            if why.endswith("its message is above"):
                self._write("err", "".join(x + "\n" for x in self.held + account).encode())
            self._write("err", f"etc: error: {why}\n".encode())
        # the statuses of docs/language.md: 2, a node that could not start (a bad
        # setting: it exits 2 before the run); 1, every failure of the run itself,
        # whatever status the MPI launcher passes on (a crashed rank's signal: Open
        # MPI's 128 + N, Hydra's N; the code given to MPI_Abort). Under a wrapper of
        # Hydra that etcrun does not recognise, a rank's SIGINT alone would read 2.
        codes = self.hydra_out.codes if self.hydra_out else []
        return 2 if status == 2 and not hydra.any_signalled(codes) else 1

    def why(self, status: int, account: list[str]) -> str:
        """What failed, when no rank said: from Hydra's output and the order in which
        the ranks ended, or from Open MPI's account."""
        if self.watch:
            said = hydra.explain(self.held, self.watch.batches, self.watch.held,
                                 self.hydra_out.codes if self.hydra_out else [], self.n)
            if said:
                return said
        return explain("\n".join(self.held + account), status)

    def _relay(self, proc: subprocess.Popen[bytes]) -> None:
        """The launcher's output to ours until both its pipes end, or until it has
        been stopped (an interrupt, our output gone) and the grace is over; the
        ranks' lifelines seen closed meanwhile (hydra.Lifelines)."""
        stop_sent: float | None = None
        while any(isinstance(k.data, str) for k in self.sel.get_map().values()):
            if (self.interrupted or self.output_error) and stop_sent is None:
                stop_sent = time.monotonic()
                _signal_group(proc.pid, signal.SIGTERM)
            if stop_sent is not None and time.monotonic() - stop_sent > STOP_GRACE:
                _signal_group(proc.pid, signal.SIGKILL)
                return
            ready = self.sel.select(0.2)
            if self.watch:  # the ranks that ended at this wake-up
                self.watch.ended(self.sel, [k.fd for k, _ in ready if not isinstance(k.data, str)])
            for key, _ in ready:
                if not isinstance(key.data, str):
                    continue
                data = read_pipe(key.fd)
                if data is None:
                    continue
                self.relay(key.data, data, eof=not data)
                if not data:
                    self.sel.unregister(key.fileobj)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except OSError:
        pass


def launch(prog: Path, args: list[str], n: int, env: dict[str, str],
           opts: argparse.Namespace) -> int:
    try:
        return Launcher(prog, args, n, env, opts.host_slots).run()
    except LaunchError as exc:
        sys.stderr.write(f"etcrun: error: {exc}\n")
        return 2
