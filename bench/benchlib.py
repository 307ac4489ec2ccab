"""Shared helpers of the benchmarks: building, running, timing, tables, plots.

Every figure is a ratio against a baseline measured in the same run (the machines are
shared and noisy); times are medians of several runs.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
OUT = BENCH / "out"  # binaries and scratch (not committed)
PLOTS = BENCH / "plots"
BIN = Path(sys.executable).parent
# an etc SYNC frame on the wire (net/common/wire.h): an 8-byte header and the slot's
# 8-byte address; the raw ping-pongs that etc's round trips are compared with send
# messages of its size
SYNC_FRAME_BYTES = 16


def goal_pairs(quick: bool) -> int:
    """How many pairs (an etc run and its baseline's, taken in turn) a goal's ratio is
    the median of. One pair's ratio swings from about 0.6x to 2x its median on this
    shared machine; medians of 9 moved by 0.1 (a block move's 0.78-0.88 of a raw
    stream) to 0.3 (an mpi round trip's 1.06-1.36x) between full runs."""
    return 5 if quick else 15


class BenchError(Exception):
    pass


@dataclass
class Section:
    """One part of the report."""

    title: str
    body: list[str] = field(default_factory=list)
    data: dict[str, object] = field(default_factory=dict)

    def add(self, *lines: str) -> None:
        self.body.extend(lines)

    def markdown(self) -> str:
        return f"## {self.title}\n\n" + "\n".join(self.body).rstrip() + "\n"


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    def cell(v: object) -> str:
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
        return str(v)
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return out + [""]


def run(cmd: Sequence[str], env: dict[str, str] | None = None, timeout: float = 600,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout,
                          check=False, env=env, cwd=cwd or ROOT)
    if proc.returncode != 0:
        raise BenchError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
                         f"{proc.stderr[-2000:]}")
    return proc


def etcc(src: Path, out: Path, *flags: str, env: dict[str, str] | None = None) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    run([str(BIN / "etcc"), "-O2", *flags, str(src), "-o", str(out)],
        env={**os.environ, **(env or {})})
    return out


def cc(srcs: Sequence[Path], out: Path, *flags: str, cxx: bool = False) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    compiler = os.environ.get("CXX", "g++") if cxx else os.environ.get("CC", "cc")
    run([compiler, "-O2", *map(str, srcs), "-o", str(out), *flags])
    return out


def etcrun(prog: Path, *args: str, nodes: int = 1, env: dict[str, str] | None = None,
           timeout: float = 600, cpus: str | None = None) -> subprocess.CompletedProcess[str]:
    """Runs prog on `nodes` nodes; with `cpus` (taskset's list), every node on those."""
    pin = ["taskset", "-c", cpus] if cpus else []
    return run([*pin, str(BIN / "etcrun"), "-n", str(nodes), str(prog), *args],
               env={**os.environ, **(env or {})}, timeout=timeout)


def taskset_works() -> bool:
    """Whether taskset can pin a process here (a container may forbid it)."""
    return subprocess.run(["taskset", "-c", "0", "true"], capture_output=True,
                          check=False).returncode == 0


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, list[float]]:
    """Median wall time of `fn` over `repeats` runs (seconds), and all samples."""
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples), samples


def median_of(values: Sequence[float]) -> float:
    return statistics.median(values)


def number(pattern: str, text: str) -> float:
    m = re.search(pattern, text)
    if not m:
        raise BenchError(f"no match for {pattern!r} in:\n{text[-1000:]}")
    return float(m.group(1))


def cpu_ghz() -> float:
    """The nominal clock, for converting ns to cycles (TSC rate on x86)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
        m = re.search(r"cpu MHz\s*:\s*([\d.]+)", text)
        if m:
            return float(m.group(1)) / 1000
    except OSError:
        pass
    return 1.0


def machine() -> dict[str, str]:
    info = {"host": platform.node(), "kernel": platform.release(),
            "python": platform.python_version(), "cpus": str(os.cpu_count())}
    try:
        text = Path("/proc/cpuinfo").read_text()
        m = re.search(r"model name\s*:\s*(.+)", text)
        info["cpu"] = m.group(1).strip() if m else "?"
    except OSError:
        info["cpu"] = "?"
    info["ghz"] = f"{cpu_ghz():.2f}"
    cc_v = subprocess.run(["cc", "--version"], capture_output=True, text=True, check=False)
    info["cc"] = cc_v.stdout.splitlines()[0] if cc_v.stdout else "?"
    return info


def ensure_package(module: str, pip_name: str) -> bool:
    """Installs a Python package into this venv for plotting (from PyPI)."""
    try:
        __import__(module)
        return True
    except ImportError:
        pass
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", pip_name],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return False
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def ensure_debian(header: str, package: str) -> bool:
    """The bench installs peers' libraries (TBB) from Debian when it may."""
    if Path(header).exists():
        return True
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return False
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "install", "-y", "-qq", package], capture_output=True,
                   env=env, check=False, timeout=900)
    return Path(header).exists()


def _pyplot() -> object | None:
    """matplotlib's pyplot without a display, installed into the venv if needed."""
    if not ensure_package("matplotlib", "matplotlib"):
        return None
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    PLOTS.mkdir(parents=True, exist_ok=True)
    return plt


def _save(plt: object, fig: object, name: str, title: str) -> str:
    fig.tight_layout()  # type: ignore[attr-defined]
    fig.savefig(PLOTS / f"{name}.png", dpi=110)  # type: ignore[attr-defined]
    plt.close(fig)  # type: ignore[attr-defined]
    return f"![{title}](plots/{name}.png)"


def plot_bars(name: str, title: str, labels: Sequence[str], series: dict[str, list[float]],
              ylabel: str, log: bool = False) -> str | None:
    """A grouped bar chart saved as bench/plots/NAME.png; returns its markdown."""
    plt = _pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(max(6, len(labels) * 0.9), 3.6))  # type: ignore[attr-defined]
    width = 0.8 / max(1, len(series))
    for i, (sname, values) in enumerate(series.items()):
        xs = [x + i * width for x in range(len(labels))]
        ax.bar(xs, values, width, label=sname)
    ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(labels))])
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=8)
    return _save(plt, fig, name, title)


def plot_lines(name: str, title: str, xs: Sequence[float], series: dict[str, list[float]],
               xlabel: str, ylabel: str, logx: bool = False) -> str | None:
    plt = _pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.6))  # type: ignore[attr-defined]
    for sname, values in series.items():
        ax.plot(xs, values, marker="o", label=sname)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if logx:
        ax.set_xscale("log")
    ax.legend(fontsize=8)
    return _save(plt, fig, name, title)


def wall(cmd: Sequence[str], env: dict[str, str] | None = None,
         timeout: float = 900) -> tuple[float, str]:
    """Wall time of a whole run (start-up included) and its stdout; a failure is fatal."""
    t0 = time.perf_counter()
    proc = run(cmd, env={**os.environ, **(env or {})}, timeout=timeout)
    return time.perf_counter() - t0, proc.stdout


def save_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def callgrind_lines(cmd: Sequence[str], env: dict[str, str] | None = None,
                    ) -> dict[tuple[str, str, int], int] | None:
    """Instructions a run executes, by (source file, function, line), from callgrind
    (None without valgrind). The program should be built with -ggdb so that code
    inlined from etc.h keeps its own file and line."""
    if shutil.which("valgrind") is None:
        return None
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / f"callgrind-{os.getpid()}.out"
    run(["valgrind", "--tool=callgrind", "--compress-pos=no", "--compress-strings=no",
         f"--callgrind-out-file={out}", *cmd], env={**os.environ, **(env or {})})
    costs = callgrind_costs(out)
    out.unlink()
    return costs


def callgrind_costs(out: Path) -> dict[tuple[str, str, int], int]:
    """A callgrind output's instructions by (source file, function, line), each line's
    own (not the calls it makes); written with --compress-pos=no --compress-strings=no."""
    costs: dict[tuple[str, str, int], int] = {}
    fl = fi = fn = ""
    skip_next = False  # the line after calls= is the call's inclusive cost
    for line in out.read_text().splitlines():
        if line[:1].isdigit():
            if skip_next:
                skip_next = False
                continue
            pos, ir = line.split()[:2]
            key = (fi or fl, fn, int(pos))
            costs[key] = costs.get(key, 0) + int(ir)
        elif line.startswith("fl="):
            fl, fi = line[3:], ""
        elif line.startswith(("fi=", "fe=")):
            fi = "" if line[3:] == fl else line[3:]
        elif line.startswith("fn="):
            fn, fi = line[3:], ""
        elif line.startswith("calls="):
            skip_next = True
    return costs


def per_unit(small: dict[tuple[str, str, int], int], large: dict[tuple[str, str, int], int],
             units: float) -> dict[tuple[str, str, int], float]:
    """Instructions per unit of work by line: the difference between a run and a
    larger one, over the units it adds (start-up and the end cancel out)."""
    return {k: (v - small.get(k, 0)) / units for k, v in large.items()
            if v != small.get(k, 0)}


def source_line(path: str, line: int) -> str:
    try:
        return Path(path).read_text().splitlines()[line - 1]
    except (OSError, IndexError):
        return ""


def etc_h_functions() -> dict[int, str]:
    """Line number of etc.h -> the inline function (or ETC_DATA_OP) it is in."""
    names: dict[int, str] = {}
    current = ""
    text = (ROOT / "runtime" / "include" / "etc.h").read_text().splitlines()
    for i, line in enumerate(text, 1):
        m = re.match(r"static inline [^(]*?\b(etc_\w+)\(", line)
        if m:
            current = m.group(1)
        elif line.startswith("#define ETC_DATA_OP"):
            current = "etc_data_sync"
        names[i] = current
    return names
