"""Fine grain with many logical units per core (after seed 001, Neves & Schnabel):
a five-point stencil with one threaded function per grid point, 625 to 6,400 points
on one core, against a hand-contracted C loop (bench/stencil/manual.c) doing the
same arithmetic; overhead at 50, 125 and 250 flops per point per iteration."""

from __future__ import annotations

from benchlib import (
    BENCH,
    OUT,
    BenchError,
    Section,
    cc,
    etcc,
    median_of,
    number,
    plot_lines,
    run,
    table,
)

SIDES = [25, 40, 60, 80]          # 625, 1,600, 3,600, 6,400 points
FLOPS = [50, 125, 250]            # 5 flops per unknown
PAPER = "the paper: 38-93% on one processor at 60-250 flops (Table 2, Intel Paragon)"


def bench(quick: bool) -> Section:
    reps = 3 if quick else 5
    manual = cc([BENCH / "stencil" / "manual.c"], OUT / "stencil" / "manual")
    prog = etcc(BENCH / "stencil" / "stencil.tc", OUT / "stencil" / "stencil", "-target", "seq")
    sec = Section("Fine grain: one threaded function per stencil point (seed 001)")
    rows, series = [], {f"{f} flops": [] for f in FLOPS}
    overhead: dict[tuple[int, int], float] = {}
    for side in SIDES:
        points = side * side
        iters = max(20, int((4e6 if quick else 2e7) / (points * 25)))
        for flops in FLOPS:
            k = str(flops // 5)
            args = [str(side), str(iters), k]
            m_out = run([str(manual), *args])
            t_out = run([str(prog), *args])
            if m_out.stdout != t_out.stdout:
                raise BenchError(f"stencil {args}: {t_out.stdout!r} != {m_out.stdout!r}")
            tm = median_of([number(r"time: ([\d.]+)", run([str(manual), *args]).stderr)
                            for _ in range(reps)])
            tt = median_of([number(r"time: ([\d.]+)", run([str(prog), *args]).stderr)
                            for _ in range(reps)])
            ov = tt / tm - 1
            overhead[(points, flops)] = ov
            series[f"{flops} flops"].append(ov * 100)
            rows.append([f"{points:,}", flops, iters, tm, tt, f"{ov:+.0%}",
                         (tt - tm) / (points * iters) * 1e9])
    sec.add("One core (seq target). Each grid point is a threaded function; each iteration "
            "it waits on a sync slot for its neighbours and itself, computes, and signals "
            "them (5 signals per point per iteration). The baseline is the same computation "
            "as plain loops, same run, same output checked equal.", "")
    sec.add(*table(["points", "flops/point", "iterations", "manual s", "etc s", "overhead",
                    "extra ns per point-iteration"], rows))
    at125 = [overhead[(s * s, 125)] for s in SIDES]
    verdict = "met" if max(at125) < 0.15 else "not met"
    sec.add(f"Goal: under 15% overhead at 125 flops on one core: measured "
            f"{min(at125):+.0%} to {max(at125):+.0%} (**{verdict}**); {PAPER}.", "")
    plot = plot_lines("stencil", "Stencil overhead vs points per core", [s * s for s in SIDES],
                      series, "points per core", "overhead %")
    if plot:
        sec.add(plot, "")
    sec.data = {f"{p}x{f}": v for (p, f), v in overhead.items()}
    return sec
