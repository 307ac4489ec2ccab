"""The profile of a -prof build, complete (thesis appendix C): the time of each node in
seven parts that add up to its elapsed time (C.1), every counter and the idle periods
as intervals (C.2), a table that fits 100 columns, the JSON of --prof-out
(docs/profiling.md); and the timers of thesis 2.3.7 (ct_read, etc_time_raw,
etc_delay)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from etcpre.cli import etcrun_cmd

from support import ROOT, TARGETS, Builder, etcrun, run

PARTS = ["application", "thread_management", "synchronization", "scheduling",
         "load_balancing", "idle", "polling"]
COUNTERS = ["threads_run", "tokens_generated", "tokens_consumed", "tokens_consumed_local",
            "balancing_activities", "requests_sent", "requests_received", "tokens_sent",
            "tokens_received", "extra_tokens", "remote_comms", "idle_time",
            "idle_period_count", "balancer_idle_time", "balancer_idle_period_count"]


def profile(prog: Path, args: list[str], n: int, tmp_path: Path,
            env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / "profile.json"
    proc = etcrun("-n", str(n), "--prof-out", str(out), str(prog), *args, timeout=120,
                  env=env)
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads(out.read_text())


def check_schema(data: dict, n: int) -> None:
    assert set(data) == {"balancer", "node_count", "sample_period", "nodes", "totals"}
    assert data["node_count"] == n and len(data["nodes"]) == n
    assert 0 < data["sample_period"] <= 0.1
    for k, node in enumerate(data["nodes"]):
        assert node["node"] == k
        assert set(node) == {"node", "elapsed", "time", "samples", *COUNTERS, "idle_periods",
                             "idle_periods_dropped"}, sorted(node)
        assert list(node["time"]) == PARTS
        assert sum(node["time"].values()) == pytest.approx(node["elapsed"], rel=0.02)
        assert isinstance(node["samples"], int)
        for start, end, kind in node["idle_periods"]:
            assert 0 <= start <= end <= node["elapsed"] + 1e-6
            assert kind in ("application", "balancer")
    assert set(data["totals"]) == {"nodes", "elapsed", "time", "samples", *COUNTERS}


@pytest.mark.parametrize(("target", "n"), [(t.name, min(t.max_nodes, 3)) for t in TARGETS])
def test_the_json_on_every_target(build: Builder, tmp_path: Path, target: str, n: int) -> None:
    proc, data = profile(build("lb_fib.tc", "-prof", target=target), ["18"], n, tmp_path)
    check_schema(data, n)
    assert sum(node["tokens_generated"] for node in data["nodes"]) == 8361  # calls of fib(18)
    assert proc.stderr.startswith("etc profile (")


def test_the_parts_of_the_time(build: Builder, tmp_path: Path) -> None:
    # node 0 computes in one thread for 0.3 s: application time; node 1 waits: idle
    _, data = profile(build("prof_parts.tc", "-prof"), ["0.3"], 2, tmp_path)
    check_schema(data, 2)
    busy, waiting = data["nodes"]
    assert busy["samples"] >= 100, busy  # 1 kHz for 0.3 s
    assert busy["time"]["application"] > 0.8 * busy["elapsed"], busy["time"]
    assert waiting["time"]["idle"] > 0.8 * waiting["elapsed"], waiting["time"]
    assert waiting["idle_periods"][0][2] == "application"  # the run's end ended it, no token


def test_the_runtime_share_of_a_fine_grain_program(build: Builder, tmp_path: Path) -> None:
    # fib with every call a token: much of the time goes to frames, tokens, slots
    # and the scheduler, not to fib's own additions
    _, data = profile(build("lb_fib.tc", "-prof", target="seq"), ["29"], 1, tmp_path,
                      env={**os.environ, "ETC_PROF_HZ": "5000"})
    t = data["nodes"][0]["time"]
    runtime = t["thread_management"] + t["synchronization"] + t["scheduling"]
    assert data["nodes"][0]["samples"] >= 40, data["nodes"][0]
    assert runtime > 0.15 * data["nodes"][0]["elapsed"], t  # about 30-60% here
    assert t["thread_management"] > 0 and t["scheduling"] > 0, t


def test_the_table_fits_100_columns_for_many_nodes(build: Builder, tmp_path: Path) -> None:
    proc, data = profile(build("lb_fib.tc", "-prof"), ["16"], 12, tmp_path)
    check_schema(data, 12)
    table = proc.stderr[proc.stderr.index("etc profile ("):].splitlines()
    assert all(len(s) <= 100 for s in table), [s for s in table if len(s) > 100]
    heads = [s.split()[1:] for s in table if s.startswith("node ")]
    assert heads == [["0", "1", "2", "3", "4"], ["5", "6", "7", "8", "9"],
                     ["10", "11", "total"]], heads
    labels = {s[:22].strip() for s in table[1:] if s.strip()}
    for label in ("elapsed (s)", "application", "thread management", "synchronization",
                  "scheduling", "load balancing", "idle", "polling", "threads run",
                  "balancing activities", "idle periods", "balancer idle (s)"):
        assert label in labels, label


@pytest.mark.parametrize(("target", "n"), [(t.name, min(t.max_nodes, 2)) for t in TARGETS])
@pytest.mark.parametrize("hz", ["lots", "5", "1_000", " 9"])
def test_a_bad_sampling_rate(build: Builder, target: str, n: int, hz: str) -> None:
    # a bad setting, said once before the run starts (status 2), on every target
    proc = run(build("lb_fib.tc", "-prof", target=target), "10", nodes=n,
               env={**os.environ, "ETC_PROF_HZ": hz})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (f"etc: error: ETC_PROF_HZ='{hz}' is not a sampling rate (10 to "
                           f"20000 per second)\n")


@pytest.mark.parametrize("hz", ["10", " +250", "20000"])
def test_a_good_sampling_rate_on_a_launched_target(build: Builder, tmp_path: Path,
                                                   hz: str) -> None:
    # etcrun's own check of ETC_PROF_HZ takes what the runtime takes
    launched = next(t.name for t in TARGETS if t.launcher)
    prog = build("lb_fib.tc", "-prof", target=launched)
    proc = run(prog, "10", nodes=2, env={**os.environ, "ETC_PROF_HZ": hz})
    assert proc.returncode == 0, proc.stderr


def test_etcruns_sampling_range_is_the_runtimes() -> None:
    source = (ROOT / "runtime" / "core" / "prof.c").read_text()
    low, high = (int(re.search(rf"#define PROF_HZ_{w} (\d+)", source).group(1))
                 for w in ("MIN", "MAX"))
    assert etcrun_cmd.PROF_HZ == (low, high)


@pytest.mark.parametrize("target", ["seq", "smp"])
def test_the_timers(build: Builder, target: str) -> None:
    proc = run(build("timing.tc", target=target), "0.05", nodes=1)
    assert proc.returncode == 0, proc.stderr
    seconds, raw, ct = (float(v) for v in proc.stdout.split())
    assert seconds >= 0.05  # etc_delay waits at least that long
    assert raw >= 0.05e9 and ct >= 0.05e9  # nanoseconds
    assert raw == pytest.approx(seconds * 1e9, rel=0.5)  # one clock, read a moment apart
