"""Parallel jobs sharing this 2-CPU machine (issue 18; the experiments of seeds 000,
ASAT, and 003, LLPC): each EBS workload alone, two copies started together, beside
one and two CPU-bound hogs, beside an OpenMP job, and pinned to one CPU, on 2 nodes,
`auto` nodes and 2 self-allocating nodes (`--adapt`); the same pair and hog
scenarios for OpenMP tasks (OMP_DYNAMIC false and true) and TBB.

Metrics (Eyerman and Eeckhout): a job's slowdown is its wall time in a scenario over
its wall time alone on 2 nodes (threads) in the same repetition; ANTT is the mean
slowdown of the measured jobs, STP the sum of their 1/slowdown; CPU is the job's own
CPU time (its processes' rusage) over its wall time alone, which shows spinning.
Every figure is the median over repetitions of the per-repetition figure.

    .venv/bin/python bench/run.py --only sharing [--quick]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchlib import (
    BENCH,
    BIN,
    OUT,
    ROOT,
    Section,
    cc,
    ensure_debian,
    etcc,
    median_of,
    plot_bars,
    table,
    taskset_works,
)

EBS = ROOT / "samples" / "ebs"
# sizes at which each runs 0.1-0.2 s alone on 2 nodes here: make bench must stay
# under 25 minutes (issue 19), and this group runs about 70 runs per repetition
WORKLOADS = {
    "fib": ["35"],
    "queens": ["14", "4"],
    "knary": ["6", "7", "2", "8000"],
    "spmd": ["6", "4", "4", "0", "500000"],
    "matmul": ["768"],
    "tomcatv": ["257", "150", "16"],
}
HOG = [sys.executable, "-S", "-c", "while True: pass"]


@dataclass
class Job:
    cmd: list[str]
    env: dict[str, str]
    base: str  # the job whose run alone is this one's baseline (slowdown, CPU)


@dataclass
class Result:
    wall: float
    cpu: float


def _start(job: Job) -> tuple[subprocess.Popen[bytes], float]:
    proc = subprocess.Popen(job.cmd, env=job.env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    return proc, time.perf_counter()


def together(jobs: Sequence[Job], hogs: int = 0) -> list[Result]:
    """Starts the jobs (and `hogs` busy loops) at once; each job's wall and CPU time."""
    hog_procs = [subprocess.Popen(HOG) for _ in range(hogs)]
    try:
        if hogs:
            time.sleep(0.05)  # the hogs are running (and counted by /proc/loadavg)
        started = [_start(j) for j in jobs]
        results: dict[int, Result] = {}
        while len(results) < len(started):
            pid, status, usage = os.wait4(-1, 0)
            for i, (proc, t0) in enumerate(started):
                if proc.pid == pid:
                    proc.returncode = os.waitstatus_to_exitcode(status)
                    if proc.returncode != 0:
                        raise RuntimeError(f"{jobs[i].cmd} failed ({proc.returncode})")
                    results[i] = Result(time.perf_counter() - t0,
                                        usage.ru_utime + usage.ru_stime)
        return [results[i] for i in range(len(jobs))]
    finally:
        for h in hog_procs:
            h.kill()
            h.wait()


def _etc(prog: Path, args: list[str], nodes: str, pin: str | None = None,
         adapt: bool = False) -> Job:
    cmd = [str(BIN / "etcrun"), "-n", nodes, *(["--adapt"] if adapt else []), str(prog),
           *args]
    if pin is not None:
        cmd = ["taskset", "-c", pin, *cmd]
    return Job(cmd, dict(os.environ), "etc")


def _scenarios(alone: Job, solo: Job, auto: Job, adapt: Job, omp: Job,
               pinned: tuple[Job, Job] | None) -> dict[str, list[Job | int]]:
    """name -> [jobs..., hogs]; the first job is the one whose slowdown is reported
    (pairs report both). `adapt`: 2 nodes with self-allocating nodes (--adapt)."""
    out: dict[str, list[Job | int]] = {
        "alone, 2 nodes, adapt": [adapt, 0],
        "two jobs, 2 nodes each": [alone, alone, 0],
        "two jobs, auto each": [auto, auto, 0],
        "two jobs, 2 nodes, adapt each": [adapt, adapt, 0],
        "beside 1 hog, 2 nodes": [alone, 1],
        "beside 1 hog, auto": [auto, 1],
        "beside 1 hog, 1 node": [solo, 1],
        "beside 1 hog, 2 nodes, adapt": [adapt, 1],
        "beside 2 hogs, 2 nodes": [alone, 2],
        "beside 2 hogs, auto": [auto, 2],
        "beside 2 hogs, 2 nodes, adapt": [adapt, 2],
    }
    out["beside an OpenMP job (2 threads)"] = [alone, omp, 0]
    if pinned is not None:
        out["taskset -c 0, 2 nodes"] = [pinned[0], 0]
        out["taskset -c 0, 1 node"] = [pinned[1], 0]
    return out


def _measure(scen: dict[str, list[Job | int]], bases: dict[str, Job],
             reps: int) -> dict[str, dict[str, float]]:
    """Per scenario: the first job's slowdown, ANTT, STP and the jobs' CPU time over
    their CPU time alone; each repetition runs every baseline alone first."""
    acc: dict[str, dict[str, list[float]]] = {k: {"slowdown": [], "antt": [], "stp": [],
                                                  "cpu": []} for k in scen}
    for _ in range(reps):
        alone = {key: together([job])[0] for key, job in bases.items()}
        for name, spec in scen.items():
            jobs = [j for j in spec if isinstance(j, Job)]
            hogs = spec[-1]
            assert isinstance(hogs, int)
            res = together(jobs, hogs)
            slow = [r.wall / alone[j.base].wall for j, r in zip(jobs, res, strict=True)]
            acc[name]["slowdown"].append(slow[0])
            acc[name]["antt"].append(sum(slow) / len(slow))
            acc[name]["stp"].append(sum(1 / x for x in slow))
            acc[name]["cpu"].append(sum(r.cpu for r in res)
                                    / sum(alone[j.base].cpu for j in jobs))
    return {k: {m: median_of(v) for m, v in d.items()} for k, d in acc.items()}


def _peers(reps: int) -> tuple[list[list[object]], dict[str, float]]:
    """Two copies together and beside one hog, for OpenMP (dynamic off/on) and TBB."""
    peers = BENCH / "peers"
    rows: list[list[object]] = []
    antt: dict[str, float] = {}
    omp = {"fib": cc([peers / "fib_omp.c"], OUT / "peers" / "fib_omp", "-fopenmp"),
           "queens": cc([peers / "queens_omp.c"], OUT / "peers" / "queens_omp", "-fopenmp")}
    tbb = {}
    if ensure_debian("/usr/include/tbb/task_group.h", "libtbb-dev"):
        tbb = {"fib": cc([peers / "fib_tbb.cpp"], OUT / "peers" / "fib_tbb", "-ltbb",
                         cxx=True),
               "queens": cc([peers / "queens_tbb.cpp"], OUT / "peers" / "queens_tbb",
                            "-ltbb", cxx=True)}
    for name in ("fib", "queens"):
        args = WORKLOADS[name]
        variants = {
            "OpenMP, OMP_DYNAMIC=false": Job([str(omp[name]), *args],
                                             {**os.environ, "OMP_NUM_THREADS": "2",
                                              "OMP_DYNAMIC": "false"}, "self"),
            "OpenMP, OMP_DYNAMIC=true": Job([str(omp[name]), *args],
                                            {**os.environ, "OMP_NUM_THREADS": "2",
                                             "OMP_DYNAMIC": "true"}, "self"),
        }
        if name in tbb:
            variants["TBB, 2 threads"] = Job([str(tbb[name]), *args, "2"], dict(os.environ),
                                             "self")
        for label, job in variants.items():
            scen: dict[str, list[Job | int]] = {"two jobs": [job, job, 0],
                                                "beside 1 hog": [job, 1]}
            got = _measure(scen, {"self": job}, reps)
            rows.append([name, label, f"{got['two jobs']['antt']:.2f}",
                         f"{got['two jobs']['stp']:.2f}",
                         f"{got['beside 1 hog']['slowdown']:.2f}",
                         f"{got['two jobs']['cpu']:.2f}"])
            antt[f"{name}: {label}"] = got["two jobs"]["antt"]
    return rows, antt


def bench(quick: bool) -> Section:
    reps = 3 if quick else 5
    sec = Section("Sharing the machine with other jobs (issue 18)")
    omp_job = Job([str(cc([BENCH / "peers" / "fib_omp.c"], OUT / "peers" / "fib_omp",
                          "-fopenmp")), "32"], {**os.environ, "OMP_NUM_THREADS": "2"}, "omp")
    have_taskset = taskset_works()
    rows: list[list[object]] = []
    pair_antt: dict[str, float] = {}
    plot_labels: list[str] = []
    plot_series: dict[str, list[float]] = {}
    auto_goal: list[str] = []
    adapt_goal: list[str] = []
    adapt_alone: list[str] = []
    adapt_pair: list[str] = []
    for name, args in WORKLOADS.items():
        prog = etcc(EBS / f"{name}.tc", OUT / "ebs" / name, "-O2", "-lm")
        alone, solo = _etc(prog, args, "2"), _etc(prog, args, "1")
        auto, adapt = _etc(prog, args, "auto"), _etc(prog, args, "2", adapt=True)
        pinned = (_etc(prog, args, "2", "0"), _etc(prog, args, "1", "0")) \
            if have_taskset else None
        scen = _scenarios(alone, solo, auto, adapt, omp_job, pinned)
        got = _measure(scen, {"etc": alone, "omp": omp_job}, reps)
        for sname, m in got.items():
            rows.append([name, sname, f"{m['slowdown']:.2f}", f"{m['antt']:.2f}",
                         f"{m['stp']:.2f}", f"{m['cpu']:.2f}"])
            plot_series.setdefault(sname, []).append(m["slowdown"])
        plot_labels.append(name)
        pair_antt[name] = got["two jobs, 2 nodes each"]["antt"]
        best = min(got["beside 1 hog, 2 nodes"]["slowdown"],
                   got["beside 1 hog, 1 node"]["slowdown"])
        auto_goal.append(f"{name} {got['beside 1 hog, auto']['slowdown'] / best:.2f}")
        adapt_goal.append(f"{name} {got['beside 1 hog, 2 nodes, adapt']['slowdown'] / best:.2f}")
        adapt_alone.append(f"{name} {got['alone, 2 nodes, adapt']['slowdown']:.2f}")
        adapt_pair.append(f"{name} {got['two jobs, 2 nodes, adapt each']['antt']:.2f}")
    sec.add(f"smp target, sizes of 0.1-0.2 s alone; medians of {reps} repetitions, "
            "each with its own runs alone. Slowdown: of the first job named (the etc "
            "workload); ANTT and STP over the jobs measured (hogs are not); CPU: the "
            "jobs' CPU time over their CPU time alone (above 1: CPU spent spinning or "
            "lost to sharing).", "")
    sec.add(*table(["workload", "scenario", "slowdown", "ANTT", "STP", "CPU"], rows))
    plot = plot_bars("sharing", "Slowdown of an etc job per scenario (2 CPUs)", plot_labels,
                     plot_series, "slowdown (time / time alone on 2 nodes)")
    if plot:
        sec.add("", plot)
    peer_rows, peer_antt = _peers(reps)
    sec.add("", "**Peers**, same scenarios (fib and queens, same sizes):", "")
    sec.add(*table(["workload", "runtime", "two jobs ANTT", "two jobs STP",
                    "beside 1 hog slowdown", "two jobs CPU"], peer_rows))
    worst = max(pair_antt.values())
    sec.add("", f"Goals (issue 18): two etc jobs together ANTT at most 2.1: worst "
                f"**{worst:.2f}** ({'met' if worst <= 2.1 else 'not met'}); beside one hog, "
                "auto at most 1.05x the better of 1 and 2 nodes: " + ", ".join(auto_goal) +
            "; etc's ANTT against the best peer's (two jobs): " + ", ".join(
                f"{w} {pair_antt[w]:.2f} vs "
                f"{min(v for k, v in peer_antt.items() if k.startswith(w + ':')):.2f}"
                for w in ("fib", "queens")) + ".")
    sec.add("", "Self-allocating nodes (`--adapt`, 2 nodes): beside one hog, over the "
                "better of 1 and 2 nodes without it: " + ", ".join(adapt_goal) +
            "; two such jobs together, ANTT: " + ", ".join(adapt_pair) +
            "; alone, over 2 nodes without it (its cost on this machine, which other "
            "jobs may be loading): " + ", ".join(adapt_alone) + ".")
    sec.data = {"pair_antt": pair_antt, "peer_antt": peer_antt}
    return sec
