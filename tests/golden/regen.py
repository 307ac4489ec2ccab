"""Regenerate the translator's golden files: `make golden` (review the diff after).

For each tests/golden/NAME.tc: NAME.c is etcpre's output (absent when translation
fails) and NAME.err its diagnostics (absent when there are none). etcpre runs inside
tests/golden/ on the bare file name, so paths in #line and messages are stable.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent


def translate(tc: Path) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "etcpre.cli.etcpre_cmd", tc.name, "-I", "inc"],
        cwd=GOLDEN, capture_output=True, text=True, timeout=60, check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr


def main() -> int:
    for tc in sorted(GOLDEN.glob("*.tc")):
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
        print(f"{tc.name}: exit {rc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
