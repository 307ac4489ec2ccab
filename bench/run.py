"""`make bench`: every benchmark, then bench/REPORT.md with tables and plots.

Usage: python bench/run.py [--quick] [--only NAME ...]
  NAME: translator operations fib launcher mpi stencil threshold apps balancers
  sharing; tcp (only the tcp part of operations)
(mpi says it is skipped, and why, where the mpi target is not available)
Every figure is a ratio against a baseline measured in the same run; the report says
for each what it is compared with. Results are also written to bench/out/results.json.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import apps  # noqa: E402
import balancers  # noqa: E402
import fib  # noqa: E402
import launcher  # noqa: E402
import mpi_target  # noqa: E402
import operations  # noqa: E402
import sharing  # noqa: E402
import stencil  # noqa: E402
import threshold  # noqa: E402
import translator  # noqa: E402
from benchlib import BENCH, OUT, BenchError, Section, machine, save_json  # noqa: E402

GROUPS = {
    "translator": translator.bench,
    "operations": operations.bench,
    "fib": fib.bench,
    "launcher": launcher.bench,
    "mpi": mpi_target.bench,
    "stencil": stencil.bench,
    "threshold": threshold.bench,
    "apps": apps.bench,
    "balancers": balancers.bench,
    "sharing": sharing.bench,
}
# not in `make bench` (operations has it): run alone with --only
EXTRA = {"tcp": operations.bench_tcp}

INTRO = """# etc benchmark report

Produced by `make bench` (`bench/run.py`) on {date}, in {minutes:.1f} minutes{quick}
(issue 19: under 25); by group: {timings}.

Machine: {cpu}, {cpus} CPUs, {ghz} GHz (TSC), Linux {kernel}, {cc}.
The machine is shared and noisy: every figure is a median of several runs and, where
it is a comparison, a ratio against a baseline measured in the same run. Cycles are
ns times the clock above; the thesis's figures are from its 120 MHz IBM SP-2 node.
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions, smaller sizes")
    ap.add_argument("--only", nargs="+", choices=sorted({**GROUPS, **EXTRA}),
                    help="run only these")
    opts = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    sections: list[Section] = []
    failed = []
    timings: list[str] = []
    for name, fn in {**GROUPS, **EXTRA}.items():
        if (opts.only and name not in opts.only) or (not opts.only and name in EXTRA):
            continue
        print(f"bench: {name} ...", flush=True)
        t0 = time.monotonic()
        try:
            out = fn(opts.quick)
        except Exception as exc:  # noqa: BLE001 - one group's failure must not lose the others
            failed.append(name)
            sec = Section(f"{name}: FAILED")
            detail = str(exc) if isinstance(exc, BenchError) else traceback.format_exc()
            sec.add("```", detail, "```")
            out = sec
        sections.extend(out if isinstance(out, list) else [out])
        took = time.monotonic() - t0
        timings.append(f"{name} {took:.0f} s")
        print(f"bench: {name} done in {took:.0f} s", flush=True)
    m = machine()
    report = INTRO.format(date=datetime.date.today().isoformat(),
                          minutes=(time.monotonic() - start) / 60,
                          quick=" (--quick)" if opts.quick else "",
                          timings=", ".join(timings), **m)
    body = "\n".join(s.markdown() for s in sections)
    if opts.only:
        target = OUT / "REPORT-partial.md"
    else:
        target = BENCH / "REPORT.md"
    target.write_text(report + "\n" + body)
    save_json(OUT / "results.json", {"machine": m, **{s.title: s.data for s in sections}})
    print(f"bench: wrote {target.relative_to(BENCH.parent)}")
    if failed:
        print(f"bench: error: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
