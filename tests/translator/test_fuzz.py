"""Mutated samples never produce a traceback or a hang (bounded to seconds here;
`make fuzz` runs longer)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FUZZ = Path(__file__).resolve().parent / "fuzz.py"


def test_mutation_fuzz_no_crash_no_hang() -> None:
    # A separate process, so that a hang is caught by the timeout and reported.
    proc = subprocess.run([sys.executable, str(FUZZ), "6", "20261122"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 crashes" in proc.stdout
