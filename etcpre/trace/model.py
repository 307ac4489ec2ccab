"""A trace file (merge.py's output) read back: its thread runs and what enabled them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class TraceError(Exception):
    """A bad input; the message is ready for the user (etctrace: error: ...)."""


@dataclass
class Thread:
    id: str
    node: int
    name: str  # function.thread
    function: str
    number: int
    line: int
    activation: str
    ts: float  # microseconds
    dur: float
    deps: list[str]
    self_ns: int = 0  # dur less the threads it CALLed (nested on its track), in ns


@dataclass
class Trace:
    path: Path
    events: list[dict[str, Any]]
    other: dict[str, Any]
    threads: list[Thread] = field(default_factory=list)

    @property
    def nodes(self) -> int:
        n = self.other.get("nodes")
        if isinstance(n, int) and n > 0:
            return n
        return 1 + max((t.node for t in self.threads), default=0)

    @property
    def elapsed_s(self) -> float:
        e = self.other.get("elapsed_s")
        if isinstance(e, (int, float)) and e > 0:
            return float(e)
        if not self.threads:
            return 0.0
        return (max(t.ts + t.dur for t in self.threads) - min(t.ts for t in self.threads)) / 1e6

    @property
    def truncated(self) -> bool:
        return bool(self.other.get("truncated"))


def load_events(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The events and otherData of a Chrome Trace Event file (object or array form)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: is a directory, not a trace file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"{path}: cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise TraceError(f"{path}: not a JSON trace file ({exc})") from None
    if isinstance(data, list):
        events, other = data, {}
    elif isinstance(data, dict) and isinstance(data.get("traceEvents"), list):
        events, other = data["traceEvents"], data.get("otherData") or {}
    else:
        raise TraceError(f"{path}: not a Chrome trace: no \"traceEvents\" list")
    if not all(isinstance(e, dict) for e in events):
        raise TraceError(f"{path}: not a Chrome trace: an event that is not an object")
    if not isinstance(other, dict):
        other = {}
    return events, other


def _number(e: dict[str, Any], key: str, path: Path) -> float:
    v = e.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TraceError(f"{path}: a thread slice without a numeric '{key}': {e.get('name')}")
    return float(v)


def _self_times(threads: list[Thread]) -> None:
    """Each run's own time: a CALLed thread 0 runs inside its caller's slice."""
    by_node: dict[int, list[Thread]] = {}
    for t in threads:
        by_node.setdefault(t.node, []).append(t)
    for runs in by_node.values():
        runs.sort(key=lambda t: (t.ts, -t.dur))
        stack: list[tuple[Thread, int]] = []  # with its end in integer ns
        for t in runs:
            start, dur = round(t.ts * 1000), round(t.dur * 1000)
            t.self_ns = dur
            while stack and stack[-1][1] < start + dur:
                stack.pop()
            if stack:
                stack[-1][0].self_ns -= dur
            stack.append((t, start + dur))
        for t in runs:
            t.self_ns = max(t.self_ns, 0)


def load(path: Path) -> Trace:
    """A trace with its thread runs; TraceError if it is not an etc trace."""
    events, other = load_events(path)
    trace = Trace(path, events, other)
    seen: set[str] = set()
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "thread":
            continue
        args = e.get("args")
        if not isinstance(args, dict) or not isinstance(args.get("id"), str):
            raise TraceError(f"{path}: a thread slice without its id: {e.get('name')}")
        deps = args.get("deps", [])
        if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
            raise TraceError(f"{path}: thread {args['id']}: 'deps' is not a list of ids")
        if args["id"] in seen:
            raise TraceError(f"{path}: thread {args['id']} appears twice")
        seen.add(args["id"])
        node = e.get("pid")
        if isinstance(node, bool) or not isinstance(node, int):
            raise TraceError(f"{path}: thread {args['id']}: 'pid' is not a node number")
        number = args.get("thread", 0)
        line = args.get("line", 0)
        trace.threads.append(Thread(
            id=args["id"], node=node, name=str(e.get("name", "?")),
            function=str(args.get("function", e.get("name", "?"))),
            number=number if isinstance(number, int) else 0,
            line=line if isinstance(line, int) else 0,
            activation=str(args.get("activation", args["id"])),
            ts=_number(e, "ts", path), dur=_number(e, "dur", path), deps=list(deps)))
    if not trace.threads:
        raise TraceError(f"{path}: no thread runs in this trace (is it from etcrun --trace?)")
    _self_times(trace.threads)
    return trace
