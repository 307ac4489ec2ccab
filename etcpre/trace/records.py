"""The per-node files a tracing build writes (runtime/core/trace.c): node-K.bin, fixed-size
records, and node-K.json, the node's counts and the program's threaded functions."""

from __future__ import annotations

import bisect
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

RECORD = struct.Struct("=IIQQQQQQ")  # kind, aux, t0, t1, a, b, c, d (56 bytes)

RUN, EDGE, IDLE, LB, TOKSEND, TOKRECV, COUNT, MSG, CLOCK = range(1, 10)
TIMED = {RUN, IDLE, LB, TOKSEND, TOKRECV, COUNT, MSG}  # t0 (and t1 if not 0) are ticks


class TraceFilesError(Exception):
    """The nodes' files cannot be read; the message is ready for the user."""


@dataclass(frozen=True)
class ThreadName:
    function: str
    number: int  # n of THREAD_n; -k for the continuation after the k-th CALL
    line: int
    file: str

    @property
    def label(self) -> str:
        return f"{self.function}.{self.number}" if self.number >= 0 else \
            f"{self.function}.C{-self.number}"


@dataclass
class NodeFiles:
    node: int
    nodes: int
    records: list[tuple[int, ...]]
    dropped: int
    limit: int
    start_ns: int
    end_ns: int
    finished: bool  # node-K.json was written: the node ended normally
    threads: dict[int, ThreadName] = field(default_factory=dict)
    host: str = ""
    # node 0's: each node's CLOCK_MONOTONIC less node 0's, and the round trip it was
    # measured in (runtime/core/trace.c clock_offsets), ns
    offsets: list[int] = field(default_factory=list)
    rtts: list[int] = field(default_factory=list)

    def shift(self, ns: int) -> None:
        """Moves every time of this node by -ns (onto node 0's clock)."""
        self.records = [(r[0], r[1], r[2] - ns, r[3] - ns if r[3] else 0, *r[4:])
                        if r[0] in TIMED else r for r in self.records]
        self.start_ns -= ns
        self.end_ns -= ns


def thread_id(raw: int) -> str:
    """A thread's or an event's id as the trace shows it: 'node:n'."""
    return f"{(raw >> 40) - 1}:{raw & ((1 << 40) - 1)}"


class _Clock:
    """Ticks to CLOCK_MONOTONIC nanoseconds: piecewise linear through the node's CLOCK
    records (each a tick count and the clock read together), so monotonic."""

    def __init__(self, points: list[tuple[int, int]]) -> None:
        pts = sorted(set(points))
        self.ticks = [p[0] for p in pts]
        self.ns = [p[1] for p in pts]

    def __call__(self, t: int) -> int:
        n = len(self.ticks)
        if n == 0:
            return t
        if n == 1:
            return self.ns[0] + (t - self.ticks[0])  # one point: ticks taken as ns
        i = min(max(bisect.bisect_right(self.ticks, t), 1), n - 1)
        t0, t1, n0, n1 = self.ticks[i - 1], self.ticks[i], self.ns[i - 1], self.ns[i]
        if t1 == t0:
            return n0
        return n0 + round((t - t0) * (n1 - n0) / (t1 - t0))


def _to_ns(records: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    clock = _Clock([(r[2], r[3]) for r in records if r[0] == CLOCK])
    out = []
    for r in records:
        if r[0] in TIMED:
            t0 = clock(r[2])
            t1 = clock(r[3]) if r[3] else 0
            r = (r[0], r[1], t0, t1, *r[4:])
        if r[0] != CLOCK:
            out.append(r)
    return out


def _functions(meta: dict) -> dict[int, ThreadName]:
    out: dict[int, ThreadName] = {}
    for fn in meta.get("functions", []):
        for t in fn.get("threads", []):
            out[int(t["ip"])] = ThreadName(str(fn["name"]), int(t["number"]), int(t["line"]),
                                           str(fn["file"]))
    return out


def read_node(directory: Path, node: int) -> NodeFiles | None:
    """Node `node`'s files, or None if it wrote nothing."""
    bin_path = directory / f"node-{node}.bin"
    meta_path = directory / f"node-{node}.json"
    if not bin_path.exists():
        return None
    data = bin_path.read_bytes()
    whole = len(data) - len(data) % RECORD.size  # a node that died mid-write
    records = _to_ns(list(RECORD.iter_unpack(data[:whole])))
    meta: dict = {}
    if meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError) as exc:
            raise TraceFilesError(f"{meta_path}: unreadable ({exc})") from None
        if meta.get("record_size") != RECORD.size:
            raise TraceFilesError(f"{meta_path}: records of {meta.get('record_size')} bytes, "
                                  f"this etcrun reads {RECORD.size}")
    times = [r[2] for r in records if r[2]]
    return NodeFiles(
        node=node, nodes=int(meta.get("nodes", 0)), records=records,
        dropped=int(meta.get("dropped", 0)), limit=int(meta.get("limit", 0)),
        start_ns=int(meta.get("start_ns", min(times, default=0))),
        end_ns=int(meta.get("end_ns", max((r[3] or r[2] for r in records), default=0))),
        finished=bool(meta), threads=_functions(meta), host=str(meta.get("host", "")),
        offsets=[int(x) for x in meta.get("clock_offsets_ns", [])],
        rtts=[int(x) for x in meta.get("clock_rtts_ns", [])])


def read_all(directory: Path, nodes: int) -> tuple[list[NodeFiles], str]:
    """Every node's files (a node that wrote nothing is left out), each on node 0's
    clock, and how the clocks were aligned. Nodes on node 0's host share its clock;
    a node on another host is moved by the offset node 0 measured at the end."""
    found = [read_node(directory, k) for k in range(nodes)]
    files = [f for f in found if f is not None]
    zero = next((f for f in files if f.node == 0), None)
    if zero is None or not zero.host:
        return files, "CLOCK_MONOTONIC (node 0's host unknown: not aligned across hosts)"
    moved = []
    for f in files:
        if f.host and f.host != zero.host:
            if f.node < len(zero.offsets) and f.node < len(zero.rtts) and zero.rtts[f.node] >= 0:
                f.shift(zero.offsets[f.node])
                moved.append(f"node {f.node} by {zero.offsets[f.node] / 1000:.1f} us "
                             f"(+-{zero.rtts[f.node] / 2000:.1f})")
            else:
                moved.append(f"node {f.node}: not measured, not aligned")
    if not moved:
        return files, "CLOCK_MONOTONIC of one host"
    return files, "CLOCK_MONOTONIC; other hosts aligned at the end: " + ", ".join(moved)
