"""The etcpre command: --syntax-tree, diagnostics, and no traceback on any input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def etcpre(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "etcpre.cli.etcpre_cmd", *args],
                          capture_output=True, text=True, timeout=60, check=False,
                          cwd=cwd or ROOT)


def test_syntax_tree_of_a_sample() -> None:
    proc = etcpre("--syntax-tree", "samples/fib.tc")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("(translation_unit")
    assert "(threaded_function_definition" in out
    assert "(thread_label" in out and "(sync_slots_declaration" in out
    assert "ERROR" not in out and "MISSING" not in out


def test_syntax_tree_reports_errors_with_caret(tmp_path: Path) -> None:
    f = tmp_path / "bad.tc"
    f.write_text("THREADED f(void)\n{\n    int x = ;\n}\n")
    proc = etcpre("--syntax-tree", str(f))
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(f"{f}:3:13: error: syntax error"), lines
    assert lines[1] == "    int x = ;"
    assert lines[2] == "            ^"


@pytest.mark.parametrize("content", [b"", b"\x00\x01\x02garbage\xff\xfe", b"\xc3\x28 int x;",
                                     b"THREADED", b"}}}}((((", b"#include <nonexistent.h>\n"])
def test_no_traceback_on_odd_inputs(tmp_path: Path, content: bytes) -> None:
    f = tmp_path / "odd.tc"
    f.write_bytes(content)
    for args in (["--syntax-tree", str(f)], [str(f)]):
        proc = etcpre(*args)
        assert "Traceback" not in proc.stderr
        assert proc.returncode in (0, 1)
        if proc.returncode == 1:
            assert "error:" in proc.stderr


def test_empty_file_translates_to_just_the_prelude(tmp_path: Path) -> None:
    f = tmp_path / "empty.tc"
    f.write_bytes(b"")
    proc = etcpre(str(f))
    assert proc.returncode == 0
    assert '#include "etc.h"' in proc.stdout


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_bad_paths(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "nothing.tc" if kind == "missing" else tmp_path
    proc = etcpre(str(target))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    expected = "no such file" if kind == "missing" else "is a directory"
    assert f"{target}: error: {expected}" in proc.stderr


def test_unknown_option_is_a_clear_error() -> None:
    proc = etcpre("--frobnicate", "x.tc")
    assert proc.returncode == 2
    assert proc.stderr.startswith("etcpre: error:")


def test_output_file_and_plain_c_passes_through(tmp_path: Path) -> None:
    src = ROOT / "tests/golden/plain_c.tc"
    out = tmp_path / "plain.c"
    proc = etcpre(str(src), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    # plain C is copied byte for byte after the #line directive
    assert src.read_text() in out.read_text()
