"""Regenerate the translator's golden files: `make golden` (review the diff after).

For each tests/golden/NAME.tc (and each .tc of a project in tests/golden/projects/):
NAME.c is etcpre's output (absent when translation fails) and NAME.err its diagnostics
(absent when there are none). etcpre runs inside the file's directory on the bare file
name, so paths in #line and messages are stable. A line `// flags: -DX ...` in the file
gives etcpre (and etcc, in the e2e tests) more options.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent
PROJECTS = GOLDEN / "projects"
_FLAGS = re.compile(r"^// flags: (.*)$", re.MULTILINE)


def cases() -> list[Path]:
    return sorted(GOLDEN.glob("*.tc")) + sorted(PROJECTS.glob("*/*.tc"))


def flags(tc: Path) -> list[str]:
    m = _FLAGS.search(tc.read_text(encoding="utf-8", errors="replace"))
    return shlex.split(m.group(1)) if m else []


def translate(tc: Path) -> tuple[int, str, str]:
    includes = ["-I", "inc"] if tc.parent == GOLDEN else []
    proc = subprocess.run(
        [sys.executable, "-m", "etcpre.cli.etcpre_cmd", tc.name, *includes, *flags(tc)],
        cwd=tc.parent, capture_output=True, text=True, timeout=120, check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr


def main() -> int:
    for tc in cases():
        rc, out, err = translate(tc)
        c_file, err_file = tc.with_suffix(".c"), tc.with_suffix(".err")
        if rc == 0:
            c_file.write_text(out)
        elif c_file.exists():
            c_file.unlink()
        if err:
            err_file.write_text(err)
        elif err_file.exists():
            err_file.unlink()
        print(f"{tc.relative_to(GOLDEN)}: exit {rc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
