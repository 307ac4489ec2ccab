"""The EARTH Benchmark Suite (samples/ebs): every Threaded-C program prints the same
one line as its sequential C reference (samples/ebs/seq/NAME.c) for the same
arguments, on every target of the target table (smp on 1, 2 and 4 nodes, mpi on 1, 2
and 3 ranks as a cluster runs it, the others on their largest node count), and in the
checking build (etcc -g) on 4 smp nodes; each with its defaults on 3 mpi ranks started
by a plain MPI launcher, without etcrun;
programs and references compile without warnings
(-Wall -Wextra). The references themselves are held to independently known results
(classic tables, or a small computation here) where that is cheap."""

from __future__ import annotations

import math
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from etcpre import toolchain

from support import (
    SAMPLES,
    TARGETS,
    Builder,
    node_counts,
    plain_mpi_launcher,
    require,
    run,
)

EBS = SAMPLES / "ebs"
NAMES = ["fib", "queens", "tsp", "knary", "matmul", "tomcatv", "spmd", "paraffins"]

# Small argument sets: each run takes well under a second. [] checks the defaults.
ARGS: dict[str, list[list[str]]] = {
    "fib": [[], ["0"], ["1"], ["2"], ["21"]],
    "queens": [[], ["1"], ["4", "9"], ["6", "2"], ["8", "0"], ["11", "3"]],
    "tsp": [[], ["1"], ["2", "5"], ["8", "3", "2"], ["11", "7", "11"], ["12", "2", "4"]],
    "knary": [[], ["1", "3", "1"], ["4", "3", "0", "50"], ["3", "5", "5", "10"],
              ["4", "6", "2", "300"]],
    "matmul": [[], ["1"], ["7"], ["100"]],
    "tomcatv": [[], ["3", "5"], ["4", "3", "1"], ["30", "10", "7"], ["40", "15", "100"],
                ["66", "0"]],
    "spmd": [[], ["0"], ["5", "2", "3", "1", "10"], ["3", "1", "2", "0", "5"],
             ["6", "3", "3", "1", "200"]],
    "paraffins": [[], ["1"], ["2"], ["12"], ["20"]],
}

# (id, target, etcc flags, nodes): every target of the target table on its largest
# node count (support.node_counts), smp and mpi on each of theirs, and the checking
# build on 4 smp nodes; the programs must compile without warnings
W = ("-Wall", "-Wextra", "-Werror")
EBS_NODES = {"smp": [1, 2, 4], "mpi": [1, 2, 3]}
CONFIGS = [(f"{t.name}{n}", t.name, W, n) for t in TARGETS
           for n in EBS_NODES.get(t.name, node_counts(t)[-1:])] + \
    [("check4", "smp", ("-g", *W), 4)]

CASES = [(name, args) for name in NAMES for args in ARGS[name]]


def case_id(name: str, args: list[str]) -> str:
    return "-".join([name, *args]) if args else f"{name}-defaults"


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory):
    """reference(name, args) -> the reference's stdout (built with cc once, run once)."""
    out = tmp_path_factory.mktemp("ebs-seq")
    cc = shlex.split(os.environ.get("CC") or "cc")
    binaries: dict[str, Path] = {}
    outputs: dict[tuple[str, tuple[str, ...]], str] = {}

    def _reference(name: str, args: list[str]) -> str:
        if name not in binaries:
            exe = out / name
            proc = subprocess.run([*cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
                                   str(EBS / "seq" / f"{name}.c"), "-o", str(exe)],
                                  capture_output=True, text=True, timeout=120, check=False)
            assert proc.returncode == 0 and proc.stderr == "", proc.stderr
            binaries[name] = exe
        key = (name, tuple(args))
        if key not in outputs:
            proc = subprocess.run([str(binaries[name]), *args], capture_output=True, text=True,
                                  timeout=60, check=False)
            assert proc.returncode == 0, proc.stderr
            assert proc.stdout.count("\n") == 1 and proc.stdout.endswith("\n"), proc.stdout
            outputs[key] = proc.stdout
        return outputs[key]

    return _reference


@pytest.mark.parametrize(("config", "target", "flags", "nodes"), CONFIGS,
                         ids=[c[0] for c in CONFIGS])
@pytest.mark.parametrize(("name", "args"), CASES, ids=[case_id(*c) for c in CASES])
def test_program_prints_the_reference_line(build: Builder, reference, name: str,
                                           args: list[str], config: str, target: str,
                                           flags: tuple[str, ...], nodes: int) -> None:
    want = reference(name, args)
    proc = run(build(EBS / f"{name}.tc", *flags, target=target), *args, nodes=nodes,
               timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "etc: error" not in proc.stderr, proc.stderr
    assert proc.stdout == want, f"{config}: {name} {' '.join(args)}\n{proc.stderr}"


@pytest.mark.parametrize("name", NAMES)
def test_program_under_a_plain_mpi_launcher(build: Builder, reference, name: str) -> None:
    # as a batch script runs it: `mpirun -n 3 ./prog`, no etcrun; the defaults
    require(toolchain.TARGETS["mpi"])
    cmd, env = plain_mpi_launcher(3)
    proc = subprocess.run([*cmd, str(build(EBS / f"{name}.tc", *W, target="mpi"))],
                          capture_output=True, text=True, timeout=120, env=env, check=False,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == reference(name, []), proc.stderr


# ---------------------------------------------------------------- the references

def ref_line(reference, name: str, *args: str) -> str:
    return reference(name, list(args)).rstrip("\n")


def test_fib_reference(reference) -> None:
    a, b = 0, 1
    fibs = []
    for _ in range(30):
        fibs.append(a)
        a, b = b, a + b
    for n in (0, 1, 2, 21, 29):
        assert ref_line(reference, "fib", str(n)) == f"fib({n}) = {fibs[n]}"


def test_queens_reference(reference) -> None:
    # OEIS A000170
    known = {1: 1, 2: 0, 3: 0, 4: 2, 5: 10, 6: 4, 7: 40, 8: 92, 9: 352, 10: 724,
             11: 2680, 12: 14200}
    for n, count in known.items():
        assert ref_line(reference, "queens", str(n)) == f"queens({n}) = {count}"


def test_paraffins_reference(reference) -> None:
    classic = [1, 1, 1, 2, 3, 5, 9, 18, 35, 75, 159, 355, 802, 1858, 4347, 10359, 24894,
               60523, 148284, 366319]
    assert ref_line(reference, "paraffins", "20") == \
        "paraffins(20) = " + " ".join(map(str, classic))


M64 = 2 ** 64


def lcg_work(node_id: int, grain: int) -> int:
    x = node_id % M64
    for _ in range(grain):
        x = (x * 6364136223846793005 + 1442695040888963407) % M64
    return x >> 48


def knary_tree(n: int, k: int, grain: int, root: int) -> tuple[int, int]:
    nodes, total, level = 0, 0, [root]
    for depth in range(n):
        nodes += len(level)
        total += sum(lcg_work(i, grain) for i in level)
        if depth < n - 1:
            level = [(i * k + c) % M64 for i in level for c in range(k)]
    return nodes, total


def test_knary_reference(reference) -> None:
    for n, k, r, grain in [(1, 3, 1, 7), (4, 3, 0, 50), (3, 5, 5, 10)]:
        nodes, total = knary_tree(n, k, grain, 0)
        assert ref_line(reference, "knary", str(n), str(k), str(r), str(grain)) == \
            f"knary({n},{k},{r}) = {nodes} nodes, checksum {total}"


def test_spmd_reference(reference) -> None:
    def fold(state: int, checksum: int) -> int:
        z = (state + 0x9e3779b97f4a7c15 + checksum) % M64
        z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) % M64
        z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) % M64
        return z ^ (z >> 31)

    for phases, n, k, r, grain in [(0, 3, 4, 0, 500), (5, 2, 3, 1, 10), (3, 1, 2, 0, 5)]:
        state, nodes = 1, 0
        for _ in range(phases):
            count, total = knary_tree(n, k, grain, state)
            nodes += count
            state = fold(state, total)
        assert ref_line(reference, "spmd", *map(str, (phases, n, k, r, grain))) == \
            f"spmd({phases},{n},{k},{r}) = {nodes} nodes, state {state:016x}"


def test_matmul_reference(reference) -> None:
    for n in (1, 7, 20):
        a = [[(i * 7 + j * 13) % 17 - 8 for j in range(n)] for i in range(n)]
        b = [[(i * 5 + j * 11) % 19 - 9 for j in range(n)] for i in range(n)]
        c = [[sum(a[i][k] * b[k][j] for k in range(n)) for j in range(n)] for i in range(n)]
        trace = sum(c[i][i] for i in range(n))
        checksum = sum(c[i][j] * ((i * 31 + j * 7) % 101 + 1)
                       for i in range(n) for j in range(n))
        assert ref_line(reference, "matmul", str(n)) == \
            f"matmul({n}) = trace {trace}, checksum {checksum}"


def tsp_instance(n: int, seed: int) -> list[list[int]]:
    s = (seed * 0x9e3779b97f4a7c15 + 1) % M64
    points = []
    for _ in range(n):
        s = (s * 6364136223846793005 + 1442695040888963407) % M64
        x = (s >> 33) % 1000
        s = (s * 6364136223846793005 + 1442695040888963407) % M64
        points.append((x, (s >> 33) % 1000))

    def rounded(v: int) -> int:  # the nearest integer to sqrt(v)
        r = math.isqrt(v)
        return r + 1 if v - r * r > r else r

    return [[rounded((p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2) for q in points] for p in points]


def held_karp(d: list[list[int]]) -> int:
    n = len(d)
    if n == 1:
        return 0
    best = {(1 << j, j): d[0][j] for j in range(1, n)}
    for _ in range(2, n):
        nxt: dict[tuple[int, int], int] = {}
        for (mask, j), v in best.items():
            for k in range(1, n):
                if not mask & (1 << k):
                    key = (mask | (1 << k), k)
                    w = v + d[j][k]
                    if w < nxt.get(key, w + 1):
                        nxt[key] = w
        best = nxt
    return min(v + d[j][0] for (_, j), v in best.items())


def test_tsp_reference_is_optimal(reference) -> None:
    for n, seed in [(1, 1), (2, 5), (5, 3), (8, 3), (9, 11)]:
        assert ref_line(reference, "tsp", str(n), str(seed)) == \
            f"tsp({n},{seed}) = {held_karp(tsp_instance(n, seed))}"


def test_tomcatv_reference_initial_mesh(reference) -> None:
    # no iteration: the residuals are 0 and the checksum is the initial mesh's,
    # summed as the program does (row by row, X then Y)
    for m in (3, 10, 66):
        checksum = 0.0
        for i in range(1, m - 1):
            row = 0.0
            for part in range(2):
                for j in range(m):
                    inside = 0 < i < m - 1 and 0 < j < m - 1
                    if part == 0:
                        v = j + ((((i * 37 + j * 91 + 17) % 23) - 11) * 0.03 if inside else 0.0)
                    else:
                        v = i + ((((i * 53 + j * 29 + 5) % 19) - 9) * 0.035 if inside else 0.0)
                    row += v
            checksum += row
        assert ref_line(reference, "tomcatv", str(m), "0") == \
            f"tomcatv({m},0) = errx 0.000000e+00 erry 0.000000e+00 checksum {checksum:.10e}"


def test_tomcatv_reference_converges(reference) -> None:
    errs = []
    for iters in (1, 10, 100):
        line = ref_line(reference, "tomcatv", "33", str(iters))
        got = re.fullmatch(r"tomcatv\(33,\d+\) = errx (\S+) erry (\S+) checksum (\S+)", line)
        assert got, line
        errs.append(max(float(got[1]), float(got[2])))
    assert errs[0] > errs[1] > errs[2] > 0, errs


# ---------------------------------------------------------------- documentation

def header_benchmark_size(name: str) -> str:
    text = (EBS / f"{name}.tc").read_text()
    got = re.search(r"Benchmark size: (" + name + r"(?: \d+)*)", text)
    assert got, f"{name}.tc: no 'Benchmark size:' line"
    return got[1]


def test_every_program_documents_its_benchmark_size() -> None:
    readme = (EBS / "README.md").read_text()
    for name in NAMES:
        size = header_benchmark_size(name)
        assert f"`{size}`" in readme, f"README.md does not give {name}'s size `{size}`"
        text = (EBS / f"{name}.tc").read_text()
        assert "Usage:" in text.split("*/")[0], f"{name}.tc: the header has no Usage line"
