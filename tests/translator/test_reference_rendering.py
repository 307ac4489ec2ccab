"""The lowering renders a subtree whose only rewrites are references to locals by
replacing them in its text (lower._Renderer._references_only), without walking its
nodes. That shortcut gives what the node walk gives, on every sample, EBS program and
golden program: the same C, and a source map that puts every column cc can report
(up to one past a line's end) at the same .tc place."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from etcpre.diagnostics import DiagnosticSink
from etcpre.options import Options
from etcpre.passes import lower
from etcpre.passes.emit import Emitted as Translation
from etcpre.source import SourceFile
from etcpre.translate import translate

from support import SAMPLES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
import regen  # noqa: E402

PROGRAMS = sorted(SAMPLES.glob("*.tc")) + sorted((SAMPLES / "ebs").glob("*.tc")) + [
    tc for tc in regen.cases() if tc.with_suffix(".c").exists()]
_LINE = re.compile(r"#line (\d+)")


def _translation(tc: Path) -> Translation:
    macros = tuple(f for f in regen.flags(tc) if f.startswith(("-D", "-U")))
    includes = (str(tc.parent / "inc"),) if tc.parent == regen.GOLDEN else ()
    sink = DiagnosticSink()
    out = translate(SourceFile.load(str(tc)), Options(macros, includes), sink)
    assert out is not None, sink.render()
    return out


def _places(out: Translation) -> dict[tuple[int, int], tuple[int, int] | None]:
    """Where the source map puts each column of each C line #line gives a .tc line."""
    widths: dict[int, int] = {}
    line = None
    for c_line in out.text.split("\n"):
        m = _LINE.match(c_line)
        if m is not None:
            line = int(m.group(1))
        elif line is not None:
            widths[line] = max(widths.get(line, 0), len(c_line))
            line += 1
    smap = out.source_map
    return {(ln, col): smap.locate(ln, col) for ln, width in widths.items()
            for col in range(1, width + 2)}


@pytest.mark.parametrize("tc", PROGRAMS, ids=[str(t.relative_to(t.parents[1])) for t in PROGRAMS])
def test_replacing_references_renders_as_the_node_walk(tc: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    taken = []
    real = lower._Renderer._references_only

    def counted(self: lower._Renderer, node: lower.Node) -> bool:
        answer = real(self, node)
        taken.append(answer)
        return answer

    monkeypatch.setattr(lower._Renderer, "_references_only", counted)
    short = _translation(tc)
    monkeypatch.setattr(lower._Renderer, "_references_only", lambda self, node: False)
    walked = _translation(tc)
    assert short.text == walked.text
    assert _places(short) == _places(walked)
    if any(tc.name == name for name in ("fib.tc", "paraffins.tc", "tsp.tc")):
        assert any(taken), "the shortcut was never taken"
