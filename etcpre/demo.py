"""`make demo`: build samples/fib.tc with etcc and run it with etcrun on several nodes.

Every line it prints comes from the commands it runs; nothing is made up.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _run(cmd: list[str]) -> int:
    shown = [Path(cmd[0]).name if cmd[0].startswith(str(BIN)) else cmd[0], *cmd[1:]]
    print("$ " + " ".join(shlex.quote(c) for c in shown), flush=True)
    return subprocess.run(cmd, cwd=ROOT, check=False).returncode


def main() -> int:
    out = ROOT / "build" / "demo"
    out.mkdir(parents=True, exist_ok=True)
    prog = out / "fib"
    steps = [[str(BIN / "etcc"), "-O2", "samples/fib.tc", "-o", str(prog.relative_to(ROOT))]]
    for n in (1, 2, 4):
        steps.append([str(BIN / "etcrun"), "-n", str(n), str(prog.relative_to(ROOT)), "27"])
    for cmd in steps:
        rc = _run(cmd)
        if rc != 0:
            print(f"demo: error: the command above failed with status {rc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
