"""Text the translator works on, derived from the .tc file by edits, with offsets mapped
back to the file (where diagnostics point).

Two derived texts exist: the *working text* (the file with the macro uses the
translator must see through replaced by their expansions, and code the preprocessor
skips blanked), which tree-sitter parses and the passes rewrite, and libclang's *view*
of it (`clang_view`). Each is the previous text with non-overlapping edits applied; an
`EditMap` takes offsets across, and a position inside a replaced range maps to the start
of that range (a diagnostic inside a macro's expansion points at the macro's use).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from etcpre.source import BOM, SourceFile


def c_string(text: str) -> str:
    """`text` as a C string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True, order=True)
class Edit:
    start: int  # byte range of the old text replaced by `text`
    end: int
    text: bytes


class EditMap:
    """Offsets between a text and the same text with edits applied."""

    def __init__(self, edits: list[Edit]) -> None:
        self._old_starts: list[int] = []
        self._new_starts: list[int] = []
        self._edits = edits
        delta = 0
        for e in edits:
            self._old_starts.append(e.start)
            self._new_starts.append(e.start + delta)
            delta += len(e.text) - (e.end - e.start)

    def to_old(self, new: int) -> int:
        i = bisect.bisect_right(self._new_starts, new) - 1
        if i < 0:
            return new
        e = self._edits[i]
        new_start = self._new_starts[i]
        if new < new_start + len(e.text):
            return e.start
        return e.end + (new - new_start - len(e.text))

    def table(self) -> tuple[list[int], list[int], list[int], list[int]]:
        """The edits as `to_old` reads them, for code that maps offsets itself: where
        each starts in the new text, its text's length, the old range it replaced."""
        return (list(self._new_starts), [len(e.text) for e in self._edits],
                [e.start for e in self._edits], [e.end for e in self._edits])

    def to_new(self, old: int) -> int:
        i = bisect.bisect_right(self._old_starts, old) - 1
        if i < 0:
            return old
        e = self._edits[i]
        new_start = self._new_starts[i]
        if old < e.end:
            return new_start
        return new_start + len(e.text) + (old - e.end)


def apply(data: bytes, edits: list[Edit]) -> tuple[bytes, EditMap]:
    """`data` with `edits` (non-overlapping) applied, and the map between the two."""
    edits = sorted(edits)
    out = bytearray()
    pos = 0
    for e in edits:
        assert e.start >= pos, "overlapping edits"
        out += data[pos:e.start] + e.text
        pos = e.end
    out += data[pos:]
    return bytes(out), EditMap(edits)


@dataclass
class WorkingText:
    """The text the passes work on: the .tc file after the edits of earlier rounds."""

    source: SourceFile
    data: bytes
    maps: list[EditMap] = field(default_factory=list)  # oldest first

    @classmethod
    def of(cls, source: SourceFile) -> WorkingText:
        data = source.data
        if data.startswith(BOM):  # neither tree-sitter nor cc wants it in the text
            data = b" " * len(BOM) + data[len(BOM):]
        return cls(source, data)

    def origin(self, offset: int) -> int:
        """Where a working-text offset is in the .tc file."""
        for m in reversed(self.maps):
            offset = m.to_old(offset)
        return offset

    def edited(self, edits: list[Edit]) -> WorkingText:
        data, emap = apply(self.data, edits)
        return WorkingText(self.source, data, [*self.maps, emap])

    def line(self, offset: int) -> int:
        """The .tc line of a working-text offset."""
        return self.source.line_col(self.origin(offset))[0]

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", errors="replace")

    def line_directive(self, line: int) -> str:
        """`#line N "file.tc"`: the next C line is .tc line N."""
        return f"#line {line} {c_string(self.source.name)}\n"

    def column(self, offset: int) -> int:
        """Characters before `offset` on its line (where a resumed line starts)."""
        start = self.data.rfind(b"\n", 0, offset) + 1
        return len(self.data[start:offset].decode("utf-8", errors="replace"))

    def resume_at(self, offset: int) -> str:
        """What lets C text copied from `offset` on carry the right .tc line and column
        after other text: a line directive and the spaces before `offset` on its line
        (put at the start of a C line)."""
        return self.line_directive(self.line(offset)) + " " * self.column(offset)
