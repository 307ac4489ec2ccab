"""Every generated golden file compiles cleanly against the runtime's real header,
with gcc and with clang, in the normal and in the checking build (with the flags its
.tc file names)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
import regen  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = regen.GOLDEN
INCLUDE = ROOT / "runtime/include"
C_FILES = [tc.with_suffix(".c") for tc in regen.cases() if tc.with_suffix(".c").exists()]
IDS = [str(c.relative_to(GOLDEN).with_suffix("")) for c in C_FILES]
FLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-c", "-o", "/dev/null",
         f"-I{INCLUDE}", f"-I{GOLDEN}/inc"]


def _compile(cc: str, c_file: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    more = regen.flags(c_file.with_suffix(".tc"))
    return subprocess.run([cc, *FLAGS, *more, *extra, str(c_file)], capture_output=True,
                          text=True, timeout=120, check=False, cwd=c_file.parent)


@pytest.mark.parametrize("c_file", C_FILES, ids=IDS)
@pytest.mark.parametrize("check", [False, True], ids=["normal", "checking"])
def test_gcc(c_file: Path, check: bool) -> None:
    proc = _compile("gcc", c_file, *(["-DETC_CHECK"] if check else []))
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("c_file", C_FILES, ids=IDS)
def test_clang(c_file: Path) -> None:
    if shutil.which("clang") is None:
        pytest.skip("clang is not installed (apt-get install clang); .ci/run installs it")
    proc = _compile("clang", c_file)
    assert proc.returncode == 0, proc.stderr


def test_there_are_generated_files() -> None:
    assert len(C_FILES) >= 10
