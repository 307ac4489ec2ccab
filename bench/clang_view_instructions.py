"""Instructions the clang view costs: callgrind's count of one `_Collector.run()` (the
work of the forked child: libclang's parse and the walk over every function) on the
generated programs of the translator benchmark (or on the .tc files given), in
process. Counts, unlike seconds, do not move with the machine's load. For profiling
work; `make bench` does not run it.

One run's count is the difference between a process that runs it twice and one that
runs it once (start-up, imports and the tree-sitter parse cancel out).

Usage: python bench/clang_view_instructions.py [FILE.tc ...]
       python bench/clang_view_instructions.py --runs N FILE.tc   (the measured process)
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import translator  # noqa: E402
from benchlib import OUT  # noqa: E402

from etcpre.options import Options  # noqa: E402
from etcpre.passes import clang_view, parse  # noqa: E402
from etcpre.passes.text import WorkingText  # noqa: E402
from etcpre.source import SourceFile  # noqa: E402


def run_collector(path: Path, runs: int) -> None:
    working = WorkingText.of(SourceFile.load(str(path)))
    tree = parse.tree(working)
    name = os.path.abspath(path)
    args = clang_view.clang_args(Options(), os.path.dirname(name))
    gc.disable()  # as translate() runs the passes
    for _ in range(runs):
        clang_view._Collector(name, working.data, tree.root_node, args).run()


def instructions(path: Path, runs: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        env = dict(os.environ, LIBCLANG_NOTHREADS="1")  # as in the clang child
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        sys.executable, __file__, "--runs", str(runs), str(path)],
                       check=True, capture_output=True, env=env)
        found = re.search(r"^summary: (\d+)", out.read_text(), re.MULTILINE)
        if found is None:
            raise SystemExit(f"no summary in callgrind's output for {path}")
        return int(found.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("files", nargs="*", type=Path)
    opts = ap.parse_args()
    if opts.runs is not None:
        for f in opts.files:
            run_collector(f, opts.runs)
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("clang_view_instructions: error: valgrind is not installed")
    files = opts.files or [translator.generate(5_000, OUT / "translator" / "prog5k.tc"),
                           translator.generate_large(5_000, OUT / "translator" / "large5k.tc")]
    for f in files:
        one, two = instructions(f, 1), instructions(f, 2)
        print(f"{f.name}: one clang view {(two - one) / 1e6:,.0f} M instructions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
