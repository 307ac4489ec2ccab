"""Lowering in two processes (lower.PARALLEL_FROM_BYTES: half of the threaded
functions in a forked child) gives the C of lowering in one, byte for byte, on every
sample, EBS program and golden program with more than one threaded function; and a
child that fails, or a fork that fails, costs time, never the output."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from etcpre.diagnostics import DiagnosticSink
from etcpre.options import Options
from etcpre.passes import forked, lower, parse
from etcpre.passes.text import WorkingText
from etcpre.source import SourceFile
from etcpre.translate import translate

from support import SAMPLES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
import regen  # noqa: E402

PROGRAMS = sorted(SAMPLES.glob("*.tc")) + sorted((SAMPLES / "ebs").glob("*.tc")) + [
    tc for tc in regen.cases() if tc.with_suffix(".c").exists()]


def _c(tc: Path, monkeypatch: pytest.MonkeyPatch, parallel: bool) -> str:
    monkeypatch.setattr(lower, "PARALLEL_FROM_BYTES", 0 if parallel else 1 << 62)
    monkeypatch.setattr(forked, "usable_cpus", lambda: 2)
    # as regen.translate runs etcpre: -I inc in the golden folder, the file's own flags
    macros = tuple(f for f in regen.flags(tc) if f.startswith(("-D", "-U")))
    includes = (str(tc.parent / "inc"),) if tc.parent == regen.GOLDEN else ()
    options = Options(macros, includes)
    sink = DiagnosticSink()
    out = translate(SourceFile.load(str(tc)), options, sink)
    assert out is not None, sink.render()
    return out.text


def _threaded_functions(tc: Path) -> int:
    """Threaded function definitions (prototypes do not count)."""
    tree = parse.tree(WorkingText.of(SourceFile.load(str(tc))))
    return sum(c.type == "threaded_function_definition" for c in tree.root_node.children)


SPLIT = [tc for tc in PROGRAMS if _threaded_functions(tc) > 1]


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
