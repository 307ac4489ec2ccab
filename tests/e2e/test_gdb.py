"""Debugging with gdb (docs/debugging.md): the seq target and one smp node run in the
program's own process; a breakpoint on a .tc line stops in the thread that holds it;
etc-gdb.py, loaded with `gdb -x "$(etcc --gdb-script)"`, makes `print` find the locals
of the threaded function and prints GLOBAL pointers as node:address. Run under gdb
in batch mode; skipped where gdb is not installed (.ci/run installs it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from support import BIN, PROGRAMS, Builder

pytestmark = pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")

SRC = "debug_me.tc"


def break_line() -> int:
    lines = (PROGRAMS / SRC).read_text().splitlines()
    return next(i + 1 for i, s in enumerate(lines) if "BREAK here" in s)


def gdb(prog: str, *commands: str, env: dict[str, str] | None = None) -> str:
    script = subprocess.run([str(BIN / "etcc"), "--gdb-script"], capture_output=True, text=True,
                            check=True).stdout.strip()
    args = ["gdb", "-batch", "-nx", "-x", script]
    for c in commands:
        args += ["-ex", c]
    proc = subprocess.run([*args, "--args", prog, "6"], capture_output=True, text=True,
                          timeout=120, check=False, env=env)
    return proc.stdout + proc.stderr


@pytest.mark.parametrize(("target", "nodes"), [("seq", None), ("smp", "1")])
def test_print_finds_the_threads_locals(build: Builder, target: str, nodes: str | None) -> None:
    prog = build(SRC, "-g", "-O0", target=target)
    env = {**os.environ, **({"ETC_NODES": nodes} if nodes else {})}
    out = gdb(str(prog), f'break {SRC}:{break_line()} if $etc("n") == 4', "run",
              "print n", "print r1 + r2", "print/x r1", "print calls > 0", "print result",
              "etc-where", "etc-locals", "bt full 1", "delete", "continue", env=env)
    assert "Breakpoint 1, _fib_1 " in out and f"{SRC}:{break_line()}" in out, out
    values = re.findall(r"^\$\d+ = (.*)$", out, re.MULTILINE)
    assert values[:4] == ["4", "3", "0x2", "1"], out  # n, r1 + r2 = fib(3) + fib(2), ...
    assert re.fullmatch(r"0:0x[0-9a-f]+", values[4]), out  # a GLOBAL pointer: node:address
    assert "node 0 of 1, thread 1 of 'fib'" in out, out
    assert re.search(r"^n = 4$", out, re.MULTILINE) and re.search(r"^r1 = 2$", out, re.MULTILINE)
    assert re.search(r"^\s+r2 = 1$", out, re.MULTILINE), out  # bt full: the frame's fields
    assert "fib(6) = 8" in out, out


def test_print_outside_threads_is_gdbs_own(build: Builder) -> None:
    prog = build(SRC, "-g", "-O0", target="seq")
    out = gdb(str(prog), "break main", "run", "print 6 * 7", "print/x 255", "print",
              "print -pretty -- 1 + 1", "etc-where")
    values = re.findall(r"^\$\d+ = (.*)$", out, re.MULTILINE)
    assert values == ["42", "0xff", "255", "2"], out  # a bare print: the last value
    assert "not in a thread of a threaded function" in out, out


def test_etcc_names_the_script() -> None:
    proc = subprocess.run([str(BIN / "etcc"), "--gdb-script"], capture_output=True, text=True,
                          check=True)
    path = proc.stdout.strip()
    assert path.endswith("etc-gdb.py") and os.path.isfile(path), path
