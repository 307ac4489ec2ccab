"""What etcrun adds to a run (issue 19): samples/hello.tc on seq and on 2 smp nodes,
started by etcrun and directly (ETC_NODES set), in turn, many times; the figure is
the median wall time of each and their difference. Also the full etcrun path
(`python -m etcpre.cli.etcrun_cmd`, what a command line the start-up path does not
take costs) and a bare `python -S`, the floor of any Python launcher."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from benchlib import OUT, ROOT, Section, etcc, median_of, table

BIN = ROOT / ".venv" / "bin"


def _wall(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def bench(quick: bool) -> Section:
    sec = Section("etcrun's start-up (issue 19)")
    runs = 20 if quick else 60
    hello = ROOT / "samples" / "hello.tc"
    rows = []
    summary: dict[str, float] = {}
    for target, n in (("seq", 1), ("smp", 2)):
        prog = etcc(hello, OUT / "launcher" / f"hello-{target}", "-O2", "-target", target)
        env = {**os.environ, "ETC_NODES": str(n)}
        plain = {k: v for k, v in os.environ.items() if k != "ETC_NODES"}
        times: dict[str, list[float]] = {"direct": [], "etcrun": [], "full": [], "python": []}
        for _ in range(runs):  # in turn, so that each sees the same moments of the machine
            times["direct"].append(_wall([str(prog)], env))
            times["etcrun"].append(_wall([str(BIN / "etcrun"), "-n", str(n), str(prog)], plain))
            times["full"].append(_wall([sys.executable, "-m", "etcpre.cli.etcrun_cmd", "-n",
                                        str(n), str(prog)], plain))
            times["python"].append(_wall([sys.executable, "-S", "-c", "pass"], plain))
        ms = {k: 1e3 * median_of(v) for k, v in times.items()}
        added = ms["etcrun"] - ms["direct"]
        summary[f"{target} added ms"] = added
        rows.append([f"{target}, {n} node{'s' if n > 1 else ''}", f"{ms['direct']:.1f}",
                     f"{ms['etcrun']:.1f}", f"{added:.1f}", f"{ms['full'] - ms['direct']:.1f}",
                     f"{ms['python']:.1f}"])
    sec.add(f"Median wall time in ms over {runs} runs of each, taken in turn.", "")
    sec.add(*table(["run", "program directly", "etcrun", "etcrun adds",
                    "full etcrun path adds", "python -S alone"], rows))
    worst = max(summary.values())
    sec.add("", f"Goal (issue 19): etcrun adds at most 15 ms: **{worst:.1f} ms** "
                f"({'met' if worst <= 15 else 'not met'}).")
    sec.data = summary
    return sec
