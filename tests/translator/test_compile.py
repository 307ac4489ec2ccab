"""Every generated golden file compiles cleanly against the runtime's real header,
with gcc and with clang, in the normal and in the checking build."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests/golden"
INCLUDE = ROOT / "runtime/include"
C_FILES = sorted(GOLDEN.glob("*.c"))
FLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-c", "-o", "/dev/null",
         f"-I{INCLUDE}", f"-I{GOLDEN}/inc"]


def _compile(cc: str, c_file: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([cc, *FLAGS, *extra, str(c_file)], capture_output=True, text=True,
                          timeout=120, check=False, cwd=GOLDEN)


@pytest.mark.parametrize("c_file", C_FILES, ids=[c.stem for c in C_FILES])
@pytest.mark.parametrize("check", [False, True], ids=["normal", "checking"])
def test_gcc(c_file: Path, check: bool) -> None:
    proc = _compile("gcc", c_file, *(["-DETC_CHECK"] if check else []))
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("c_file", C_FILES, ids=[c.stem for c in C_FILES])
def test_clang(c_file: Path) -> None:
    if shutil.which("clang") is None:
        pytest.skip("clang is not installed (apt-get install clang); .ci/run installs it")
    proc = _compile("clang", c_file)
    assert proc.returncode == 0, proc.stderr


def test_there_are_generated_files() -> None:
    assert len(C_FILES) >= 10
