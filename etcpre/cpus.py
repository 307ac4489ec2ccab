"""How many CPUs a program may use, and how many nodes `auto` means: the rule of
runtime/core/cpus.c, for etcrun (which must know the count to start tcp nodes and
to say it with -v). A test keeps the two equal.

The CPUs a program may use: its affinity mask, capped by its cgroup's CPU quota (v2
cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us, rounded up, the smallest on the way
to the hierarchy's root; ETC_CGROUP_DIR names another directory) and by
SLURM_CPUS_PER_TASK. `auto` also leaves out the tasks other jobs have runnable at
start-up (/proc/loadavg, ourselves excluded; ETC_LOADAVG names another file), as
LLPC picks a process count from the load (seed 003); never fewer than one.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

CGROUP_V2 = Path("/sys/fs/cgroup")
CGROUP_V1 = (Path("/sys/fs/cgroup/cpu,cpuacct"), Path("/sys/fs/cgroup/cpu"))


def _first_line(path: Path) -> str | None:
    try:
        with open(path) as f:
            return f.readline()
    except OSError:
        return None


def _quota(quota: int, period: int) -> int:
    return math.ceil(quota / period) if quota > 0 and period > 0 else 0


def dir_quota(d: Path) -> int:
    """The CPU quota of one cgroup directory in CPUs (v2, then v1); 0 for none."""
    line = _first_line(d / "cpu.max")
    if line is not None:
        words = line.split()
        if len(words) >= 2 and words[0] != "max":
            try:
                return _quota(int(words[0]), int(words[1]))
            except ValueError:
                return 0
        return 0
    quota, period = _first_line(d / "cpu.cfs_quota_us"), _first_line(d / "cpu.cfs_period_us")
    try:
        return _quota(int(quota or ""), int(period or ""))
    except ValueError:
        return 0


def cgroup_quota(env: Mapping[str, str]) -> int:
    given = env.get("ETC_CGROUP_DIR")
    if given:
        return dir_quota(Path(given))
    root: Path | None = None
    rel = ""
    for line in (_read(Path("/proc/self/cgroup")) or "").splitlines():
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if line.startswith("0::") and root is None:
            root, rel = CGROUP_V2, path
        elif "cpu" in controllers.split(","):
            root = next((r for r in CGROUP_V1 if r.exists()), CGROUP_V1[1])
            rel = path
            break
    if root is None:
        return 0
    best = 0
    parts = [p for p in rel.split("/") if p]
    for k in range(len(parts), -1, -1):  # ours, then each parent up to the root
        q = dir_quota(root.joinpath(*parts[:k]))
        if q > 0 and (best == 0 or q < best):
            best = q
    return best


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def usable_cpus(env: Mapping[str, str]) -> int:
    n = os.cpu_count() or 1
    try:
        n = len(os.sched_getaffinity(0)) or n
    except OSError:
        pass
    quota = cgroup_quota(env)
    if 0 < quota < n:
        n = quota
    slurm = env.get("SLURM_CPUS_PER_TASK", "")
    if slurm.isdigit() and 0 < int(slurm) < n:
        n = int(slurm)
    return max(1, n)


def others_runnable(env: Mapping[str, str]) -> int:
    line = _first_line(Path(env.get("ETC_LOADAVG") or "/proc/loadavg")) or ""
    words = line.split()
    if len(words) < 4 or "/" not in words[3]:
        return 0
    running = words[3].split("/")[0]
    return int(running) - 1 if running.isdigit() and int(running) > 1 else 0


@dataclass(frozen=True)
class Auto:
    """What `auto` found: the node count and why."""

    nodes: int
    usable: int
    busy: int

    def describe(self) -> str:
        return (f"{self.nodes} node{'s' if self.nodes != 1 else ''} ({self.usable} usable "
                f"CPU{'s' if self.usable != 1 else ''}, {self.busy} busy with other jobs)")


def auto_nodes(env: Mapping[str, str]) -> Auto:
    usable, busy = usable_cpus(env), others_runnable(env)
    return Auto(max(1, usable - busy), usable, busy)
