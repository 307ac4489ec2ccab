"""etcrun --trace: the nodes' records (records.py) merged into one Chrome Trace Event file
(docs/tracing.md has the format). Tracks: per node (pid) `threads` (tid 1), `network`
(2), `idle` (3), `balancer` (4); flows from the thread that enabled a thread to it, and
from a token's sender to its receiver."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from etcpre.trace import DEFAULT_LIMIT
from etcpre.trace import records as R
from etcpre.trace.records import NodeFiles, ThreadName, thread_id

THREADS, NETWORK, IDLE, BALANCER = 1, 2, 3, 4  # tids (0 is special to Perfetto)
TRACKS = {THREADS: "threads", NETWORK: "network", IDLE: "idle", BALANCER: "balancer"}
MESSAGES = {1: "SYNC", 2: "INCR", 3: "SPAWN", 4: "DATA", 5: "GET", 6: "PUT", 7: "BLKGET",
            8: "INVOKE", 9: "TOKEN"}
BALANCER_WHAT = {0: "balancer (idle)", 1: "balancer (boundary)", 2: "balancer message"}
CAUSE = 1 << 63  # runtime/include/etc.h ETC_TRACE_CAUSE
TOKEN_FLOWS = 1 << 40  # token flows' ids start here, above the enable flows'

Event = dict[str, Any]


@dataclass
class MergeResult:
    events: int
    truncated: bool
    note: str  # why and where the trace was cut, or ""
    unfinished: list[int]  # nodes that did not end normally


@dataclass
class _Run:
    node: int
    t0: int
    t1: int
    raw: int
    eid: int
    ip: int
    frame: int


def _us(ns: int, base: int) -> float:
    return round((ns - base) / 1000.0, 3)


def _metadata(nodes: int) -> list[Event]:
    out: list[Event] = []
    for k in range(nodes):
        out.append({"ph": "M", "name": "process_name", "pid": k, "tid": THREADS,
                    "args": {"name": f"node {k}"}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": k, "tid": THREADS,
                    "args": {"sort_index": k}})
        for tid, name in TRACKS.items():
            out.append({"ph": "M", "name": "thread_name", "pid": k, "tid": tid,
                        "args": {"name": name}})
            out.append({"ph": "M", "name": "thread_sort_index", "pid": k, "tid": tid,
                        "args": {"sort_index": tid}})
    return out


def _thread_events(runs: list[_Run], edges: dict[int, list[int]],
                   names: dict[int, ThreadName], base: int) -> list[Event]:
    by_raw = {r.raw: r for r in runs}
    activation: dict[tuple[int, int], str] = {}
    out: list[Event] = []
    flow = 0
    for r in sorted(runs, key=lambda r: (r.node, r.t0)):
        name = names.get(r.ip)
        label = name.label if name else f"thread@{r.ip:#x}"
        rid = thread_id(r.raw)
        if name is None or name.number == 0:
            act = rid
            activation[(r.node, r.frame)] = act
        else:
            act = activation.get((r.node, r.frame), "?")
        if r.eid & CAUSE:  # started by one thread (INVOKE, TOKEN, CALL, SPAWN, RETURN)
            deps = [r.eid ^ CAUSE] if r.eid ^ CAUSE else []
        else:  # a slot's firing: every thread that signalled it
            deps = list(dict.fromkeys(edges.get(r.eid, [])))
        args: dict[str, Any] = {"id": rid, "activation": act, "frame": f"{r.frame:#x}",
                                "node": r.node, "deps": [thread_id(d) for d in deps]}
        if name is not None:
            args |= {"function": name.function, "thread": name.number, "file": name.file,
                     "line": name.line}
        ts = _us(r.t0, base)
        out.append({"ph": "X", "name": label, "cat": "thread", "pid": r.node,
                    "tid": THREADS, "ts": ts, "dur": round((r.t1 - r.t0) / 1000.0, 3),
                    "args": args})
        src = by_raw.get(deps[-1]) if deps else None
        if src is not None:
            flow += 1
            # the arrow leaves its source just before the source ends (inside it, and
            # after any thread it CALLed) and enters the thread it enabled at its start
            at = src.t1 - 1 if src.t1 - src.t0 >= 2 else src.t0
            out.append({"ph": "s", "name": "enable", "cat": "enable", "id": flow,
                        "pid": src.node, "tid": THREADS, "ts": _us(at, base)})
            out.append({"ph": "f", "bp": "e", "name": "enable", "cat": "enable", "id": flow,
                        "pid": r.node, "tid": THREADS, "ts": ts})
    return out


def _node_events(f: NodeFiles, base: int) -> list[Event]:
    out: list[Event] = []
    k = f.node
    for kind, aux, t0, t1, a, b, _c, _d in f.records:
        if kind == R.IDLE:
            out.append({"ph": "X", "name": "idle (a token ended it)" if aux else "idle",
                        "cat": "idle", "pid": k, "tid": IDLE, "ts": _us(t0, base),
                        "dur": round((t1 - t0) / 1000.0, 3), "args": {"node": k}})
        elif kind == R.LB:
            name = BALANCER_WHAT.get(aux, "balancer")
            out.append({"ph": "X", "name": name, "cat": "balancer", "pid": k,
                        "tid": BALANCER, "ts": _us(t0, base), "dur": round((t1 - t0) / 1000.0, 3),
                        "args": {"node": k}})
        elif kind == R.MSG:
            what = MESSAGES.get(aux, "balancer" if aux >= 32 else f"type {aux}")
            out.append({"ph": "X", "name": f"{what} from node {a}", "cat": "message",
                        "pid": k, "tid": NETWORK, "ts": _us(t0, base),
                        "dur": round((t1 - t0) / 1000.0, 3),
                        "args": {"node": k, "type": aux, "from": a}})
        elif kind == R.COUNT:
            out.append({"ph": "C", "name": "queues", "pid": k, "tid": THREADS,
                        "ts": _us(t0, base), "args": {"ready queue": a, "token deque": b}})
    return out


def _token(value: int) -> str:
    """A token as the trace names it: the thread whose TOKEN made it."""
    return thread_id(value & ~CAUSE) if value & ~CAUSE else "none"


def _token_events(files: list[NodeFiles], base: int) -> list[Event]:
    """A slice per hop on each side, and a flow between them: the n-th send of a token
    from node A to B pairs with the n-th receipt of it at B from A."""
    out: list[Event] = []
    pending: dict[tuple[int, int, int], list[int]] = {}
    for f in files:
        for kind, aux, t0, _t1, a, _b, _c, _d in f.records:
            if kind == R.TOKSEND:
                pending.setdefault((a, f.node, aux), []).append(t0)
    flow = TOKEN_FLOWS
    for f in files:
        for kind, aux, t0, _t1, a, _b, _c, _d in f.records:
            if kind != R.TOKRECV:
                continue
            out.append({"ph": "X", "name": f"token from node {aux}", "cat": "balancer",
                        "pid": f.node, "tid": BALANCER, "ts": _us(t0, base), "dur": 0,
                        "args": {"node": f.node, "token": _token(a), "from": aux}})
            sends = pending.get((a, aux, f.node))
            if not sends:
                continue
            sent = sends.pop(0)
            flow += 1
            fid = flow
            out.append({"ph": "X", "name": f"token to node {f.node}", "cat": "balancer",
                        "pid": aux, "tid": BALANCER, "ts": _us(sent, base), "dur": 0,
                        "args": {"node": aux, "token": _token(a), "to": f.node}})
            out.append({"ph": "s", "name": "token", "cat": "token", "id": fid, "pid": aux,
                        "tid": BALANCER, "ts": _us(sent, base)})
            out.append({"ph": "f", "bp": "e", "name": "token", "cat": "token", "id": fid,
                        "pid": f.node, "tid": BALANCER, "ts": _us(t0, base)})
    # a send whose receipt is not in the trace (cut, or the run ended) is still a slice
    for (a, src, dest), sends in pending.items():
        for sent in sends:
            out.append({"ph": "X", "name": f"token to node {dest}", "cat": "balancer",
                        "pid": src, "tid": BALANCER, "ts": _us(sent, base), "dur": 0,
                        "args": {"node": src, "token": _token(a), "to": dest}})
    return out


def _cut(events: list[Event], limit: int, node_ends: list[float]) -> tuple[list[Event], float]:
    """Events before a time such that at most `limit` remain (and before the time any
    node stopped recording), without half flows. Returns them and the time (inf: none)."""
    cutoff = min(node_ends, default=float("inf"))
    if len(events) > limit:
        cutoff = min(cutoff, sorted(e["ts"] for e in events)[limit])
    if cutoff == float("inf"):
        return events, cutoff
    kept = [e for e in events if e["ts"] < cutoff]  # a slice is kept whole
    ends: dict[tuple[str, Any], int] = {}
    for e in kept:
        if e["ph"] in "sf":
            ends[(e["cat"], e["id"])] = ends.get((e["cat"], e["id"]), 0) + 1
    kept = [e for e in kept if e["ph"] not in "sf" or ends[(e["cat"], e["id"])] == 2]
    return kept, cutoff


def merge(directory: Path, nodes: int, out: Path, limit: int = DEFAULT_LIMIT,
          program: str = "") -> MergeResult:
    """Writes the Chrome Trace Event file `out` from the nodes' files in `directory`."""
    files, clock = R.read_all(directory, nodes)
    if not files:
        raise R.TraceFilesError("no node wrote a trace (did the program start?)")
    names: dict[int, ThreadName] = {}
    for f in files:
        names |= f.threads
    base = min(f.start_ns for f in files)
    runs: list[_Run] = []
    edges: dict[int, list[int]] = {}
    for f in files:
        for kind, _aux, t0, t1, a, b, c, d in f.records:
            if kind == R.RUN:
                runs.append(_Run(f.node, t0, t1, a, b, c, d))
            elif kind == R.EDGE:
                edges.setdefault(a, []).append(b)
    events = _thread_events(runs, edges, names, base)
    for f in files:
        events += _node_events(f, base)
    events += _token_events(files, base)
    # a node that dropped records covers the run only up to its last one
    node_ends = [_us(max((r[3] or r[2]) for r in f.records), base)
                 for f in files if f.dropped and f.records]
    total = len(events)
    events, cutoff = _cut(events, limit, node_ends)
    events.sort(key=lambda e: e["ts"])
    elapsed = (max(f.end_ns for f in files) - base) / 1e9
    truncated = cutoff != float("inf")
    note = ""
    if truncated:
        note = (f"the trace was cut at {cutoff / 1000:.3f} ms of {elapsed * 1000:.3f} ms: "
                f"{total} events and at most {limit} kept (--trace-limit)")
    missing = sorted(set(range(nodes)) - {f.node for f in files if f.finished})
    other = {"program": program, "nodes": nodes, "elapsed_s": elapsed,
             "truncated": truncated, "note": note, "events_total": total,
             "unfinished_nodes": missing, "clock": clock,
             "format": "etc trace 1"}
    with out.open("w") as fh:
        fh.write('{"displayTimeUnit": "ms", "otherData": ')
        fh.write(json.dumps(other))
        fh.write(',\n"traceEvents": [\n')
        body = _metadata(nodes) + events
        encode = json.JSONEncoder(separators=(",", ":")).encode  # one encoder for all
        fh.write(",\n".join(map(encode, body)))
        fh.write("\n]}\n")
    return MergeResult(len(events), truncated, note, missing)
