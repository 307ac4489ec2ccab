"""The tracing build (etcc -trace), etcrun --trace and etctrace (docs/tracing.md): every
sample's trace is valid on seq, 1, 2 and 4 smp nodes and 2 tcp nodes; fib's work and span
in threads are exactly what its recursion gives, whatever the node count; plot and
tree write valid files; bad input is a one-line error."""

from __future__ import annotations

import json
import struct
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from etcpre import toolchain

from support import (
    BIN,
    CAUSAL,
    ROOT,
    SAMPLES,
    TARGETS,
    Builder,
    check_sample,
    etcc,
    etcrun,
    require,
)

NAMES = sorted(p.stem for p in SAMPLES.glob("*.tc"))
# every target of the table on two nodes (within its limit), smp, the cheapest, also on
# one and four
RUNS = [(t.name, min(t.max_nodes, 2)) for t in TARGETS] + [("smp", 1), ("smp", 4)]


def etctrace(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "etctrace"), *args], capture_output=True, text=True,
                          timeout=300, check=False, cwd=ROOT)


def traced(prog: Path, out: Path, n: int, *args: str,
           extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    proc = etcrun("--trace", str(out), *extra, "-n", str(n), str(prog), *args, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.is_file(), proc.stderr
    return proc


def summary(path: Path) -> dict:
    proc = etctrace("summary", "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def fibonacci(k: int) -> int:
    a, b = 0, 1
    for _ in range(k):
        a, b = b, a + b
    return a


def fib_work_span(n: int) -> tuple[int, int]:
    """samples/fib.tc: fib(k) runs thread 0 alone for k < 2, else thread 0, the two
    subtrees and thread 1, so T(k) = T(k-1) + T(k-2) + 2, T(0) = T(1) = 1: T(k) + 2
    is Fibonacci-like from 3, 3, so T(k) = 3 F(k+1) - 2. MAIN adds its threads 0 and
    1: work 3 F(n+1). The longest chain: thread 0 of fib(k), the chain of fib(k-1)
    (the longer child), thread 1: D(k) = D(k-1) + 2, D(1) = 1, so D(k) = 2k - 1;
    with MAIN's two threads, span 2n + 1."""
    def threads(k: int) -> int:
        return 1 if k < 2 else threads(k - 1) + threads(k - 2) + 2

    def depth(k: int) -> int:
        return 1 if k < 2 else 2 + max(depth(k - 1), depth(k - 2))

    work, span = 3 * fibonacci(n + 1), 2 * n + 1
    assert (work, span) == (threads(n) + 2, depth(n) + 2)  # the closed form, by counting
    return work, span


@pytest.mark.parametrize(("target", "n"), RUNS, ids=[f"{t}-{n}" for t, n in RUNS])
@pytest.mark.parametrize("name", NAMES)
def test_every_sample_traces_valid(build: Builder, tmp_path: Path, name: str, target: str,
                                   n: int) -> None:
    prog = build(f"{name}.tc", "-trace", target=target)
    out = tmp_path / f"{name}.json"
    proc = traced(prog, out, n)
    check_sample(name, n, proc.stdout, causal=target in CAUSAL)
    check = etctrace("check", str(out))
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"{n} node(s)" in check.stdout
    data = json.loads(out.read_text())
    names = {e["args"]["name"] for e in data["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    assert names == {f"node {k}" for k in range(n)}
    slices = [e for e in data["traceEvents"] if e["ph"] == "X" and e["cat"] == "thread"]
    assert slices and all(e["name"] == f"{e['args']['function']}.{e['args']['thread']}"
                          or ".C" in e["name"] for e in slices)
    assert all(e["args"]["line"] > 0 and e["args"]["node"] == e["pid"] for e in slices)
    assert any(e["name"] == "MAIN.0" for e in slices)


@pytest.mark.parametrize(("target", "n"), RUNS, ids=[f"{t}-{n}" for t, n in RUNS])
@pytest.mark.parametrize("k", [1, 9, 16])
def test_fib_work_and_span_in_threads_are_exact(build: Builder, tmp_path: Path, target: str,
                                               n: int, k: int) -> None:
    prog = build("fib.tc", "-trace", target=target)
    out = tmp_path / "fib.json"
    traced(prog, out, n, str(k))
    s = summary(out)
    assert (s["work_threads"], s["span_threads"]) == fib_work_span(k)
    assert s["nodes"] == n and not s["truncated"] and s["missing_deps"] == 0
    assert 0 < s["span_s"] <= s["work_s"] and s["parallelism"] >= 1
    assert s["burdened_span_s"] >= s["span_s"]
    assert [b["processors"] for b in s["bounds"]] == [1, 2, 4, 8, 16, 32, 64]
    for b in s["bounds"]:
        assert b["greedy_s"] == pytest.approx(s["work_s"] / b["processors"] + s["span_s"])


def test_a_token_the_balancer_moves_is_a_flow_across_nodes(build: Builder,
                                                          tmp_path: Path) -> None:
    # minima passes one token along the ring first: the second node always gets work
    prog = build("fib.tc", "-trace", target="smp")
    out = tmp_path / "fib.json"
    traced(prog, out, 2, "12", extra=("--lb", "minima"))
    events = json.loads(out.read_text())["traceEvents"]
    starts = [e for e in events if e["ph"] == "s" and e["cat"] == "token"]
    ends = [e for e in events if e["ph"] == "f" and e["cat"] == "token"]
    assert starts and len(starts) == len(ends)
    assert all(s["pid"] != f["pid"] for s, f in zip(starts, ends, strict=True))
    threads = [e for e in events if e["ph"] == "X" and e["cat"] == "thread"]
    assert {e["pid"] for e in threads} == {0, 1}
    s = summary(out)
    assert s["cross_node_edges"] > 0
    assert (s["work_threads"], s["span_threads"]) == fib_work_span(12)
    # an enable flow between nodes: from the thread that fed the event to the thread
    flows = {}
    for e in events:
        if e.get("cat") == "enable":
            flows.setdefault(e["id"], {})[e["ph"]] = e["pid"]
    assert any(f["s"] != f["f"] for f in flows.values())


def test_the_trace_limit_cuts_the_trace_and_says_so(build: Builder, tmp_path: Path) -> None:
    prog = build("fib.tc", "-trace", target="smp")
    out = tmp_path / "fib.json"
    proc = traced(prog, out, 2, "14", extra=("--trace-limit", "300"))
    assert "etcrun: warning: the trace was cut" in proc.stderr
    data = json.loads(out.read_text())
    assert data["otherData"]["truncated"]
    assert len([e for e in data["traceEvents"] if e["ph"] != "M"]) <= 300
    assert etctrace("check", str(out)).returncode == 0
    s = etctrace("summary", str(out))
    assert s.returncode == 0 and "cut by --trace-limit" in s.stderr


def test_plot_writes_a_png(build: Builder, tmp_path: Path) -> None:
    prog = build("fib.tc", "-trace", target="smp")
    files = []
    for n in (1, 2):
        files.append(tmp_path / f"fib{n}.json")
        traced(prog, files[-1], n, "14")
    png = tmp_path / "speedup.png"
    proc = etctrace("plot", *map(str, files), "-o", str(png))
    assert proc.returncode == 0, proc.stderr
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width > 100 and height > 100


def test_tree_writes_dot_and_svg_with_the_critical_path(build: Builder,
                                                        tmp_path: Path) -> None:
    prog = build("fib.tc", "-trace", target="smp")
    trace = tmp_path / "fib.json"
    traced(prog, trace, 2, "6")
    dot = tmp_path / "tree.dot"
    assert etctrace("tree", str(trace), "-o", str(dot)).returncode == 0
    text = dot.read_text()
    assert text.startswith("digraph activations {")
    # one activation per call: fib(6) makes 2 F(7) - 1 = 25, and MAIN
    assert text.count('label="fib\\nnode') == 25 and text.count('label="MAIN\\nnode 0"') == 1
    assert "color=red, penwidth=3" in text
    canon = subprocess.run(["dot", "-Tcanon", str(dot)], capture_output=True, text=True,
                           check=False)
    assert canon.returncode == 0, canon.stderr
    svg = tmp_path / "tree.svg"
    proc = etctrace("tree", str(trace), "-o", str(svg))
    assert proc.returncode == 0, proc.stderr
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")


def test_a_big_tree_is_drawn_to_a_depth_limit(build: Builder, tmp_path: Path) -> None:
    prog = build("fib.tc", "-trace", target="smp")
    trace = tmp_path / "fib.json"
    traced(prog, trace, 1, "16")  # 2 F(17) - 1 = 3,193 fib activations
    dot = tmp_path / "tree.dot"
    assert etctrace("tree", str(trace), "-o", str(dot), "--max", "500").returncode == 0
    text = dot.read_text()
    assert "over 500: drawn to depth" in text
    assert text.count("[label=") - text.count("legend") <= 500


def write_events(path: Path, events: list[dict]) -> Path:
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_check_finds_what_is_wrong(tmp_path: Path) -> None:
    def slice_(ts: float, dur: float, tid: int = 0) -> dict:
        return {"ph": "X", "name": "t", "pid": 0, "tid": tid, "ts": ts, "dur": dur}

    good = write_events(tmp_path / "good.json", [
        slice_(0, 10), slice_(2, 3),
        {"ph": "s", "id": 1, "cat": "enable", "pid": 0, "tid": 0, "ts": 9}, slice_(20, 5),
        {"ph": "f", "id": 1, "cat": "enable", "bp": "e", "pid": 0, "tid": 0, "ts": 20}])
    assert etctrace("check", str(good)).returncode == 0
    cases = {
        "overlap": ([slice_(0, 10), slice_(5, 10)], "slices overlap"),
        "half flow": ([slice_(0, 10), {"ph": "s", "id": 1, "cat": "c", "pid": 0, "tid": 0,
                                       "ts": 1}], "not one of each"),
        "back in time": ([slice_(5, 1), slice_(1, 1)], "time goes back"),
        "flow outside": ([slice_(0, 1), {"ph": "s", "id": 1, "cat": "c", "pid": 0, "tid": 0,
                                         "ts": 1}, slice_(3, 1),
                          {"ph": "f", "id": 1, "cat": "c", "pid": 0, "tid": 0, "ts": 2}],
                         "in no slice"),
    }
    for name, (events, says) in cases.items():
        bad = write_events(tmp_path / f"{name}.json", events)
        proc = etctrace("check", str(bad))
        assert proc.returncode == 1, name
        assert says in proc.stdout, (name, proc.stdout)
        assert f"etctrace: error: {bad} is not a valid trace" in proc.stderr


def test_bad_input_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    not_json = tmp_path / "x.json"
    not_json.write_text("{")
    no_events = write_events(tmp_path / "none.json", [])
    cycle = write_events(tmp_path / "cycle.json", [
        {"ph": "X", "cat": "thread", "name": "f.0", "pid": 0, "tid": 0, "ts": 0, "dur": 1,
         "args": {"id": "0:1", "deps": ["0:2"]}},
        {"ph": "X", "cat": "thread", "name": "f.1", "pid": 0, "tid": 0, "ts": 2, "dur": 1,
         "args": {"id": "0:2", "deps": ["0:1"]}}])
    runs = [
        (["summary", str(tmp_path / "missing.json")], "no such file"),
        (["summary", str(not_json)], "not a JSON trace file"),
        (["summary", str(no_events)], "no thread runs"),
        (["summary", str(cycle)], "cycle"),
        (["check", str(tmp_path)], "is a directory"),
        (["tree", str(cycle), "-o", str(tmp_path / "t.png")], "as .svg or .dot"),
        (["plot", str(no_events), "-o", str(tmp_path / "p.png")], "no thread runs"),
        (["summary", "--burden", "-1", str(no_events)], "not a number of seconds"),
        (["frobnicate"], "invalid choice"),
    ]
    for args, says in runs:
        proc = etctrace(*args)
        assert proc.returncode != 0, args
        assert proc.stderr.startswith("etctrace: error:") and says in proc.stderr, \
            (args, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_drivers_refuse_what_cannot_trace(build: Builder, tmp_path: Path) -> None:
    plain = build("hello.tc", target="smp")
    proc = etcrun("--trace", str(tmp_path / "t.json"), "-n", "1", str(plain))
    assert proc.returncode == 2 and "was not built with -trace" in proc.stderr
    proc = etcrun("--trace-limit", "10", "-n", "1", str(plain))
    assert proc.returncode == 2 and "--trace-limit needs --trace" in proc.stderr
    proc = etcc("-trace", "-g", str(SAMPLES / "hello.tc"), "-o", str(tmp_path / "h"))
    assert proc.returncode != 0 and "-trace cannot be combined with -g" in proc.stderr


@pytest.mark.parametrize("target", list(toolchain.TARGETS.values()),
                         ids=list(toolchain.TARGETS))
def test_the_normal_build_has_no_tracing(target: toolchain.Target) -> None:
    require(target)
    lib = toolchain.home() / "build" / "runtime" / "lib" / f"libetc_{target.name}.a"
    symbols = subprocess.run(["nm", "-g", str(lib)], capture_output=True, text=True,
                             check=True).stdout
    assert "etc_trace_" not in symbols
    traced_lib = str(lib).replace(".a", "_trace.a")
    tracing = subprocess.run(["nm", "-g", traced_lib], capture_output=True, text=True,
                             check=True).stdout
    assert "T etc_trace_run" in tracing and "etc_abi_trace" in tracing


def test_nodes_on_another_host_are_moved_onto_node_0s_clock(tmp_path: Path) -> None:
    # the files two nodes on two hosts would write: node 1's clock is 5 ms ahead of
    # node 0's (as node 0 measured it at the end); each node ran one thread, node 1's
    # 1 us after node 0's in real time
    from etcpre.trace import records as R
    from etcpre.trace.merge import merge

    def node(k: int, host: str, t: int, extra: dict) -> None:
        recs = [R.RECORD.pack(R.CLOCK, 0, 1000, t, 0, 0, 0, 0),
                R.RECORD.pack(R.RUN, 0, 1100, 1200, (k + 1) << 40 | 1, 0, 4096, 0),
                R.RECORD.pack(R.CLOCK, 0, 2000, t + 1000, 0, 0, 0, 0)]
        (tmp_path / f"node-{k}.bin").write_bytes(b"".join(recs))
        meta = {"record_size": R.RECORD.size, "nodes": 2, "start_ns": t, "end_ns": t + 1000,
                "host": host, "functions": [{"name": "f", "file": "f.tc", "line": 1,
                                             "threads": [{"ip": 4096, "number": 0,
                                                          "line": 1}]}], **extra}
        (tmp_path / f"node-{k}.json").write_text(json.dumps(meta))

    node(0, "a", 10_000_000, {"clock_offsets_ns": [0, 5_001_000],
                              "clock_rtts_ns": [0, 2000]})
    node(1, "b", 15_002_000, {})
    out = tmp_path / "t.json"
    merge(tmp_path, 2, out)
    data = json.loads(out.read_text())
    runs = {e["pid"]: e["ts"] for e in data["traceEvents"] if e.get("cat") == "thread"}
    assert runs == {0: 0.1, 1: 1.1}
    assert "node 1 by 5001.0 us (+-1.0)" in data["otherData"]["clock"]
    # on one host nothing moves
    node(1, "a", 10_001_000, {})
    merge(tmp_path, 2, out)
    data = json.loads(out.read_text())
    assert data["otherData"]["clock"] == "CLOCK_MONOTONIC of one host"


def test_a_crashed_run_still_writes_what_it_recorded(build: Builder, tmp_path: Path) -> None:
    prog = build("crash.tc", "-trace", target="smp")
    out = tmp_path / "crash.json"
    proc = etcrun("--trace", str(out), "-n", "2", str(prog), timeout=120)
    assert proc.returncode != 0 and "segmentation fault" in proc.stderr
    assert "etcrun: warning: the trace lacks the last records" in proc.stderr
    assert json.loads(out.read_text())["otherData"]["unfinished_nodes"]
    assert etctrace("check", str(out)).returncode == 0


@pytest.mark.parametrize("name", ["vadd", "loop", "call", "getloop", "hello"])
def test_work_and_span_do_not_depend_on_the_nodes(build: Builder, tmp_path: Path,
                                                  name: str) -> None:
    counts = {}
    for target, n in RUNS:
        out = tmp_path / f"{target}-{n}.json"
        traced(build(f"{name}.tc", "-trace", target=target), out, n)
        s = summary(out)
        counts[(target, n)] = (s["work_threads"], s["span_threads"])
    if name == "hello":  # MAIN's two threads and a greeting on each node
        assert counts == {run: (run[1] + 2, 3) for run in RUNS}
    else:
        assert len(set(counts.values())) == 1, counts
        work, span = counts[RUNS[0]]
        assert 1 < span <= work
