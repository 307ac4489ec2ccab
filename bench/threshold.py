"""Synchronisation threshold (after seed 002, C.mmp/Hydra's 50% criterion): workers
compute for a time t, then meet at a barrier through a sync slot; the threshold is
the t at which half the time goes to synchronisation. Local: workers on the
coordinator's node; remote: on the other node (smp). The baseline, measured in the
same run, is the same work with no barrier on the same node."""

from __future__ import annotations

import math

from benchlib import BENCH, OUT, Section, etcc, etcrun, median_of, plot_lines, table

SPINS_NS = [10, 30, 100, 300, 1000, 3000, 10000, 30000]
WORKERS = 4


def crossing(xs: list[float], eff: list[float]) -> float | None:
    """The t where efficiency crosses 0.5 (log-linear interpolation)."""
    for i in range(1, len(xs)):
        if eff[i - 1] < 0.5 <= eff[i]:
            f = (0.5 - eff[i - 1]) / (eff[i] - eff[i - 1])
            return math.exp(math.log(xs[i - 1]) + f * (math.log(xs[i]) - math.log(xs[i - 1])))
    if eff and eff[0] >= 0.5:
        return xs[0]
    return None


def bench(quick: bool) -> Section:
    reps = 3 if quick else 5
    prog = etcc(BENCH / "threshold" / "barrier.tc", OUT / "threshold" / "barrier")
    sec = Section("Synchronisation threshold, the 50% criterion (seed 002)")
    eff: dict[int, list[float]] = {0: [], 1: []}
    rows = []
    for spin in SPINS_NS:
        phases = max(200, min(20000, int(2e8 / (spin * WORKERS + 2000))))
        if quick:
            phases = max(100, phases // 4)
        row: list[object] = [spin]
        for node in (0, 1):
            samples = []
            per_phase = []
            for _ in range(reps):
                out = etcrun(prog, str(WORKERS), str(phases), str(spin), str(node), nodes=2)
                f = out.stdout.split()
                per_phase.append(float(f[5]))
                samples.append(float(f[6]))
            e = median_of(samples)
            eff[node].append(e)
            row += [median_of(per_phase) / 1e3, e]
        rows.append(row)
    sec.add(f"{WORKERS} workers, each computing t ns per phase, then a barrier through one "
            "sync slot (each worker RSYNCs the coordinator's slot; the coordinator RSYNCs each "
            "worker to start the next phase). Efficiency = time of the same work without "
            "barriers / time with them (same run).", "")
    sec.add(*table(["t (ns)", "local µs/phase", "local efficiency", "remote µs/phase",
                    "remote efficiency"], rows))
    t_local = crossing(SPINS_NS, eff[0])
    t_remote = crossing(SPINS_NS, eff[1])

    def show(t: float | None) -> str:
        if t is None:
            return "not reached in the range measured"
        return f"{t:,.0f} ns ({t / 2e6:.2e} of the paper's 2 ms)"

    sec.add(f"Threshold (efficiency 50%): local slots **{show(t_local)}**; remote slots "
            f"**{show(t_remote)}**. The paper's thresholds on C.mmp: 2 ms for its best "
            "primitive (a spin lock), 33-200 ms for Hydra's kernel and policy-module "
            "semaphores.", "")
    plot = plot_lines("threshold", "Barrier efficiency vs compute per phase", SPINS_NS,
                      {"local slot": eff[0], "remote slot": eff[1]}, "t (ns) per phase",
                      "efficiency", logx=True)
    if plot:
        sec.add(plot, "")
    sec.data = {"threshold_local_ns": t_local, "threshold_remote_ns": t_remote}
    return sec
