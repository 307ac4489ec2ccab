"""The checking build (etcc -g): misuse reported as `etc: error:` with the threaded
function and the .tc line; the normal build carries none of the checks."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from etcpre import toolchain

from support import PROGRAMS, TARGET_IDS, TARGETS, Builder, require, run

SRC = "check_misuse.tc"
TC = str(PROGRAMS / SRC)


def line_of(text: str) -> int:
    """The .tc line that holds `text` (once)."""
    lines = (PROGRAMS / SRC).read_text().splitlines()
    found = [i + 1 for i, line in enumerate(lines) if text in line]
    assert len(found) == 1, text
    return found[0]


@pytest.mark.parametrize(("what", "nodes", "at", "message"), [
    ("slot", 1, "SYNC(k);", "in threaded function 'MAIN': sync slot 5 is out of range "
                            "(SYNC_SLOTS[2]: slots 0 to 1)"),
    ("deref", 2, "v = *p;", "in threaded function 'MAIN': direct dereference of a GLOBAL "
                            "pointer to node 1 from node 0"),
    ("freed", 1, "RSYNC(late);", "RSYNC of sync slot 0 of 'short_lived', whose frame "
                                 "END_FUNCTION/RETURN already freed"),
    ("over", 1, "nothing left to absorb it",
     "SYNC: sync slot 0 of 'MAIN' signalled more times than it can absorb"),
])
def test_misuse_is_reported_with_its_line(build: Builder, what: str, nodes: int, at: str,
                                         message: str) -> None:
    line = line_of(at)
    proc = run(build(SRC, "-g"), what, nodes=nodes, timeout=30)
    assert proc.returncode == 1
    assert f"etc: error: node 0: {TC}:{line}: {message}" in proc.stderr, proc.stderr


def test_checking_build_runs_correct_programs_unchanged(build: Builder) -> None:
    proc = run(build(SRC, "-g"), "none", nodes=2)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "done none\n"


def test_a_local_dereference_is_allowed(build: Builder) -> None:
    proc = run(build(SRC, "-g"), "deref", nodes=1)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "read 5 directly\ndone deref\n"


def undefined_symbols(lib: Path) -> set[str]:
    out = subprocess.run(["nm", "-g", "--undefined-only", str(lib)], capture_output=True,
                         text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip().startswith("U ")}


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_the_normal_build_has_no_checks(target: toolchain.Target) -> None:
    require(target)
    lib = toolchain.home() / "build" / "runtime" / "lib" / f"libetc_{target.name}.a"
    symbols = subprocess.run(["nm", "-g", str(lib)], capture_output=True, text=True,
                             check=True).stdout
    assert "etc_check_" not in symbols
    checking = subprocess.run(["nm", "-g", str(lib).replace(".a", "_check.a")],
                              capture_output=True, text=True, check=True).stdout
    assert "etc_check_signal" in checking
    # the runtime's internal invariants (ETC_ASSERT) are in the debug build only
    assert "etc_assert_fail" not in undefined_symbols(lib)
    debug = toolchain.home() / "build" / "runtime-debug" / "lib" / f"libetc_{target.name}.a"
    assert "etc_assert_fail" in undefined_symbols(debug), f"{debug} checks nothing"
