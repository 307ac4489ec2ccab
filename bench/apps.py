"""The EARTH Benchmark Suite (samples/ebs/, thesis Table 4.1) against its sequential
C references, and fib and queens against OpenMP tasks and TBB (issue 6).

Every program runs at a size where its sequential reference takes about a second.
Baselines in the same run: the sequential reference (speedups), and this machine's
two-way capacity for that very program: two copies of the reference at once against
one (its CPUs behave like SMT siblings, so two-way speedups are bounded by this)."""

from __future__ import annotations

import json
import subprocess
import time

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
    number,
    plot_bars,
    run,
    table,
    wall,
)

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
GOAL = 0.85  # issue 19: each program's 2-node speedup at least this much of the capacity
LOOPS_ALIGNED = "-falign-loops=32"  # another code placement for the programs below GOAL ...
# ... that lose this much on one node already: more than this machine's run-to-run
# noise of a 1-node efficiency
ONE_NODE_LOSS = 0.90


def bench(quick: bool) -> Section:
    reps = 3
    sec = Section("Applications: the EARTH Benchmark Suite (issue 6)")
    rows, results = [], {}
    names, sp_series, cap_series = [], [], []
    for name, (full, small) in SIZES.items():
        args = small if quick else full
        ts, e1, e2, cap, ratio = rounds(name, args, reps)
        sp = ts / e2
        rows.append([name, " ".join(args), ts, e1, e2, ts / e1, sp, cap, ratio])
        results[name] = {"seq": ts, "etc1": e1, "etc2": e2, "capacity": cap}
        names.append(name)
        sp_series.append(sp)
        cap_series.append(cap)
    sec.add(f"Wall time of whole runs (start-up included), median of {reps} rounds; smp "
            "target; the result line of every run is checked equal to the reference's. "
            "Speedup = sequential reference / etc. Capacity = 2 x (one copy of the "
            "reference) / (two copies at once), this machine's bound on a two-way speedup "
            "for that program. Each round runs the reference, etc on 1 and 2 nodes and the "
            "two copies in turn; *speedup / capacity* is the median of the rounds' own "
            "ratios.", "")
    sec.add(*table(["program", "arguments", "seq C s", "etc 1 node s", "etc 2 nodes s",
                    "1-node efficiency", "2-node speedup", "capacity", "speedup / capacity"],
                   rows))
    plot = plot_bars("apps", "EBS: speedup on 2 nodes vs this machine's capacity", names,
                     {"etc 2 nodes": sp_series, "capacity (2 C copies)": cap_series},
                     "speedup over sequential C")
    if plot:
        sec.add(plot, "")
    sec.add(*memory_bound(results["matmul"], SIZES["matmul"][1 if quick else 0]))
    sec.add(*bounds([r for r in rows if r[8] < GOAL], quick))
    sec.add(*peers(quick))
    sec.data = results
    return sec


def rounds(name: str, args: list[str], reps: int,
           *flags: str) -> tuple[float, float, float, float, float]:
    """The reference, etc on 1 and 2 nodes and two copies of the reference at once, in
    turn, `reps` times (both programs built with `flags` too): medians of the times,
    the capacity, and the median of the rounds' own speedup / capacity."""
    tag = "".join(f.strip("-").replace("=", "") for f in flags)
    ref = [str(cc([EBS / "seq" / f"{name}.c"], OUT / "ebs" / f"{name}-seq{tag}", "-lm",
                  *flags)), *args]
    prog = str(etcc(EBS / f"{name}.tc", OUT / "ebs" / f"{name}{tag}", "-lm", *flags))
    etcrun = str(BIN / "etcrun")
    # in turn: on this shared machine a memory-bound program's time moves 2x between
    # minutes, and each round's ratios see one moment
    t_seq, t1, t2, t_pair, ratios = [], [], [], [], []
    for _ in range(reps):
        ts, out_seq = wall(ref)
        e1, out1 = wall([etcrun, "-n", "1", prog, *args])
        e2, out2 = wall([etcrun, "-n", "2", prog, *args])
        if not (out_seq == out1 == out2):
            raise BenchError(f"{name}: results differ: {out_seq!r} {out1!r} {out2!r}")
        tp = two_at_once(ref)[0]
        t_seq.append(ts)
        t1.append(e1)
        t2.append(e2)
        t_pair.append(tp)
        ratios.append((ts / e2) / (2 * ts / tp))
    ts = median_of(t_seq)
    return ts, median_of(t1), median_of(t2), 2 * ts / median_of(t_pair), median_of(ratios)


def two_at_once(cmd: list[str]) -> tuple[float, list[str]]:
    """Wall time and standard output of two copies of a program started at once."""
    t0 = time.perf_counter()
    ps = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
          for _ in range(2)]
    outs = [p.communicate()[0] for p in ps]
    elapsed = time.perf_counter() - t0
    for p in ps:
        if p.returncode != 0:
            raise BenchError(f"{' '.join(cmd)} failed (status {p.returncode})")
    return elapsed, outs


def memory_bound(mm: dict[str, float], args: list[str]) -> list[str]:
    """matmul streams all of B from memory for every row of C: what it reads per
    second against STREAM's copy on this machine, one copy and two at once."""
    prog = str(cc([BENCH / "peers" / "stream_copy.c"], OUT / "peers" / "stream_copy"))
    cmd = [prog, "128", "9"]
    one, two = [], []
    for _ in range(5):
        one.append(float(run(cmd).stdout))
        two.append(sum(float(out) for out in two_at_once(cmd)[1]))
    bw1, bw2 = median_of(one), median_of(two)
    n = int(args[0])
    reads = n ** 3 * 8 / mm["seq"] / 1e6  # B once per row of C, in MB/s
    shared = (f"Memory is a shared bound here: two copies of matmul cannot run at twice the "
              f"speed of one, and the capacity above ({mm['capacity']:.2f}, two copies of the "
              "reference at once) already includes it." if bw2 / bw1 < 1.9 else
              "Memory bandwidth did not bound two streams in this run; etc on 2 nodes runs "
              "two (node 1 computes from its own copy of B).")
    return [f"**matmul and memory bandwidth.** matmul({n}) reads all of B ({n * n * 8 / 2**20:.1f}"
            f" MiB, far more than the last-level cache) once for every row of C: the "
            f"reference reads **{reads:,.0f} MB/s** from memory, {reads / bw1:.2f} of what "
            f"STREAM's copy kernel moves on one CPU here ({bw1:,.0f} MB/s, reads plus "
            f"writes; `bench/peers/stream_copy.c`, 2 x 128 MiB arrays, median of 9 passes, "
            f"median of 5 runs in this run). Two copies at once move {bw2:,.0f} MB/s in "
            f"all, **{bw2 / bw1:.2f}x** one. {shared}", ""]


def trace_bound(name: str, args: list[str]) -> tuple[float, float, float]:
    """Parallelism (work / span, in the threads' own times), the speedup a greedy
    scheduler is sure to reach on two processors, work / (work/2 + span) (Brent),
    and the longest thread as a share of work/2, from a traced run on 2 nodes."""
    prog = etcc(EBS / f"{name}.tc", OUT / "ebs" / f"{name}-trace", "-lm", "-trace")
    trace = OUT / "ebs" / f"{name}-{'-'.join(args)}.json"
    run([str(BIN / "etcrun"), "--trace", str(trace), "-n", "2", str(prog), *args])
    summary = run([str(BIN / "etctrace"), "summary", str(trace)]).stdout
    parallelism = number(r"(?m)^run,[0-9.e+-]+,[0-9.e+-]+,([0-9.e+-]+),", summary)
    greedy = number(r"(?m)^2,(?:[^,\n]*,){4}([0-9.e+-]+)\s*$", summary)
    work = number(r"(?m)^run,([0-9.e+-]+),", summary)
    events = json.loads(trace.read_text())["traceEvents"]
    longest = max(e["dur"] for e in events if e.get("ph") == "X"
                  and not str(e.get("name", "")).startswith("idle")) / 1e6
    return parallelism, greedy, longest / (work / 2)


def idle_share(name: str, args: list[str]) -> float:
    """The share of the two nodes' time spent idle (`etcc -prof`), median of 3."""
    prog = etcc(EBS / f"{name}.tc", OUT / "ebs" / f"{name}-prof", "-lm", "-prof")
    return median_of([number(r"(?m)^idle +[0-9.]+ +\d+% +[0-9.]+ +\d+% +[0-9.]+ +(\d+)%",
                             run([str(BIN / "etcrun"), "-n", "2", str(prog), *args]).stderr)
                      / 100 for _ in range(3)])


def bounds(below: list[list[object]], quick: bool) -> list[str]:
    """Where the programs under the goal lose: extra work, too little parallelism, or
    nodes idle while there is work."""
    if not below:
        return [f"Every program reaches {GOAL} of the capacity.", ""]
    lines = [f"**Below {GOAL} of the capacity**: where each loses. A traced run on 2 nodes "
             "(`etcc -trace`, `etctrace summary`) gives the program's parallelism (work / "
             "span, in the threads' own times) and the speedup any greedy scheduler is sure "
             "to reach on two processors, work / (work/2 + span) (Brent); a profiled run "
             "(`etcc -prof`) the share of the nodes' time spent idle. A measured speedup "
             "below the greedy guarantee means nodes idled while work waited elsewhere; "
             "the longest single thread, against the half of the work each node should "
             "do, says how long a busy node may be deaf to a request for work.", ""]
    rows = []
    for row in below:
        name, args = str(row[0]), str(row[1]).split()
        variants = [args]
        if name == "tsp":  # its third argument is the depth where tokens go sequential
            # one depth more: each further one multiplies the trace's size, and the
            # time to take and summarise it, several times over
            variants.append([*args[:2], str(int(args[2]) + 1)])
        for v in variants:
            parallelism, greedy, longest = trace_bound(name, v)
            measured = row[8] if v == args else two_nodes(name, v, row)
            rows.append([name, " ".join(v), parallelism, greedy / 2, longest,
                         idle_share(name, v), measured])
    lines += table(["program", "arguments", "parallelism", "greedy guarantee / 2",
                    "longest thread / (work/2)", "idle share on 2 nodes",
                    "measured speedup / capacity"], rows)
    if any(r[0] == "tsp" for r in below):
        lines += tsp_work(quick)
    # where a program loses on one node already; fib's loss is a token per call (the
    # per-TOKEN section), not where code lies
    lines += placement([r for r in below
                        if r[0] != "fib" and float(str(r[5])) < ONE_NODE_LOSS], quick)
    return lines


def placement(below: list[list[object]], quick: bool) -> list[str]:
    """The programs below the goal with both builds' loops aligned otherwise: a loss
    that moves with it is where the compiler placed a hot loop, not the runtime."""
    if not below:
        return []
    rows = []
    for row in below:
        name = str(row[0])
        ts, e1, _, _, ratio = rounds(name, str(row[1]).split(), 3, LOOPS_ALIGNED)
        rows += [[name, "default", row[5], row[8]],
                 [name, f"`{LOOPS_ALIGNED}`, both builds", ts / e1, ratio]]
    return ["**Code placement.** The same programs and their references built again with "
            "loops aligned to 32 bytes (gcc's -O2 aligns them to 16), measured as above "
            "(3 rounds). Where the 1-node efficiency moves with the alignment, the 1-node "
            "loss is where the compiler placed the hot loop in each build, not work the "
            "runtime adds:", "",
            *table(["program", "loops", "1-node efficiency", "speedup / capacity"], rows)]


def two_nodes(name: str, args: list[str], row: list[object]) -> float:
    """Speedup / capacity of other arguments, against the row's sequential time and
    capacity (the same computation: tsp's depth does not change the reference's)."""
    prog = str(OUT / "ebs" / name)
    e2 = median_of([wall([str(BIN / "etcrun"), "-n", "2", prog, *args])[0]
                    for _ in range(3)])
    return float(row[2]) / e2 / float(row[7])  # type: ignore[arg-type]


def tsp_work(quick: bool) -> list[str]:
    """tsp on 1 and 2 nodes: the partial tours searched (more on 2: a bound came late)."""
    full, small = SIZES["tsp"]
    args = small if quick else full
    prog = OUT / "ebs" / "tsp"
    counts = {n: median_of([number(r"tsp: (\d+) partial tours searched",
                                   run([str(BIN / "etcrun"), "-n", str(n), str(prog),
                                        *args]).stderr) for _ in range(3)])
              for n in (1, 2)}
    return [f"tsp {' '.join(args)} searches {counts[1]:,.0f} partial tours on 1 node and "
            f"{counts[2]:,.0f} on 2 (median of 3): {counts[2] / counts[1]:.3f}x the work. At "
            "1.00 the bound each token carries and the broadcast improvements keep two nodes "
            "from searching more than one, and what is lost is idle time: an idle node asks "
            "for work and a busy one answers at its next thread boundary, while a tsp token "
            "below the depth argument is one sequential leaf search, a long thread; a "
            "greater depth makes the leaves shorter (and the tokens more).", ""]


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
