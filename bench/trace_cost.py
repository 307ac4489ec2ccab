"""What the tracing build costs fib (issue 16): one-node seq runs of samples/fib.tc for
fib(25..30), the normal build, the -trace build run without --trace (ids and edges
made, nothing written) and recording every record (ETC_TRACE_DIR, no limit), in turn
in each round; each figure is the median over rounds of the time fib prints, and the
ratio the median of each round's time over the normal build's in that round.

    .venv/bin/python bench/trace_cost.py [--rounds 5] [--first 25] [--last 30]

(`make bench` runs the same comparison at fib(30) in its build-costs table.)"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from benchlib import OUT, ROOT, etcc, etcrun, median_of, number, table


def _secs(prog: Path, n: int, env: dict[str, str] | None = None) -> float:
    return number(r"time: ([\d.]+) s", etcrun(prog, str(n), env=env).stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--first", type=int, default=25)
    ap.add_argument("--last", type=int, default=30)
    opts = ap.parse_args()
    fib_tc = ROOT / "samples" / "fib.tc"
    normal = etcc(fib_tc, OUT / "fib" / "fib-trace-cost-normal", "-target", "seq")
    traced = etcc(fib_tc, OUT / "fib" / "fib-trace-cost-trace", "-target", "seq", "-trace")
    scratch = Path(tempfile.mkdtemp(prefix="etc-trace-cost-"))
    record = {**os.environ, "ETC_TRACE_DIR": str(scratch), "ETC_TRACE_LIMIT": "1000000000"}
    rows = []
    try:
        for n in range(opts.first, opts.last + 1):
            t: dict[str, list[float]] = {"normal": [], "idle": [], "recording": []}
            for _ in range(opts.rounds):
                t["normal"].append(_secs(normal, n))
                t["idle"].append(_secs(traced, n))
                t["recording"].append(_secs(traced, n, record))
                size = sum(f.stat().st_size for f in scratch.iterdir())
            ratio = {k: median_of([a / b for a, b in zip(v, t["normal"], strict=True)])
                     for k, v in t.items()}
            rows.append([f"fib({n})", f"{median_of(t['normal']):.4f}",
                         f"{median_of(t['idle']):.4f}", f"{ratio['idle']:.2f}",
                         f"{median_of(t['recording']):.4f}", f"{ratio['recording']:.2f}",
                         f"{size / 1e6:.0f}"])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"one-node seq, median of {opts.rounds} rounds (seconds fib prints)")
    print("\n".join(table(["n", "normal (s)", "-trace, not recording (s)", "ratio",
                           "-trace, recording (s)", "ratio", "records (MB)"], rows)))


if __name__ == "__main__":
    main()
