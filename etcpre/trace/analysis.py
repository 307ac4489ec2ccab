"""Work, span and parallelism of a traced run (etctrace summary), as Cilkscale defines
them, over the graph of thread runs: a thread depends on every thread that fed the
event that enabled it (docs/tracing.md)."""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass, field

from etcpre.trace.model import Thread, Trace, TraceError

DEFAULT_BURDEN_S = 10e-6  # an edge between nodes: about one message's latency


@dataclass
class Bound:
    processors: int
    work_over_p_s: float
    span_s: float
    greedy_s: float  # work/P + span: what a greedy scheduler achieves at worst
    speedup_max: float  # work / max(work/P, span)
    speedup_greedy: float  # work / (work/P + span)


@dataclass
class Summary:
    work_threads: int
    span_threads: int
    parallelism_threads: float
    work_s: float
    span_s: float
    parallelism: float
    burdened_span_s: float
    burdened_parallelism: float
    burden_s: float
    cross_node_edges: int
    nodes: int
    elapsed_s: float
    truncated: bool
    missing_deps: int
    bounds: list[Bound] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _order(threads: list[Thread]) -> tuple[list[Thread], dict[str, list[Thread]], int]:
    """A topological order of the runs, their predecessors, and how many deps name a
    run the trace does not hold (a cut trace)."""
    by_id = {t.id: t for t in threads}
    preds: dict[str, list[Thread]] = {}
    succs: dict[str, list[str]] = {t.id: [] for t in threads}
    indegree = dict.fromkeys(by_id, 0)
    missing = 0
    for t in threads:
        ps = []
        for d in t.deps:
            p = by_id.get(d)
            if p is None:
                missing += 1
                continue
            ps.append(p)
            succs[d].append(t.id)
            indegree[t.id] += 1
        preds[t.id] = ps
    ready = deque(sorted((t for t in threads if indegree[t.id] == 0), key=lambda t: t.ts))
    order: list[Thread] = []
    while ready:
        t = ready.popleft()
        order.append(t)
        for s in succs[t.id]:
            indegree[s] -= 1
            if indegree[s] == 0:
                ready.append(by_id[s])
    if len(order) != len(threads):
        raise TraceError("the threads' dependences form a cycle: not a trace of a run")
    return order, preds, missing


def longest(trace: Trace, weight: str = "threads",
            burden_s: float = 0.0) -> tuple[float, list[Thread]]:
    """The longest chain of dependences and its length: in threads, or in seconds of
    the runs' own time (plus burden_s per edge between nodes)."""
    order, preds, _ = _order(trace.threads)
    burden = round(burden_s * 1e9)  # integers (ns or threads): sums are exact
    best: dict[str, int] = {}
    via: dict[str, Thread | None] = {}
    for t in order:
        w = 1 if weight == "threads" else t.self_ns
        top, arg = 0, None
        for p in preds[t.id]:
            v = best[p.id] + (burden if p.node != t.node else 0)
            if v > top or arg is None:
                top, arg = v, p
        best[t.id] = top + w
        via[t.id] = arg
    if not best:
        return 0.0, []
    end = max(order, key=lambda t: best[t.id])
    chain = [end]
    while (prev := via[chain[-1].id]) is not None:
        chain.append(prev)
    return best[end.id] / (1 if weight == "threads" else 1e9), chain[::-1]


def summarize(trace: Trace, burden_s: float = DEFAULT_BURDEN_S) -> Summary:
    order, preds, missing = _order(trace.threads)
    work_threads = len(order)
    span_threads, _ = longest(trace, "threads")
    work_s = sum(t.self_ns for t in order) / 1e9
    span_s, _ = longest(trace, "seconds")
    burdened, _ = longest(trace, "seconds", burden_s)
    cross = sum(1 for t in order for p in preds[t.id] if p.node != t.node)
    s = Summary(
        work_threads=work_threads, span_threads=int(span_threads),
        parallelism_threads=work_threads / span_threads if span_threads else 0.0,
        work_s=work_s, span_s=span_s, parallelism=work_s / span_s if span_s else 0.0,
        burdened_span_s=burdened,
        burdened_parallelism=work_s / burdened if burdened else 0.0,
        burden_s=burden_s, cross_node_edges=cross, nodes=trace.nodes,
        elapsed_s=trace.elapsed_s, truncated=trace.truncated, missing_deps=missing)
    p = 1
    while p <= 64:
        w = work_s / p
        s.bounds.append(Bound(p, w, span_s, w + span_s,
                              work_s / max(w, span_s) if work_s else 0.0,
                              work_s / (w + span_s) if work_s else 0.0))
        p *= 2
    return s


def csv_text(s: Summary) -> str:
    """Cilkscale's CSV (its columns), in seconds and in threads, then the bounds."""
    lines = ["tag,work (seconds),span (seconds),parallelism,burdened_span (seconds),"
             "burdened_parallelism",
             f"run,{s.work_s:.9f},{s.span_s:.9f},{s.parallelism:.6f},"
             f"{s.burdened_span_s:.9f},{s.burdened_parallelism:.6f}",
             "",
             "tag,work (threads),span (threads),parallelism",
             f"run,{s.work_threads},{s.span_threads},{s.parallelism_threads:.6f}",
             "",
             "processors,work/P (seconds),span (seconds),greedy bound work/P+span (seconds),"
             "speedup upper bound,speedup greedy bound"]
    for b in s.bounds:
        lines.append(f"{b.processors},{b.work_over_p_s:.9f},{b.span_s:.9f},{b.greedy_s:.9f},"
                     f"{b.speedup_max:.6f},{b.speedup_greedy:.6f}")
    return "\n".join(lines) + "\n"
