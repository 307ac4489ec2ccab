"""etctrace check: a trace is well formed: every event has what its phase needs,
timestamps never go back on a track, slices on a track nest (never overlap
partially), every flow has both ends, each inside a slice of its track."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

PHASES = {"X", "B", "E", "i", "I", "C", "M", "s", "t", "f"}


@dataclass
class Report:
    events: int
    slices: int
    flows: int
    nodes: int
    problems: list[str]


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _where(e: dict[str, Any]) -> str:
    return f"'{e.get('name', '?')}' at {e.get('ts')} us on pid {e.get('pid')} tid {e.get('tid')}"


def check(events: list[dict[str, Any]]) -> Report:
    problems: list[str] = []
    # slices in integer nanoseconds: ts + dur in floating point may pass a later ts
    tracks: dict[tuple[Any, Any], list[tuple[int, int]]] = {}
    last_ts: dict[tuple[Any, Any], float] = {}
    flows: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    pids: set[Any] = set()
    slices = 0
    for e in events:
        ph = e.get("ph")
        if ph not in PHASES:
            problems.append(f"an event of unknown phase {ph!r}: {_where(e)}")
            continue
        if ph == "M":
            continue
        if not _num(e.get("ts")) or "pid" not in e:
            problems.append(f"an event without a numeric 'ts' or a 'pid': {_where(e)}")
            continue
        track = (e.get("pid"), e.get("tid"))
        pids.add(e.get("pid"))
        ts = float(e["ts"])
        if ts < last_ts.get(track, float("-inf")):
            problems.append(f"time goes back on its track: {_where(e)} after "
                            f"{last_ts[track]} us")
        last_ts[track] = max(ts, last_ts.get(track, ts))
        if ph == "X":
            if not _num(e.get("dur")) or e["dur"] < 0:
                problems.append(f"a slice without a duration >= 0: {_where(e)}")
                continue
            slices += 1
            start = round(ts * 1000)
            tracks.setdefault(track, []).append((start, start + round(float(e["dur"]) * 1000)))
        elif ph in "stf":
            if "id" not in e:
                problems.append(f"a flow event without an id: {_where(e)}")
                continue
            flows.setdefault((e.get("cat"), e["id"]), []).append(e)
        elif ph == "C":
            args = e.get("args")
            if not isinstance(args, dict) or not all(_num(v) for v in args.values()):
                problems.append(f"a counter whose values are not numbers: {_where(e)}")
    for track, spans in tracks.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack: list[tuple[int, int]] = []
        for s in spans:
            while stack and stack[-1][1] <= s[0]:
                stack.pop()
            if stack and s[1] > stack[-1][1]:
                problems.append(f"slices overlap on pid {track[0]} tid {track[1]}: "
                                f"[{stack[-1][0] / 1000}, {stack[-1][1] / 1000}] and "
                                f"[{s[0] / 1000}, {s[1] / 1000}] us")
            stack.append(s)
    starts = {t: [s[0] for s in spans] for t, spans in tracks.items()}
    reach: dict[tuple[Any, Any], list[int]] = {}  # the latest end among slices so far
    for t, spans in tracks.items():
        top, out = -(1 << 62), []
        for s in spans:
            top = max(top, s[1])
            out.append(top)
        reach[t] = out
    for key, ends in flows.items():
        phases = sorted(e["ph"] for e in ends)
        if phases.count("s") != 1 or phases.count("f") != 1:
            problems.append(f"flow {key[1]} ({key[0]}) has {phases.count('s')} start(s) and "
                            f"{phases.count('f')} end(s), not one of each")
            continue
        for e in ends:
            track = (e.get("pid"), e.get("tid"))
            at = round(float(e["ts"]) * 1000)
            i = bisect.bisect_right(starts.get(track, []), at)
            if i == 0 or reach[track][i - 1] < at:
                problems.append(f"flow {key[1]} ({key[0]}): its '{e['ph']}' end is in no "
                                f"slice: {_where(e)}")
    return Report(len(events), slices, len(flows), len(pids), problems)
