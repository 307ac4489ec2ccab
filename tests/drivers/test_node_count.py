"""The node count from the CPUs a program may use (issue 18): an smp program without a
count runs on as many nodes as its affinity mask, cgroup CPU quota and Slurm allow;
`auto` (etcrun -n auto, ETC_NODES=auto) also leaves out the CPUs other jobs are busy
with. The runtime (core/cpus.c) and etcrun (etcpre/cpus.py) decide alike."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from support import BIN, Builder, etcrun

CPUS = len(os.sched_getaffinity(0))


def nodes_of(stdout: str) -> int:
    m = re.search(r"all (\d+) node\(s\) said hello", stdout)
    assert m, stdout
    return int(m.group(1))


def alone(prog: Path, env: dict[str, str], *pre: str) -> int:
    """The node count of the program run directly (no etcrun)."""
    proc = subprocess.run([*pre, str(prog)], capture_output=True, text=True, timeout=60,
                          check=False, env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    return nodes_of(proc.stdout)


def fake_cgroup(tmp: Path, files: dict[str, str]) -> dict[str, str]:
    d = tmp / "cgroup"
    d.mkdir(exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text)
    return {"ETC_CGROUP_DIR": str(d)}


def fake_load(tmp: Path, runnable: int) -> dict[str, str]:
    f = tmp / "loadavg"
    f.write_text(f"0.50 0.40 0.30 {runnable}/321 4567\n")
    return {"ETC_LOADAVG": str(f)}


@pytest.mark.skipif(shutil.which("taskset") is None or CPUS < 2,
                    reason="needs taskset and two CPUs")
def test_the_affinity_mask_caps_the_count(build: Builder) -> None:
    prog = build("hello.tc")
    assert alone(prog, {}) == CPUS
    assert alone(prog, {}, "taskset", "-c", "0") == 1


@pytest.mark.skipif(CPUS < 2, reason="needs two CPUs")
@pytest.mark.parametrize(("files", "want"), [
    ({"cpu.max": "50000 100000\n"}, 1),                   # v2: half a CPU, rounded up
    ({"cpu.max": "100001 100000\n"}, 2),                  # just over one: two
    ({"cpu.max": "max 100000\n"}, CPUS),                  # no quota
    ({"cpu.cfs_quota_us": "100000\n", "cpu.cfs_period_us": "100000\n"}, 1),  # v1
    ({"cpu.cfs_quota_us": "-1\n", "cpu.cfs_period_us": "100000\n"}, CPUS),   # v1: none
], ids=["v2-half", "v2-just-over-one", "v2-max", "v1-one", "v1-none"])
def test_the_cgroup_quota_caps_the_count(build: Builder, tmp_path: Path,
                                         files: dict[str, str], want: int) -> None:
    env = fake_cgroup(tmp_path, files)
    assert alone(build("hello.tc"), env) == min(want, CPUS)


@pytest.mark.skipif(CPUS < 2, reason="needs two CPUs")
def test_slurm_caps_the_count(build: Builder) -> None:
    assert alone(build("hello.tc"), {"SLURM_CPUS_PER_TASK": "1"}) == 1


@pytest.mark.parametrize("busy", [0, 1, 5])
def test_auto_leaves_out_the_cpus_other_jobs_use(build: Builder, tmp_path: Path,
                                                 busy: int) -> None:
    # runnable tasks include the one reading the count: `busy` others
    env = fake_load(tmp_path, busy + 1)
    want = max(1, CPUS - busy)
    prog = build("hello.tc")
    assert alone(prog, {**env, "ETC_NODES": "auto"}) == want
    proc = etcrun("-v", "-n", "auto", str(prog), env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    assert nodes_of(proc.stdout) == want
    assert f"etcrun: -n auto: {want} node{'s' if want != 1 else ''} ({CPUS} usable CPU" \
        in proc.stderr, proc.stderr
    assert f", {busy} busy with other jobs)" in proc.stderr


def test_auto_is_the_same_for_the_runtime_and_etcrun(build: Builder, tmp_path: Path) -> None:
    prog = build("hello.tc")
    cases = [fake_load(tmp_path, 1), {**fake_load(tmp_path, 1), "SLURM_CPUS_PER_TASK": "1"},
             {**fake_load(tmp_path, 1), **fake_cgroup(tmp_path, {"cpu.max": "50000 100000"})}]
    for env in cases:
        by_runtime = alone(prog, {**env, "ETC_NODES": "auto"})
        by_etcrun = nodes_of(etcrun("-n", "auto", str(prog), env={**os.environ, **env}).stdout)
        assert by_runtime == by_etcrun, env


def test_auto_on_seq_and_tcp(build: Builder, tmp_path: Path) -> None:
    env = {**os.environ, **fake_load(tmp_path, 1)}
    seq = build("hello.tc", target="seq")
    assert nodes_of(etcrun("-n", "auto", str(seq), env=env).stdout) == 1
    assert alone(seq, {**env, "ETC_NODES": "auto"}) == 1
    tcp = build("hello.tc", target="tcp")
    proc = subprocess.run([str(BIN / "etcrun"), "-n", "auto", str(tcp)], capture_output=True,
                          text=True, timeout=60, check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    assert nodes_of(proc.stdout) == CPUS
