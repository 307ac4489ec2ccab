"""Work in two processes gives the C of one, byte for byte, on every sample, EBS
program and golden program it applies to: the lowering (lower.PARALLEL_FROM_BYTES: half
of the threaded functions in a forked child) and the clang view (clang_child.
SPLIT_FROM_BYTES: two children, each walking the functions of one part of the file).
A lowering child that fails, or a fork that fails, costs time, never the output."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from etcpre.diagnostics import DiagnosticSink
from etcpre.options import Options
from etcpre.passes import clang_child, forked, lower, parse
from etcpre.passes.text import WorkingText
from etcpre.source import SourceFile
from etcpre.translate import translate

from support import SAMPLES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
import regen  # noqa: E402

PROGRAMS = sorted(SAMPLES.glob("*.tc")) + sorted((SAMPLES / "ebs").glob("*.tc")) + [
    tc for tc in regen.cases() if tc.with_suffix(".c").exists()]


def _c(tc: Path, monkeypatch: pytest.MonkeyPatch, parallel: bool,
       split: bool = False) -> str:
    """The C of `tc`, lowered in two processes or one, with the clang view in two
    children or one."""
    monkeypatch.setattr(lower, "PARALLEL_FROM_BYTES", 0 if parallel else 1 << 62)
    monkeypatch.setattr(clang_child, "SPLIT_FROM_BYTES", 0 if split else 1 << 62)
    monkeypatch.setattr(forked, "usable_cpus", lambda: 2)
    # as regen.translate runs etcpre: -I inc in the golden folder, the file's own flags
    macros = tuple(f for f in regen.flags(tc) if f.startswith(("-D", "-U")))
    includes = (str(tc.parent / "inc"),) if tc.parent == regen.GOLDEN else ()
    options = Options(macros, includes)
    sink = DiagnosticSink()
    out = translate(SourceFile.load(str(tc)), options, sink)
    assert out is not None, sink.render()
    return out.text


def _definitions(tc: Path, kinds: tuple[str, ...]) -> int:
    """Function definitions of these kinds (prototypes do not count)."""
    tree = parse.tree(WorkingText.of(SourceFile.load(str(tc))))
    return sum(c.type in kinds for c in tree.root_node.children)


SPLIT = [tc for tc in PROGRAMS if _definitions(tc, ("threaded_function_definition",)) > 1]
CUT = [tc for tc in PROGRAMS
       if _definitions(tc, ("threaded_function_definition", "function_definition")) > 1]


class _Counted(forked.Forked[object]):
    started = 0

    def __init__(self, *args: object, **kwargs: object) -> None:
        type(self).started += 1
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("tc", SPLIT, ids=[str(t.relative_to(t.parents[1])) for t in SPLIT])
def test_two_processes_give_the_same_c(tc: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one = _c(tc, monkeypatch, parallel=False)
    _Counted.started = 0
    monkeypatch.setattr(forked, "Forked", _Counted)
    two = _c(tc, monkeypatch, parallel=True)
    assert _Counted.started >= 2, "the lowering did not fork a child (the clang view did)"
    assert two == one


def test_a_child_that_fails_is_made_up_for(monkeypatch: pytest.MonkeyPatch) -> None:
    tc = SAMPLES / "ebs" / "paraffins.tc"
    one = _c(tc, monkeypatch, parallel=False)

    def broken(gen: lower.GeneratedFunction) -> dict[str, object]:
        raise RuntimeError("a bug in the child")

    monkeypatch.setattr(lower, "_detached", broken)  # raises in the child only
    _Counted.started = 0
    monkeypatch.setattr(forked, "Forked", _Counted)
    assert _c(tc, monkeypatch, parallel=True) == one
    assert _Counted.started >= 2


def test_a_fork_that_fails_is_made_up_for(monkeypatch: pytest.MonkeyPatch) -> None:
    tc = SAMPLES / "ebs" / "tsp.tc"
    one = _c(tc, monkeypatch, parallel=False)
    real = forked.Forked
    refused = []

    def no_fork(work: object, *args: object) -> object:
        if args:  # the clang view's child (it passes its setup): let it be
            return real(work, *args)  # type: ignore[arg-type]
        refused.append(work)
        raise OSError("fork: resource temporarily unavailable")

    monkeypatch.setattr(forked, "Forked", no_fork)
    assert _c(tc, monkeypatch, parallel=True) == one
    assert refused


@pytest.mark.parametrize("tc", CUT, ids=[str(t.relative_to(t.parents[1])) for t in CUT])
def test_two_clang_children_give_the_same_c(tc: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "Forked", _Counted)
    _Counted.started = 0
    one = _c(tc, monkeypatch, parallel=False)
    rounds = _Counted.started  # one child a round (macro uses seen through add rounds)
    _Counted.started = 0
    two = _c(tc, monkeypatch, parallel=False, split=True)
    assert _Counted.started == 2 * rounds, "the clang view did not start two children"
    assert two == one


HEADER = """\
THREADED late(SPTR done, int v);
#define LATE_SIGNAL(s) RSYNC(s)
"""

# macro uses to see through in both parts, a header included between them, and the
# second part's first function declared before the cut
MIXED = """\
#include <stdio.h>
#define SIGNAL(s) RSYNC(s)
THREADED early(SPTR done, int v);
THREADED early(SPTR done, int v)
{
    int a = v + 1, b = 2 * v, c = a * b, d = c - a;
    int e = a + b + c + d, f = e * e - a * b, g = f / (a * a + 1);
    printf("early: %d %d %d %d %d %d %d\\n", a, b, c, d, e, f, g);
    SIGNAL(done);
    END_FUNCTION();
}
static int twice(int x) { return 2 * x; }
#include "late.h"
THREADED late(SPTR done, int v)
{
    LATE_SIGNAL(done);
    END_FUNCTION();
}
THREADED MAIN(void)
{
    SLOT SYNC_SLOTS[1];
    INIT_SYNC(0, 2, 2, 1);
    TOKEN(early, SLOT_ADR(0), twice(1));
    TOKEN(late, SLOT_ADR(0), 2);
    END_THREAD();
    THREAD_1:
    printf("done\\n");
    RETURN();
}
"""


def test_two_clang_children_see_macros_and_headers_as_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "late.h").write_text(HEADER)
    tc = tmp_path / "mixed.tc"
    tc.write_text(MIXED)
    monkeypatch.setattr(clang_child, "SPLIT_FROM_BYTES", 0)
    root = parse.tree(WorkingText.of(SourceFile.load(str(tc)))).root_node
    assert clang_child.split_at(root) == MIXED.encode().index(b"THREADED late(SPTR done, int v)\n{")
    one = _c(tc, monkeypatch, parallel=False)
    assert "SIGNAL(done) */" in one and "LATE_SIGNAL(done) */" in one  # seen through
    assert _c(tc, monkeypatch, parallel=False, split=True) == one
