"""The clang child (etcpre/passes/clang_child.py): libclang reads the file in a forked
process while etcpre goes on. etcpre itself never loads libclang, and a child that dies
is an error at the file, never a traceback or a hang."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """\
#include <stdio.h>
#define TWICE(x) ((x) * 2)
THREADED leaf(SPTR done, int v, int *GLOBAL out)
{
    DATA_RSYNC_L(TWICE(v), out, done);
    END_FUNCTION();
}
THREADED MAIN(int argc, char **argv)
{
    SLOT SYNC_SLOTS[1];
    int r;
    INIT_SYNC(0, 1, 1, 1);
    INVOKE(NODE_ID, leaf, SLOT_ADR(0), argc, TO_GLOBAL(&r));
    END_THREAD();
    THREAD_1:
    printf("%d\\n", r);
    RETURN();
}
"""


def run_etcpre(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    tc = tmp_path / "p.tc"
    tc.write_text(PROGRAM)
    return subprocess.run([sys.executable, "-c", script, str(tc), str(tmp_path / "p.c")],
                          capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)


def test_etcpre_loads_libclang_only_in_its_child(tmp_path: Path) -> None:
    # the point of the child: this process loads the later passes meanwhile
    script = ("import sys\nfrom etcpre.cli import etcpre_cmd\n"
              "rc = etcpre_cmd.main([sys.argv[1], '-o', sys.argv[2]])\n"
              "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'clang' or m in "
              "('etcpre.passes.clang_view', 'etcpre.passes.cursor_walk'))\n"
              "print(rc, loaded)\n")
    proc = run_etcpre(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0 []", proc.stdout
    assert "etc_invoke" in (tmp_path / "p.c").read_text()


MAIN = ("from etcpre.cli import etcpre_cmd\n"
        "sys.exit(etcpre_cmd.main([sys.argv[1], '-o', sys.argv[2]]))\n")


def assert_error_at_the_file(setup: str, message: str, tmp_path: Path) -> None:
    """etcpre, after `setup` has run in its process, fails with `message` at the file's
    first line: no traceback, no output file."""
    proc = run_etcpre(setup + MAIN, tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"{tmp_path / 'p.tc'}:1:1: error: {message}"), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "p.c").exists()


def test_a_child_killed_by_a_signal_is_an_error_at_the_file(tmp_path: Path) -> None:
    assert_error_at_the_file(
        "import os, signal, sys\nfrom etcpre.passes import clang_view\n"
        "clang_view.collect = lambda *a: os.kill(os.getpid(), signal.SIGSEGV)\n",
        "libclang crashed (SIGSEGV) while reading the file", tmp_path)


def test_a_fork_that_fails_is_an_error_at_the_file(tmp_path: Path) -> None:
    assert_error_at_the_file(
        "import errno, os, sys\n"
        "def no_fork():\n    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))\n"
        "os.fork = no_fork\n",
        "cannot start the process that runs libclang: Resource temporarily unavailable",
        tmp_path)
