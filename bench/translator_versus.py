"""Two etcpre commands (say main's and a branch's) against each other and against `cc
-fsyntax-only` on the translator benchmark's two generated programs, all three run
alternately in one loop so that they see the same load: medians of wall and CPU time
(user and system of all the command's processes). For comparing changes to the
translator on a shared machine; `make bench` does not run it.

Usage: python bench/translator_versus.py BASE_ETCPRE NEW_ETCPRE [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import translator  # noqa: E402
from benchlib import OUT  # noqa: E402


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", help="the etcpre command measured first (the baseline)")
    ap.add_argument("new", help="the etcpre command compared with it")
    ap.add_argument("--repeat", type=int, default=7)
    opts = ap.parse_args()
    out = OUT / "translator"
    # as the translator benchmark runs etcpre: bytecode cached, outside the sources
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(OUT / "pycache")
    inc = str(Path(__file__).resolve().parents[1] / "runtime" / "include")
    for shape, prog in [
        ("many small functions", translator.generate(5_000, out / "prog5k.tc")),
        ("few large functions", translator.generate_large(5_000, out / "large5k.tc")),
    ]:
        base_c, new_c = prog.with_suffix(".base.c"), prog.with_suffix(".new.c")
        cmds = {"base": [opts.base, str(prog), "-o", str(base_c)],
                "new": [opts.new, str(prog), "-o", str(new_c)],
                "cc": ["cc", "-std=gnu11", "-fsyntax-only", f"-I{inc}", str(new_c)]}
        for name in ("base", "new"):  # the bytecode cache, and the file cc reads
            subprocess.run(cmds[name], check=True, capture_output=True, env=env)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
        for _ in range(opts.repeat):
            for name, cmd in cmds.items():
                runs[name].append(timed(cmd, env))
        wall = {n: statistics.median(w for w, _ in r) for n, r in runs.items()}
        cpu = {n: statistics.median(c for _, c in r) for n, r in runs.items()}
        print(f"{shape} (median of {opts.repeat}):")
        for what, m in (("wall", wall), ("CPU", cpu)):
            print(f"  {what:4} base {m['base']:.3f} s, new {m['new']:.3f} s, cc {m['cc']:.4f} s;"
                  f" base/cc {m['base'] / m['cc']:.2f}, new/cc {m['new'] / m['cc']:.2f},"
                  f" new/base {m['new'] / m['base']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
