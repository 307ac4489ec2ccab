"""The EARTH Benchmark Suite (samples/ebs/, thesis Table 4.1) against its sequential
C references, and fib and queens against OpenMP tasks and TBB (issue 6).

Every program runs at a size where its sequential reference takes about a second.
Baselines in the same run: the sequential reference (speedups), and this machine's
two-way capacity for that very program: two copies of the reference at once against
one (its CPUs behave like SMT siblings, so two-way speedups are bounded by this)."""

from __future__ import annotations

from benchlib import (
    BENCH,
    BIN,
    OUT,
    ROOT,
    BenchError,
    Section,
    cc,
    ensure_debian,
    etcc,
    median_of,
    plot_bars,
    table,
    wall,
)
from fib import capacity

EBS = ROOT / "samples" / "ebs"
# program -> (benchmark arguments, quick arguments); sizes from samples/ebs/README.md
SIZES = {
    # fib: every call is a token (a few ns) while gcc turns the reference's recursion
    # into far less work per call, so its size is the one where etc takes ~1 s
    "fib": (["38"], ["34"]),
    "queens": (["15", "4"], ["13", "4"]),
    "tsp": (["18", "2", "5"], ["16", "2", "5"]),
    "knary": (["7", "7", "2", "8000"], ["6", "7", "2", "8000"]),
    "matmul": (["1536"], ["768"]),
    "tomcatv": (["257", "800", "16"], ["257", "200", "16"]),
    "spmd": (["25", "4", "4", "0", "500000"], ["10", "4", "4", "0", "500000"]),
    "paraffins": (["29"], ["26"]),
}


def bench(quick: bool) -> Section:
    reps = 3 if quick else 3
    sec = Section("Applications: the EARTH Benchmark Suite (issue 6)")
    etcrun = str(BIN / "etcrun")
    rows, results = [], {}
    names, sp_series, cap_series = [], [], []
    for name, (full, small) in SIZES.items():
        args = small if quick else full
        ref = cc([EBS / "seq" / f"{name}.c"], OUT / "ebs" / f"{name}-seq", "-lm")
        prog = etcc(EBS / f"{name}.tc", OUT / "ebs" / name, "-lm")
        t_seq, out_seq = zip(*[wall([str(ref), *args]) for _ in range(reps)], strict=True)
        t1, out1 = zip(*[wall([etcrun, "-n", "1", str(prog), *args]) for _ in range(reps)],
                       strict=True)
        t2, out2 = zip(*[wall([etcrun, "-n", "2", str(prog), *args]) for _ in range(reps)],
                       strict=True)
        if not (out_seq[0] == out1[0] == out2[0]):
            raise BenchError(f"{name}: results differ: {out_seq[0]!r} {out1[0]!r} {out2[0]!r}")
        cap = capacity([str(ref), *args], 3 if quick else 3)[2]
        ts, e1, e2 = median_of(t_seq), median_of(t1), median_of(t2)
        sp = ts / e2
        rows.append([name, " ".join(args), ts, e1, e2, ts / e1, sp, cap, sp / cap])
        results[name] = {"seq": ts, "etc1": e1, "etc2": e2, "capacity": cap}
        names.append(name)
        sp_series.append(sp)
        cap_series.append(cap)
    sec.add("Wall time of whole runs (start-up included), median of 3; smp target; the "
            "result line of every run is checked equal to the reference's. Speedup = "
            "sequential reference / etc. Capacity = 2 x (one copy of the reference) / (two "
            "copies at once), this machine's bound on a two-way speedup for that program.", "")
    sec.add(*table(["program", "arguments", "seq C s", "etc 1 node s", "etc 2 nodes s",
                    "1-node efficiency", "2-node speedup", "capacity", "speedup / capacity"],
                   rows))
    plot = plot_bars("apps", "EBS: speedup on 2 nodes vs this machine's capacity", names,
                     {"etc 2 nodes": sp_series, "capacity (2 C copies)": cap_series},
                     "speedup over sequential C")
    if plot:
        sec.add(plot, "")
    sec.add(*peers(quick))
    sec.data = results
    return sec


def peers(quick: bool) -> list[str]:
    """fib and queens: etc against OpenMP tasks and TBB on 1 and 2 threads."""
    have_tbb = ensure_debian("/usr/include/tbb/task_group.h", "libtbb-dev")
    etcrun = str(BIN / "etcrun")
    cases = {"fib": ["32"] if quick else ["35"], "queens": ["13", "4"] if quick else ["15", "4"]}
    rows = []
    for name, args in cases.items():
        omp = cc([BENCH / "peers" / f"{name}_omp.c"], OUT / "peers" / f"{name}_omp", "-fopenmp")
        tbb = cc([BENCH / "peers" / f"{name}_tbb.cpp"], OUT / "peers" / f"{name}_tbb", "-ltbb",
                 cxx=True) if have_tbb else None
        ref = cc([EBS / "seq" / f"{name}.c"], OUT / "ebs" / f"{name}-seq")
        prog = etcc(EBS / f"{name}.tc", OUT / "ebs" / name)
        ts = median_of([wall([str(ref), *args])[0] for _ in range(3)])
        row: list[object] = [f"{name}({' '.join(args)})", ts]
        for threads in (1, 2):
            e = median_of([wall([etcrun, "-n", str(threads), str(prog), *args])[0]
                           for _ in range(3)])
            o = median_of([wall([str(omp), *args], {"OMP_NUM_THREADS": str(threads)})[0]
                           for _ in range(3)])
            b = median_of([wall([str(tbb), *args, str(threads)])[0] for _ in range(3)]) \
                if tbb else float("nan")
            row += [ts / e, ts / o, ts / b]
        rows.append(row)
    lines = ["**Against the peers** (same programs: fib with a task per call; queens with a "
             "task per safe square down to depth 4, then the same sequential search). "
             "Speedup over the sequential C reference, whole-run wall time, median of 3:", ""]
    lines += table(["program", "seq C s", "etc 1", "OpenMP 1", "TBB 1", "etc 2", "OpenMP 2",
                    "TBB 2"], rows)
    if not have_tbb:
        lines.append("TBB columns are NaN: libtbb-dev is not installed and needs root.")
    return lines
