"""The analysis walks the threaded functions while the clang child works
(analyse.prepare) and completes them when the facts come (VLAs, slot counts,
parameter types): the frame's field names and the diagnostics are those of one walk
with the facts at hand, and a walk of a tree that macro expansion replaced is not used."""

from __future__ import annotations

import pytest

from etcpre.diagnostics import DiagnosticSink
from etcpre.options import Options
from etcpre.passes import analyse
from etcpre.source import SourceFile
from etcpre.translate import translate


def _translate(code: str) -> tuple[str | None, str]:
    sink = DiagnosticSink()
    out = translate(SourceFile("p.tc", code.encode()), Options(), sink)
    return (out.text if out is not None else None), sink.render()


def test_a_vla_takes_no_field_name_from_a_later_local() -> None:
    text, errors = _translate("""#include <stdio.h>
THREADED MAIN(void)
{
    SLOT SYNC_SLOTS[1];
    int n = 3;
    {
        int a[n];
        a[0] = n;
        printf("%d\\n", a[0]);
    }
    INIT_SYNC(0, 1, 1, 1);
    SYNC(0);
    END_THREAD();
THREAD_1:
    {
        int a = 5;
        printf("%d\\n", a);
    }
    END_FUNCTION();
}
""")
    assert text is not None, errors
    assert "int a[_fp->n];" in text  # the VLA: a C local of its block
    assert "_fp->a = 5" in text and "a_1" not in text  # the later local has the name


def test_diagnostics_before_and_after_the_facts_are_all_reported_in_order() -> None:
    text, errors = _translate("""THREADED MAIN(void)
{
    SLOT SYNC_SLOTS[0];
    END_THREAD();
THREAD_1:
    END_THREAD();
THREAD_1:
    END_FUNCTION();
}
""")
    assert text is None
    lines = [ln for ln in errors.splitlines() if ": error: " in ln]
    assert lines[0].startswith("p.tc:3:21: error: SYNC_SLOTS[0]: a function has from 1")
    assert lines[1].startswith("p.tc:7:1: error: duplicate thread label THREAD_1")


def test_a_walk_of_a_replaced_tree_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[object] = []
    real = analyse.prepare

    def counted(working: object, root: object) -> analyse.Prepared:
        walked.append(root)
        return real(working, root)  # type: ignore[arg-type]

    monkeypatch.setattr(analyse, "prepare", counted)
    text, errors = _translate("""#include <stdio.h>
#define START(f, v) TOKEN(f, SLOT_ADR(0), v)
THREADED leaf(SPTR done, int v)
{
    RSYNC(done);
    END_FUNCTION();
}
THREADED MAIN(void)
{
    SLOT SYNC_SLOTS[1];
    int k = 7;
    INIT_SYNC(0, 1, 1, 1);
    START(leaf, k);
    END_THREAD();
THREAD_1:
    printf("%d\\n", k);
    END_FUNCTION();
}
""")
    assert text is not None, errors
    assert len(walked) == 2  # the first tree's, then the expanded tree's
    assert "_etc_pp->v = _fp->k" in text  # the expansion's reference, rewritten
