"""libclang's PyPI wheel ships no builtin headers; etcpre must find stddef.h anyway."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from etcpre.passes import clang_view

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = """#include <stddef.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
size_t total(int n, ...) { va_list ap; size_t s = 0; bool any = false;
  va_start(ap, n); while (n--) { s += va_arg(ap, int); any = true; } va_end(ap);
  return any ? s : offsetof(struct { int a; int b; }, b); }
THREADED MAIN(void) { int *GLOBAL p = NULL; (void)p; printf("%zu\\n", total(2, 1, 2));
  END_FUNCTION(); }
"""


def _translate(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    f = tmp_path / "headers.tc"
    f.write_text(PROGRAM)
    return subprocess.run([sys.executable, "-m", "etcpre.cli.etcpre_cmd", str(f)],
                          capture_output=True, text=True, timeout=60, check=False,
                          cwd=ROOT, env=env)


def test_compiler_headers_are_found() -> None:
    found = clang_view.builtin_include_dir()
    assert found is not None and (Path(found) / "stddef.h").is_file()


def test_fallback_headers_work(tmp_path: Path) -> None:
    env = dict(os.environ, ETCPRE_BUILTIN_INCLUDE=clang_view.fallback_include_dir())
    proc = _translate(tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    assert "etc_user_main" in proc.stdout


def test_without_any_builtin_headers_the_error_is_clear(tmp_path: Path) -> None:
    env = dict(os.environ, ETCPRE_BUILTIN_INCLUDE=str(tmp_path / "none"))
    proc = _translate(tmp_path, env)
    assert proc.returncode == 1
    assert "headers.tc:1:10: error: 'stddef.h' file not found" in proc.stderr
    assert "Traceback" not in proc.stderr
