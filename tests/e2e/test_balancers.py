"""Every load balancer (reference section 6, thesis 2.3.4 and chapter 3) and the -prof
profile (appendix C): right results for fib, queens and knary on smp nodes with and
without -prof, the profile's invariants for each balancer, what each policy must and
must not do, how a balancer is chosen, and the balancer lists kept in step."""

from __future__ import annotations

import json
import os
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

from etcpre import toolchain

from support import ROOT, Builder, etcc, etcrun, run

BALANCERS = toolchain.BALANCERS
# Policies that ask for work when idle (their profile shows requests).
RECEIVERS = {"dual", "spn", "shis", "his", "range", "catapult", "rand", "rand-rcv-info",
             "rand-rcv", "rand-hybrid-noinfo", "rand-hybrid", "rand-hybrid-piggyback"}
# Purely sender-initiated: no requests at all.
SENDERS_ONLY = {"snd", "rand-snd-info"}
# Receiver-initiated, answering the requester directly: every token sent answers a
# request that reached the node.
ANSWER_ONLY = {"spn", "shis", "rand-rcv", "rand-rcv-info"}
assert RECEIVERS | SENDERS_ONLY | {"minima", "nop"} == set(BALANCERS)

NODES = 4
# the profile's JSON (docs/profiling.md): per node these, "time" (PARTS), "samples",
# "idle_periods" and "idle_periods_dropped"; the totals have the counters and "time"
PROF_KEYS = ["elapsed", "threads_run", "tokens_generated", "tokens_consumed",
             "tokens_consumed_local", "balancing_activities", "requests_sent",
             "requests_received", "tokens_sent", "tokens_received", "extra_tokens",
             "remote_comms", "idle_time", "idle_period_count", "balancer_idle_time",
             "balancer_idle_period_count"]
TIME_KEYS = {"elapsed", "idle_time", "balancer_idle_time"}
PARTS = ["application", "thread_management", "synchronization", "scheduling",
         "load_balancing", "idle", "polling"]


# ---------------------------------------------------------------- what the programs compute


@cache
def fib_expect(n: int) -> tuple[str, int, int]:
    """(stdout, tokens, threads) of lb_fib n: every call a token, thread 1 in each
    call with n >= 2, and MAIN's two threads."""
    f = [0, 1]
    while len(f) < n + 3:
        f.append(f[-1] + f[-2])
    calls = 2 * f[n + 1] - 1
    return f"fib({n}) = {f[n]}\n", calls, calls + (f[n + 1] - 1) + 2


@cache
def queens_expect(n: int, cutoff: int) -> tuple[str, int, int]:
    """(stdout, tokens, threads) of lb_queens n cutoff."""
    full = (1 << n) - 1

    def seq(row: int, cols: int, d1: int, d2: int) -> int:
        if row == n:
            return 1
        total, free = 0, full & ~(cols | d1 | d2)
        while free:
            bit = free & -free
            free -= bit
            total += seq(row + 1, cols | bit, ((d1 | bit) << 1) & full, (d2 | bit) >> 1)
        return total

    def tok(row: int, cols: int, d1: int, d2: int) -> tuple[int, int, int]:
        if row >= cutoff or row == n:
            return seq(row, cols, d1, d2), 1, 1
        free = full & ~(cols | d1 | d2)
        if free == 0:
            return 0, 1, 1
        sols, tokens, threads = 0, 1, 2
        while free:
            bit = free & -free
            free -= bit
            s, t, h = tok(row + 1, cols | bit, ((d1 | bit) << 1) & full, (d2 | bit) >> 1)
            sols, tokens, threads = sols + s, tokens + t, threads + h
        return sols, tokens, threads

    sols, tokens, threads = tok(0, 0, 0, 0)
    return f"queens({n}) = {sols}\n", tokens, threads + 2


LCG_A, LCG_C, MASK = 6364136223846793005, 1442695040888963407, 2**64 - 1


def lcg_jump(steps: int) -> tuple[int, int]:
    """(a, c) with x -> a*x + c equal to `steps` steps of the programs' LCG."""
    a, c = 1, 0                  # the identity map
    pa, pc = LCG_A, LCG_C        # the map for 2^i steps
    while steps:
        if steps & 1:
            a, c = (pa * a) & MASK, (pa * c + pc) & MASK
        pa, pc = (pa * pa) & MASK, (pa * pc + pc) & MASK
        steps >>= 1
    return a, c


@cache
def knary_expect(depth: int, k: int, r: int, iters: int) -> tuple[str, int, int]:
    """(stdout, tokens, threads) of lb_knary depth k r iters: tree node `id` adds the
    LCG's value after `iters` steps from id; child i of id is id*k + i + 1."""
    a, c = lcg_jump(iters)
    total, nodes, level = 0, 0, [0]
    for d in range(depth + 1):
        for ident in level:
            total += ((a * ident + c) & MASK) & 0xFFFF
        nodes += len(level)
        if d < depth:
            level = [ident * k + i + 1 for ident in level for i in range(k)]
    interior = nodes - k ** depth
    tokens = 1 + (k - r) * interior
    return (f"knary({depth}, {k}, {r}): {nodes} nodes, checksum {total}\n", tokens,
            nodes + interior + 2)


# (source, args, expectation): small runs, a few milliseconds of work each
PROGRAMS = [
    ("lb_fib.tc", ["21"], fib_expect(21)),
    ("lb_queens.tc", ["10", "3"], queens_expect(10, 3)),
    ("lb_knary.tc", ["4", "4", "1", "3000"], knary_expect(4, 4, 1, 3000)),
]


# ---------------------------------------------------------------- the profile


def run_prof(prog: Path, args: list[str], tmp_path: Path, nodes: int, lb: str | None,
             env: dict[str, str] | None = None,
             timeout: float = 60) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / f"prof-{prog.name}-{nodes}-{lb}.json"
    out.unlink(missing_ok=True)
    if env is None:  # only what the test asks for chooses the balancer
        env = {k: v for k, v in os.environ.items() if k != "ETC_LB"}
    env = {**env, "ETC_PROF_OUT": str(out)}
    lb_args = ["--lb", lb] if lb else []
    proc = etcrun("-n", str(nodes), *lb_args, str(prog), *args, env=env, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    assert out.is_file(), f"no profile written:\n{proc.stderr}"
    return proc, json.loads(out.read_text())


def check_profile(data: dict, nodes: int, lb: str, tokens: int, threads: int) -> list[dict]:
    """The invariants every balancer's profile must satisfy; returns the node rows."""
    assert data["balancer"] == lb
    assert data["node_count"] == nodes
    rows = data["nodes"]
    assert [r["node"] for r in rows] == list(range(nodes))
    for r in rows:
        assert set(r) == {"node", "time", "samples", "idle_periods", "idle_periods_dropped",
                          *PROF_KEYS}, r
        for k in PROF_KEYS:
            assert r[k] >= 0, (k, r)
            if k not in TIME_KEYS:
                assert isinstance(r[k], int), (k, r)
        # C.1: seven parts, in seconds, that add up to the elapsed time (2%)
        assert list(r["time"]) == PARTS, r["time"]
        assert all(v >= 0 for v in r["time"].values()), r["time"]
        assert sum(r["time"].values()) == pytest.approx(r["elapsed"], rel=0.02), r
        assert r["time"]["idle"] == pytest.approx(r["idle_time"], abs=1e-6), r
        # C.2: every idle period as an interval, in order, within the run
        periods = r["idle_periods"]
        assert len(periods) + r["idle_periods_dropped"] == r["idle_period_count"], r
        assert sum(1 for p in periods if p[2] == "balancer") <= r["balancer_idle_period_count"]
        assert sum(p[1] - p[0] for p in periods) == pytest.approx(r["idle_time"], abs=1e-6)
        for a, b in zip(periods, periods[1:], strict=False):
            assert a[1] <= b[0], (a, b)
        for start, end, kind in periods:
            assert 0 <= start <= end <= r["elapsed"] + 1e-6, (start, end, r["elapsed"])
            assert kind in ("application", "balancer"), kind

    def total(key: str) -> int:
        return sum(r[key] for r in rows)

    # nothing lost, nothing duplicated, nothing counted twice (appendix C)
    assert total("tokens_generated") == tokens, rows
    assert total("tokens_consumed") == tokens, rows
    assert total("threads_run") == threads, rows
    assert total("tokens_sent") == total("tokens_received"), rows
    # balancer requests are control messages: some may still be in flight at the end
    assert total("requests_received") <= total("requests_sent"), rows
    eps = 1e-6
    for r in rows:
        assert r["tokens_consumed_local"] <= min(r["tokens_consumed"], r["tokens_generated"]), r
        assert r["tokens_consumed"] - r["tokens_consumed_local"] <= r["tokens_received"], r
        assert r["tokens_consumed"] <= r["threads_run"], r
        assert r["extra_tokens"] <= r["tokens_received"], r
        assert r["balancing_activities"] == (r["requests_sent"] + r["requests_received"]
                                             + r["tokens_sent"] + r["tokens_received"]), r
        assert r["balancer_idle_period_count"] <= r["idle_period_count"], r
        assert r["balancer_idle_time"] <= r["idle_time"] + eps, r
        assert r["idle_time"] <= r["elapsed"] + eps, r
        if r["idle_period_count"] == 0:
            assert r["idle_time"] == 0, r
    tot = data["totals"]
    assert tot["nodes"] == nodes
    for part in PARTS:
        assert tot["time"][part] == pytest.approx(sum(r["time"][part] for r in rows), abs=1e-6)
    for k in PROF_KEYS:
        if k == "elapsed":
            assert tot[k] == pytest.approx(max(r[k] for r in rows))
        elif k in TIME_KEYS:
            assert tot[k] == pytest.approx(sum(r[k] for r in rows), abs=1e-6)
        else:
            assert tot[k] == total(k), k
    return rows


# the table's rows of counts, by label, and their JSON keys
TABLE_COUNTS = {"threads run": "threads_run", "tokens generated": "tokens_generated",
                "tokens consumed": "tokens_consumed", "of them made here": "tokens_consumed_local",
                "balancing activities": "balancing_activities",
                "requests sent": "requests_sent", "requests received": "requests_received",
                "tokens sent": "tokens_sent", "tokens received": "tokens_received",
                "extra tokens": "extra_tokens", "remote comms": "remote_comms",
                "idle periods": "idle_period_count",
                "balancer idle periods": "balancer_idle_period_count"}


def check_table(stderr: str, data: dict, nodes: int, lb: str) -> None:
    """The table on stderr: a metric per row, a column per node and the totals, at
    most 100 characters wide, in tables of at most five nodes; as in the JSON."""
    lines = stderr.splitlines()
    head = [i for i, s in enumerate(lines) if s.startswith("etc profile (")]
    assert len(head) == 1, stderr
    i = head[0]
    assert lines[i].startswith(f"etc profile ({nodes} node{'s' if nodes > 1 else ''}, "
                               f"balancer {lb};"), lines[i]
    table = lines[i:]
    assert all(len(s) <= 100 for s in table), "\n".join(s for s in table if len(s) > 100)
    columns: list[str] = []
    counts: dict[str, list[str]] = {}
    for s in table[1:]:
        if s.startswith("node "):
            columns += s.split()[1:]
        for label in TABLE_COUNTS:
            if s.startswith(label + " ") or s.startswith("  " + label + " "):
                counts.setdefault(label, []).extend(s[len(s) - len(s.lstrip()):].split()[
                    len(label.split()):])
    want = [str(k) for k in range(nodes)] + (["total"] if nodes > 1 else [])
    assert columns == want, stderr
    rows = [*data["nodes"], data["totals"]][:len(want)]
    for label, key in TABLE_COUNTS.items():
        assert [int(v) for v in counts[label]] == [r[key] for r in rows], (label, stderr)


# ---------------------------------------------------------------- the lists of names


def registry_idents() -> list[str]:
    """The balancers of runtime/lb/registry.c, one X(ident) line each."""
    src = (ROOT / "runtime" / "lb" / "registry.c").read_text()
    table = src[src.index("#define ETC_LB_REGISTRY(X)"):src.index("#define DECLARE")]
    return re.findall(r"\bX\((\w+)\)", table)


def test_toolchain_list_is_the_registry(build: Builder) -> None:
    idents = registry_idents()
    assert len(idents) == len(set(idents))
    # the registry compiled into the runtime, by name, in the registry's order
    env = {**os.environ, "ETC_LB": "no-such-balancer", "ETC_NODES": "1"}
    proc = subprocess.run([str(build("lb_fib.tc"))], capture_output=True, text=True,
                          env=env, timeout=30, check=False)
    assert proc.returncode != 0
    m = re.search(r"etc: error: unknown load balancer 'no-such-balancer'; valid ones: (.*)",
                  proc.stderr)
    assert m, proc.stderr
    names = m.group(1).split()
    assert [n.replace("-", "_") for n in names] == idents
    assert sorted(names) == sorted(BALANCERS)


def test_unknown_balancer_is_an_error(build: Builder) -> None:
    prog = build("lb_fib.tc")
    proc = run(prog, "10", nodes=2, env={**os.environ, "ETC_LB": "bogus"})
    assert proc.returncode != 0
    assert "etc: error: unknown load balancer 'bogus'; valid ones: " in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = etcrun("-n", "2", "--lb", "bogus", str(prog), "10")
    assert proc.returncode == 2
    assert "etcrun: error: unknown load balancer 'bogus' (valid: " in proc.stderr
    for name in BALANCERS:
        assert name in proc.stderr
    proc = etcc("-lb", "bogus", str(ROOT / "tests" / "e2e" / "programs" / "lb_fib.tc"), "-o",
                os.devnull)
    assert proc.returncode != 0
    assert "etcc: error: unknown load balancer 'bogus'" in proc.stderr


# ---------------------------------------------------------------- results and profiles


@pytest.mark.parametrize("lb", BALANCERS)
def test_right_results_without_prof(build: Builder, lb: str) -> None:
    for src, args, (stdout, _, _) in PROGRAMS:
        proc = etcrun("-n", str(NODES), "--lb", lb, str(build(src)), *args, timeout=60)
        assert proc.returncode == 0, f"{src}: {proc.stderr}"
        assert proc.stdout == stdout, src
        assert "etc profile" not in proc.stderr


@pytest.mark.parametrize("lb", BALANCERS)
def test_right_results_and_profile_with_prof(build: Builder, lb: str,
                                             tmp_path: Path) -> None:
    for src, args, (stdout, tokens, threads) in PROGRAMS:
        proc, data = run_prof(build(src, "-prof"), args, tmp_path, NODES, lb)
        assert proc.stdout == stdout, src
        check_profile(data, NODES, lb, tokens, threads)
        check_table(proc.stderr, data, NODES, lb)


@pytest.mark.parametrize("lb", BALANCERS)
def test_what_each_policy_does(build: Builder, lb: str, tmp_path: Path) -> None:
    # about 0.1 s of work in 1024 tokens, all made on node 0 at first
    args = ["5", "4", "1", "60000"]
    stdout, tokens, threads = knary_expect(5, 4, 1, 60000)
    proc, data = run_prof(build("lb_knary.tc", "-prof"), args, tmp_path, NODES, lb)
    assert proc.stdout == stdout
    rows = check_profile(data, NODES, lb, tokens, threads)
    sent = [r["tokens_sent"] for r in rows]
    used = [r["tokens_consumed"] for r in rows]
    requests = sum(r["requests_sent"] for r in rows)
    if lb == "nop":
        assert sent == [0] * NODES and requests == 0
        assert used == [tokens, 0, 0, 0]
        return
    # every other balancer moves work to another node
    assert sum(sent) > 0, rows
    assert sum(1 for u in used if u > 0) >= 2, rows
    if lb == "minima":
        # one token from each node to its successor, the last node passes none on;
        # each node runs at least one token, and no balancing beyond that
        assert sent == [1] * (NODES - 1) + [0], rows
        assert all(u > 0 for u in used), rows
        assert requests == 0, rows
        # the one token a node receives reaches it idle (no extra token) and is the
        # only one it runs that it did not make itself
        assert [r["extra_tokens"] for r in rows] == [0] * NODES, rows
        assert [r["tokens_consumed"] - r["tokens_consumed_local"] for r in rows] == \
            [0] + [1] * (NODES - 1), rows
    if lb in SENDERS_ONLY:
        assert requests == 0, rows
    if lb in RECEIVERS:
        assert requests > 0, rows
    if lb in ANSWER_ONLY:
        for r in rows:
            assert r["tokens_sent"] <= r["requests_received"], rows


@pytest.mark.parametrize("lb", BALANCERS)
def test_one_and_twelve_nodes(build: Builder, lb: str, tmp_path: Path) -> None:
    # one node: no balancing at all; twelve: d = 2 load probes for the rand family
    stdout, tokens, threads = fib_expect(19)
    prog = build("lb_fib.tc", "-prof")
    for n in (1, 12):
        proc, data = run_prof(prog, ["19"], tmp_path, n, lb, timeout=120)
        assert proc.stdout == stdout
        rows = check_profile(data, n, lb, tokens, threads)
        if n == 1:
            assert rows[0]["tokens_sent"] == rows[0]["requests_sent"] == 0


def backoff_max() -> float:
    m = re.search(r"#define ETC_LB_BACKOFF_MAX ([0-9.e-]+)",
                  (ROOT / "runtime" / "lb" / "lb.h").read_text())
    assert m
    return float(m.group(1))


@pytest.mark.parametrize("lb", BALANCERS)
def test_idle_nodes_back_off(build: Builder, lb: str, tmp_path: Path) -> None:
    # node 0 computes alone for `seconds`, polling all the while, so every request
    # is answered at once: an idle node that asked again at once would send
    # thousands; backing off (doubling up to ETC_LB_BACKOFF_MAX) it sends a few
    # dozen, plus the requests of the others it passes on
    seconds, n = 0.1, 2
    proc, data = run_prof(build("lb_idle.tc", "-prof"), [str(seconds)], tmp_path, n, lb)
    assert proc.stdout == "idle: ok\n"
    rows = check_profile(data, n, lb, 0, 1)
    limit = n * (seconds / backoff_max() + 20)
    for r in rows:
        assert r["requests_sent"] <= limit, rows
    if lb in RECEIVERS:
        assert rows[1]["requests_sent"] > 0, rows


@pytest.mark.parametrize("lb", ["dual", "snd", "range", "rand"])
def test_checking_build(build: Builder, lb: str) -> None:
    for src, args, (stdout, _, _) in PROGRAMS:
        proc = etcrun("-n", str(NODES), "--lb", lb, str(build(src, "-g")), *args, timeout=60)
        assert proc.returncode == 0, f"{src}: {proc.stderr}"
        assert proc.stdout == stdout, src


# ---------------------------------------------------------------- choosing a balancer


def test_link_time_default_and_its_overrides(build: Builder, tmp_path: Path) -> None:
    args = ["15"]
    stdout, tokens, threads = fib_expect(15)
    plain = build("lb_fib.tc", "-prof")
    with_rand = build("lb_fib.tc", "-prof", "-lb", "rand")
    env = {k: v for k, v in os.environ.items() if k != "ETC_LB"}
    cases = [
        (plain, 2, {}, None, "spn"),             # the default on several nodes
        (plain, 1, {}, None, "nop"),             # and on one
        (with_rand, 2, {}, None, "rand"),        # etcc -lb
        (with_rand, 1, {}, None, "rand"),
        (with_rand, 2, {"ETC_LB": "his"}, None, "his"),          # ETC_LB wins over -lb
        (with_rand, 2, {"ETC_LB": "his"}, "snd", "snd"),         # etcrun --lb wins
    ]
    for prog, n, extra, lb, expect in cases:
        proc, data = run_prof(prog, args, tmp_path, n, lb, env={**env, **extra})
        assert proc.stdout == stdout
        check_profile(data, n, expect, tokens, threads)


def test_seq_target_takes_any_balancer(build: Builder, tmp_path: Path) -> None:
    stdout, tokens, threads = fib_expect(15)
    prog = build("lb_fib.tc", "-prof", "-lb", "rand", target="seq")
    proc, data = run_prof(prog, ["15"], tmp_path, 1, None)
    assert proc.stdout == stdout
    check_profile(data, 1, "rand", tokens, threads)
    proc, data = run_prof(build("lb_fib.tc", "-prof", target="seq"), ["15"], tmp_path, 1, None)
    check_profile(data, 1, "nop", tokens, threads)


# ---------------------------------------------------------------- without -prof


def test_without_prof_no_profile_and_a_warning(build: Builder, tmp_path: Path) -> None:
    out = tmp_path / "none.json"
    proc = run(build("lb_fib.tc"), "15", nodes=2,
               env={**os.environ, "ETC_PROF_OUT": str(out)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == fib_expect(15)[0]
    assert "etc profile" not in proc.stderr
    assert "etc: warning: ETC_PROF_OUT is set but this program was built without -prof" \
        in proc.stderr
    assert not out.exists()


def test_unwritable_profile_is_an_error(build: Builder, tmp_path: Path) -> None:
    out = tmp_path / "no-such-dir" / "p.json"
    proc = run(build("lb_fib.tc", "-prof"), "15", nodes=2,
               env={**os.environ, "ETC_PROF_OUT": str(out)})
    assert proc.returncode != 0
    assert f"etc: error: node 0: cannot write the profile to '{out}'" in proc.stderr


def preprocessed(path: Path, *defines: str) -> str:
    cc = os.environ.get("CC", "cc")
    proc = subprocess.run([cc, "-E", "-P", "-std=c11", "-D_GNU_SOURCE", *defines,
                           "-I", str(ROOT / "runtime"), "-I", str(ROOT / "runtime" / "include"),
                           str(path)], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_counters_compile_out_without_prof() -> None:
    # the balancers and the core's balancer services touch the counters only
    # through ETC_PROF_ADD: without -DETC_PROF nothing of them is left
    files = [ROOT / "runtime" / "core" / "balance.c",
             *sorted((ROOT / "runtime" / "lb").glob("*.c"))]
    for path in files:
        assert ".prof." not in preprocessed(path), path
    assert "etc_rts.prof.tokens_sent" in \
        preprocessed(ROOT / "runtime" / "core" / "balance.c", "-DETC_PROF").replace(" ", "")
