"""etctrace plot: measured speedups of traces of one program on 1..N nodes against
the bounds its work and span give (matplotlib, Agg backend)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from etcpre.trace.analysis import Summary, summarize
from etcpre.trace.model import Trace, TraceError


@dataclass
class Point:
    nodes: int
    seconds: float  # from the first thread's start to the last one's end
    path: Path


def run_time(trace: Trace) -> float:
    first = min(t.ts for t in trace.threads)
    last = max(t.ts + t.dur for t in trace.threads)
    return (last - first) / 1e6


def points(traces: list[Trace]) -> tuple[list[Point], Summary]:
    """One point per node count (the fastest run of it) and the summary of the run on
    the fewest nodes (least overhead: its work and span are the bounds)."""
    programs = {Path(str(t.other.get("program", ""))).name for t in traces}
    if len(programs) > 1:
        raise TraceError(f"the traces are of different programs: {', '.join(sorted(programs))}")
    best: dict[int, Point] = {}
    for t in traces:
        p = Point(t.nodes, run_time(t), t.path)
        if p.seconds <= 0:
            raise TraceError(f"{t.path}: the run took no measurable time")
        if p.nodes not in best or p.seconds < best[p.nodes].seconds:
            best[p.nodes] = p
    base = min(traces, key=lambda t: (t.nodes, run_time(t)))
    return sorted(best.values(), key=lambda p: p.nodes), summarize(base)


def plot(traces: list[Trace], out: Path) -> str:
    """Writes the PNG; returns a one-line description of what it shows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts, s = points(traces)
    one = next((p.seconds for p in pts if p.nodes == 1), None)
    t1 = one if one is not None else s.work_s
    top = max(2, max(p.nodes for p in pts))
    ps = list(range(1, top + 1))
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    ax.plot(ps, ps, ":", color="grey", label="linear (P)")
    ax.plot(ps, [min(p, s.parallelism) for p in ps], "-", color="tab:green",
            label=f"upper bound min(P, work/span = {s.parallelism:.1f})")
    ax.plot(ps, [s.work_s / (s.work_s / p + s.span_s) for p in ps], "--", color="tab:orange",
            label="greedy bound work / (work/P + span)")
    if s.burdened_parallelism:
        ax.plot(ps, [min(p, s.burdened_parallelism) for p in ps], "-.", color="tab:purple",
                label=f"burdened: min(P, {s.burdened_parallelism:.1f})")
    ax.plot([p.nodes for p in pts], [t1 / p.seconds for p in pts], "o-", color="tab:blue",
            label="measured" + ("" if one is not None else " (T1 = work)"))
    ax.set_xlabel("nodes P")
    ax.set_ylabel("speedup")
    ax.set_xlim(1, top)
    ax.set_ylim(0, top * 1.05)
    ax.set_title(f"speedup: {Path(str(traces[0].other.get('program', ''))).name or 'trace'} "
                 f"({s.work_threads} threads, span {s.span_threads})")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    try:
        fig.savefig(out, format="png")
    except OSError as exc:
        raise TraceError(f"cannot write {out}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
    return ", ".join(f"{p.nodes} node(s): {t1 / p.seconds:.2f}" for p in pts)
