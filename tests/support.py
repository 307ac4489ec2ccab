"""Helpers the tests share: running etcc and etcrun, where programs and samples are."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PROGRAMS = ROOT / "tests" / "e2e" / "programs"
SAMPLES = ROOT / "samples"

# `make test-asan` builds every program with ASan+UBSan against the sanitized runtime.
SANITIZE = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer",
            "-fno-sanitize-recover=undefined"] if os.environ.get("ETC_TEST_SANITIZE") else []


def etcc(*args: str, cwd: Path | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "etcc"), *args], capture_output=True, text=True,
                          timeout=300, check=False, cwd=cwd or ROOT, env=env)


def etcrun(*args: str, timeout: float = 120,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "etcrun"), *args], capture_output=True, text=True,
                          timeout=timeout, check=False, cwd=ROOT, env=env)


Builder = Callable[..., Path]  # the `build` fixture: build(source, *flags, target=)


def run(prog: Path, *args: str, nodes: int | None = None, timeout: float = 120,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs a program through etcrun (-n nodes when given)."""
    cmd = [*(["-n", str(nodes)] if nodes is not None else []), str(prog), *args]
    return etcrun(*cmd, timeout=timeout, env=env)
