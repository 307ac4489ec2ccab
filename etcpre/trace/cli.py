"""etctrace: check, summarise, plot and draw traces written by etcrun --trace
(docs/tracing.md)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from etcpre.cli.common import ArgParser, run_main
from etcpre.trace import analysis, plot, tree
from etcpre.trace.check import check
from etcpre.trace.model import TraceError, load, load_events


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds >= 0")
    return v


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive count")
    return int(text)


class _CommandParser(ArgParser):
    """A subcommand's parser: its usage errors also read `etctrace: error: ...`."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"etctrace: error: {message}\n(try '{self.prog} -h')\n")


def _parser() -> argparse.ArgumentParser:
    ap = ArgParser(prog="etctrace", description="Read traces written by etcrun --trace.")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", required=True,
                            parser_class=_CommandParser)
    s = sub.add_parser("summary", help="work, span and parallelism (Cilkscale's CSV)")
    s.add_argument("trace", type=Path)
    s.add_argument("--json", action="store_true", help="print JSON instead")
    s.add_argument("--burden", type=_seconds, default=analysis.DEFAULT_BURDEN_S, metavar="S",
                   help="seconds added per dependence between nodes in the burdened span "
                   f"(default {analysis.DEFAULT_BURDEN_S})")
    p = sub.add_parser("plot", help="measured speedups against the work/span bounds (PNG)")
    p.add_argument("traces", type=Path, nargs="+")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="FILE.png")
    t = sub.add_parser("tree", help="the activation tree, critical path in red (SVG or DOT)")
    t.add_argument("trace", type=Path)
    t.add_argument("-o", "--output", type=Path, required=True, metavar="FILE.svg|FILE.dot")
    t.add_argument("--max", type=_count, default=tree.MAX_ACTIVATIONS, metavar="N",
                   help="draw at most N activations (by depth; default "
                   f"{tree.MAX_ACTIVATIONS})")
    c = sub.add_parser("check", help="validate traces (nesting, flows, timestamps)")
    c.add_argument("traces", type=Path, nargs="+")
    return ap


def _summary(opts: argparse.Namespace) -> int:
    trace = load(opts.trace)
    s = analysis.summarize(trace, opts.burden)
    if opts.json:
        sys.stdout.write(json.dumps(s.as_dict(), indent=1) + "\n")
    else:
        sys.stdout.write(analysis.csv_text(s))
    if s.truncated:
        sys.stderr.write(f"etctrace: note: {opts.trace} was cut by --trace-limit: the "
                         "figures are those of the part it holds\n")
    return 0


def _check(opts: argparse.Namespace) -> int:
    bad = 0
    for path in opts.traces:
        events, other = load_events(path)
        r = check(events)
        if r.problems:
            bad += 1
            for p in r.problems[:20]:
                sys.stdout.write(f"{path}: {p}\n")
            more = len(r.problems) - 20
            if more > 0:
                sys.stdout.write(f"{path}: ... and {more} more\n")
            sys.stderr.write(f"etctrace: error: {path} is not a valid trace "
                             f"({len(r.problems)} problem(s))\n")
        else:
            cut = " (cut by --trace-limit)" if other.get("truncated") else ""
            sys.stdout.write(f"{path}: ok: {r.events} events, {r.slices} slices, {r.flows} "
                             f"flows, {r.nodes} node(s){cut}\n")
    return 1 if bad else 0


def _body(argv: list[str]) -> int:
    opts = _parser().parse_args(argv)
    try:
        if opts.command == "summary":
            return _summary(opts)
        if opts.command == "check":
            return _check(opts)
        if opts.command == "plot":
            traces = [load(p) for p in opts.traces]
            what = plot.plot(traces, opts.output)
            sys.stdout.write(f"{opts.output}: speedups {what}\n")
            return 0
        tree.write(load(opts.trace), opts.output, opts.max)
        return 0
    except TraceError as exc:
        sys.stderr.write(f"etctrace: error: {exc}\n")
        return 1


def main(argv: list[str] | None = None) -> int:
    return run_main("etctrace", _body, argv)


if __name__ == "__main__":
    sys.exit(main())
