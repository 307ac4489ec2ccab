"""A bounded run of the structure-aware fuzzer (`make fuzz` runs 2,000 mutants): no
traceback, crash or hang of etcpre, and whatever it accepts compiles or fails in cc
only for the user's own error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FUZZ = Path(__file__).resolve().parent / "fuzz.py"


def test_structure_aware_fuzz_keeps_the_invariant(tmp_path: Path) -> None:
    # a separate process, so that a hang is caught by the timeout and reported
    proc = subprocess.run([sys.executable, str(FUZZ), "--count", "40", "--seed", "20261122",
                           "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "fuzz: 40 mutants" in proc.stdout and "0 broke the invariant" in proc.stdout
