"""etcrun --hosts FILE: which hosts a run uses and how many nodes each one takes.

One entry per line (`#` starts a comment): `host:count` gives that host `count` nodes;
a bare `host` (or `host:auto`) gives it what `-n auto` means on that host: the CPUs
the program may use there (affinity mask, cgroup quota, SLURM_CPUS_PER_TASK) less
those its other jobs are busy with at start-up, never fewer than one (issue 18, in
the spirit of LLPC, seed 003). This host answers through etcpre/cpus.py; another
host is asked through the remote shell, by running the program itself there with
ETC_QUERY=auto-nodes (runtime/core/cpus.c answers and exits): the program is the one
etc artefact every host of a run has.

With `-n N` the nodes fill each host's count in file order, around again when N is
larger; without a count, or with `-n auto`, a run gets the sum of the hosts' counts.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from etcpre import cpus

LOCAL_NAMES = {"localhost", "127.0.0.1", "::1", "ip6-localhost"}
ANSWER = re.compile(rb"^etc-auto-nodes (\d+) usable (\d+) busy (\d+)$", re.MULTILINE)


class HostsError(Exception):
    """A hosts file that cannot be used; the message is ready for the user."""


@dataclass(frozen=True)
class HostEntry:
    host: str
    count: int | None  # None: auto, decided on that host


@dataclass(frozen=True)
class HostSlots:
    """A host and the nodes it takes; `found` says what auto found there."""

    host: str
    count: int
    found: cpus.Auto | None = None

    def describe(self) -> str:
        if self.found is None:
            return f"{self.host}: {self.count} node{'s' if self.count != 1 else ''}"
        return f"{self.host}: auto, {self.found.describe()}"


def is_local(host: str) -> bool:
    return host in LOCAL_NAMES or host == socket.gethostname()


def rsh_command(text: str) -> list[str]:
    """--rsh as a command's words."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise HostsError(f"--rsh '{text}' is not a command line: {exc}") from None
    if not words:
        raise HostsError("--rsh is blank: it names no command")
    return words


def on_host(rsh: list[str], host: str, prog: Path, env: Mapping[str, str],
            args: list[str]) -> list[str]:
    """The command that runs `prog args` on another host through the remote shell, in
    this directory (every host of a run shares it), with `env` set there."""
    assigns = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    line = " ".join(shlex.quote(w) for w in (str(prog.resolve()), *args))
    return [*rsh, host, f"cd {shlex.quote(os.getcwd())} && exec env {assigns} {line}"]


def parse_hosts(path: str) -> list[HostEntry]:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise HostsError(f"--hosts {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise HostsError(f"--hosts {path}: not a text file") from None
    entries = []
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        # one ':' separates a count; an IPv6 address (several ':') has none
        host, _, count = line.rpartition(":") if line.count(":") == 1 else (line, "", "auto")
        count = count or "auto"
        if (not host or " " in host or "\t" in host
                or not (count == "auto" or (count.isdigit() and int(count) >= 1))):
            raise HostsError(f"{path}:{i}: expected 'host', 'host:count' or 'host:auto', "
                             f"got '{raw}'")
        entries.append(HostEntry(host, None if count == "auto" else int(count)))
    if not entries:
        raise HostsError(f"--hosts {path}: no hosts in the file")
    return entries


def resolve(entries: list[HostEntry], prog: Path, rsh: list[str], env: Mapping[str, str],
            timeout: float) -> list[HostSlots]:
    """Every entry with its node count; auto entries asked on their hosts, all at once."""
    asked: dict[str, subprocess.Popen[bytes]] = {}
    for e in entries:
        if e.count is None and not is_local(e.host) and e.host not in asked:
            try:
                asked[e.host] = subprocess.Popen(
                    on_host(rsh, e.host, prog, {"ETC_QUERY": "auto-nodes"}, []),
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, env=dict(env), start_new_session=True)
            except OSError as exc:
                _stop(asked)
                raise HostsError(f"host {e.host}: cannot ask how many CPUs the program may "
                                 f"use there: {rsh[0]}: {exc.strerror}") from None
    answers = {host: _answer(host, proc, time.monotonic() + timeout, asked)
               for host, proc in asked.items()}
    here = cpus.auto_nodes(env)
    return [HostSlots(e.host, e.count) if e.count is not None else
            HostSlots(e.host, (found := here if is_local(e.host) else answers[e.host]).nodes,
                      found)
            for e in entries]


def _answer(host: str, proc: subprocess.Popen[bytes], deadline: float,
            asked: Mapping[str, subprocess.Popen[bytes]]) -> cpus.Auto:
    try:
        out, err = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _stop(asked)
        raise HostsError(f"host {host}: no answer in time to how many CPUs the program may "
                         f"use there (--timeout)") from None
    m = ANSWER.search(out)
    if proc.returncode != 0 or m is None:
        _stop(asked)
        lines = err.decode(errors="replace").strip().splitlines()
        why = lines[-1] if lines else (f"exit status {proc.returncode}" if proc.returncode
                                       else "no answer on its output")
        raise HostsError(f"host {host}: cannot ask how many CPUs the program may use there: "
                         f"{why}")
    return cpus.Auto(int(m.group(1)), int(m.group(2)), int(m.group(3)))


def _stop(asked: Mapping[str, subprocess.Popen[bytes]]) -> None:
    for proc in asked.values():
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def placement(slots: list[HostSlots], n: int) -> list[str]:
    """Node k's host: fill each host's count in order, around again if needed."""
    order = [s.host for s in slots for _ in range(s.count)]
    return [order[k % len(order)] for k in range(n)]
