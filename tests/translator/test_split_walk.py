"""The clang view's walk in two processes (clang_view.WALK_SPLIT_FROM_FUNCTIONS: after
libclang's parse, a child of the clang child walks the later half of the file's
functions) gives the C of one walk, byte for byte, and the same diagnostics, on every
sample, EBS and golden program (errors too) with more than one function definition;
and a child that fails costs time, never the output."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from etcpre.diagnostics import DiagnosticSink
from etcpre.options import Options
from etcpre.passes import clang_view, forked, lower, parse
from etcpre.passes.text import WorkingText
from etcpre.source import SourceFile
from etcpre.translate import translate

from support import SAMPLES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
import regen  # noqa: E402

PROGRAMS = sorted(SAMPLES.glob("*.tc")) + sorted((SAMPLES / "ebs").glob("*.tc")) + \
    regen.cases()


def _definitions(tc: Path) -> int:
    tree = parse.tree(WorkingText.of(SourceFile.load(str(tc))))
    return sum(c.type in ("function_definition", "threaded_function_definition")
               for c in tree.root_node.children)


SPLIT = [tc for tc in PROGRAMS if _definitions(tc) > 1]
WALK_IN_CHILD = clang_view._Collector._walk_in_child


def _c(tc: Path, monkeypatch: pytest.MonkeyPatch, split: bool, log: Path) -> str:
    """The C of tc, or its diagnostics; the clang child (forked after these settings)
    writes a line to `log` each time it splits its walk."""
    monkeypatch.setattr(clang_view, "WALK_SPLIT_FROM_FUNCTIONS", 2 if split else 1 << 30)
    monkeypatch.setattr(clang_view, "WALK_SPLIT_FROM_BYTES", 0)
    monkeypatch.setattr(forked, "usable_cpus", lambda: 2)
    monkeypatch.setattr(lower, "PARALLEL_FROM_BYTES", 1 << 62)  # one lowering process
    def logged(self: clang_view._Collector, tops: list[object]) -> object:
        with log.open("a") as f:
            f.write(f"{len(tops)}\n")
        return WALK_IN_CHILD(self, tops)  # type: ignore[arg-type]

    monkeypatch.setattr(clang_view._Collector, "_walk_in_child", logged)
    macros = tuple(f for f in regen.flags(tc) if f.startswith(("-D", "-U")))
    includes = (str(tc.parent / "inc"),) if tc.parent == regen.GOLDEN else ()
    sink = DiagnosticSink()
    out = translate(SourceFile.load(str(tc)), Options(macros, includes), sink)
    return sink.render() + (out.text if out is not None else "")


@pytest.mark.parametrize("tc", SPLIT, ids=[str(t.relative_to(t.parents[1])) for t in SPLIT])
def test_two_walks_give_the_c_of_one(tc: Path, monkeypatch: pytest.MonkeyPatch,
                                     tmp_path: Path) -> None:
    log = tmp_path / "splits"
    one = _c(tc, monkeypatch, False, log)
    assert not log.exists()
    two = _c(tc, monkeypatch, True, log)
    assert log.exists(), "the clang child did not split its walk"
    assert two == one


def test_a_walking_child_that_fails_is_made_up_for(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    tc = SAMPLES / "ebs" / "paraffins.tc"
    log = tmp_path / "splits"
    one = _c(tc, monkeypatch, False, log)
    real = forked.Forked

    def failing(work: object, *args: object, **kwargs: object) -> object:
        if args or kwargs:  # the clang child itself (it passes its setup): let it be
            return real(work, *args, **kwargs)  # type: ignore[arg-type]

        def broken() -> object:
            raise RuntimeError("a bug in the walking child")

        return real(broken)

    monkeypatch.setattr(forked, "Forked", failing)
    assert _c(tc, monkeypatch, True, log) == one
    assert log.exists()


LATER_PART = """THREADED add(SPTR done, int a, int b)
{
    DATA_RSYNC_L(a + b, (int *GLOBAL)0, done);
    END_FUNCTION();
}

int twice(int x)
{
    return 2 * x;
}

THREADED MAIN(void)
{
    SLOT SYNC_SLOTS[1];
    void *where;

    INIT_SYNC(0, 1, 1, 1);
    add(SLOT_ADR(0), 1, twice(2));
    where = add;
    END_THREAD();
THREAD_1:
    (void)where;
    END_FUNCTION();
}
"""


def test_what_the_later_part_finds_is_reported(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    # MAIN, the last function, is the later part's: its misuses of a threaded function
    # are found by the walking child only
    tc = tmp_path / "later.tc"
    tc.write_text(LATER_PART)
    log = tmp_path / "splits"
    one = _c(tc, monkeypatch, False, log)
    assert "not like a C function" in one and "is not a value" in one
    assert _c(tc, monkeypatch, True, log) == one
    assert log.read_text() == "1\n"  # MAIN alone
