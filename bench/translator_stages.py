"""Where etcpre's time goes: the median time of each pass of the translator on the
generated programs of the translator benchmark (or on the .tc files given), in
process. `make bench` runs its stages() and bare_walk() for the report's stage table
(bench/translator.py); run alone, it prints them for profiling work.

Usage: python bench/translator_stages.py [--repeat N] [FILE.tc ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import translator  # noqa: E402
from benchlib import OUT  # noqa: E402

from etcpre.diagnostics import DiagnosticSink  # noqa: E402
from etcpre.options import Options  # noqa: E402
from etcpre.passes import analyse, clang_view, emit, lower, parse  # noqa: E402
from etcpre.passes.syntax import walk  # noqa: E402
from etcpre.passes.text import WorkingText  # noqa: E402
from etcpre.source import SourceFile  # noqa: E402


def stages(source: SourceFile) -> dict[str, float]:
    """Seconds of each pass, for a file without macros to expand."""
    times: dict[str, float] = {}

    def timed(name: str, fn: Callable[[], object]) -> object:
        t0 = time.perf_counter()
        result = fn()
        times[name] = time.perf_counter() - t0
        return result

    working = WorkingText.of(source)
    tree = timed("parse (tree-sitter)", lambda: parse.tree(working))
    facts = timed("clang view (forked child)",
                  lambda: clang_view.gather(working, tree.root_node, Options()))
    if facts.expansions:
        raise SystemExit(f"{source.name}: has macro uses to expand; stages are for plain files")
    sink = DiagnosticSink()
    model = timed("analyse and checks", lambda: analyse.analyse(
        parse.parse(working, sink, tree), facts, sink))
    if sink.has_errors:
        raise SystemExit(sink.render())
    lowered = timed("lower", lambda: lower.lower(model))
    timed("emit", lambda: emit.emit(lowered))
    return times


def bare_walk(source: SourceFile) -> float:
    """Seconds of the least a Python pass over the whole tree does: the passes' own
    pre-order walk (syntax.walk) reading every node's type, and nothing else. The
    report counts what the passes cost in these walks."""
    root = parse.tree(WorkingText.of(source)).root_node
    t0 = time.perf_counter()
    for node in walk(root):
        node.type  # noqa: B018 - the read is what is timed
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("files", nargs="*", type=Path)
    opts = ap.parse_args()
    files = opts.files or [
        translator.generate(5_000, OUT / "translator" / "prog5k.tc"),
        translator.generate_large(5_000, OUT / "translator" / "large5k.tc"),
    ]
    for path in files:
        runs = [stages(SourceFile.load(str(path))) for _ in range(opts.repeat)]
        print(f"{path.name}: median of {opts.repeat}")
        for name in runs[0]:
            print(f"  {name:28} {statistics.median(r[name] for r in runs) * 1e3:7.1f} ms")
        total = statistics.median(sum(r.values()) for r in runs)
        print(f"  {'total':28} {total * 1e3:7.1f} ms")
        walk = statistics.median(bare_walk(SourceFile.load(str(path)))
                                 for _ in range(opts.repeat))
        print(f"  {'(a bare walk of the tree)':28} {walk * 1e3:7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
