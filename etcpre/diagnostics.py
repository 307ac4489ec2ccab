"""Diagnostics in the form students and editors expect: ``file.tc:line:col: error: msg``.

Every pass reports through a `DiagnosticSink`; nothing raises to the user. Columns are
1-based and count characters (not bytes), so the caret lines up under UTF-8 text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from etcpre.source import SourceFile


class Severity(Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True)
class Diagnostic:
    severity: Severity
    message: str
    source: SourceFile | None
    offset: int = 0  # byte offset into source.data

    def render(self) -> str:
        if self.source is None:
            return f"{self.severity.value}: {self.message}"
        line, col = self.source.line_col(self.offset)
        head = f"{self.source.name}:{line}:{col}: {self.severity.value}: {self.message}"
        return "\n".join([head, *caret_lines(self.source, line, col)])


def caret_lines(source: SourceFile, line: int, col: int) -> list[str]:
    """The source line and a caret under character column `col` of it."""
    if not 1 <= line <= source.line_count:
        return []
    text = source.line_text(line)
    # Keep tabs in the caret line so the caret sits under the right character.
    pad = "".join("\t" if ch == "\t" else " " for ch in text[: col - 1])
    return [text, f"{pad}^"]


@dataclass
class DiagnosticSink:
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def error(self, source: SourceFile | None, offset: int, message: str) -> None:
        self.diagnostics.append(Diagnostic(Severity.ERROR, message, source, offset))

    def warning(self, source: SourceFile | None, offset: int, message: str) -> None:
        self.diagnostics.append(Diagnostic(Severity.WARNING, message, source, offset))

    @property
    def has_errors(self) -> bool:
        return any(d.severity is Severity.ERROR for d in self.diagnostics)

    def sorted(self) -> list[Diagnostic]:
        """Diagnostics in source order (stable for equal positions)."""
        return sorted(
            self.diagnostics,
            key=lambda d: (d.source.name if d.source else "", d.offset),
        )

    def render(self) -> str:
        return "".join(d.render() + "\n" for d in self.sorted())
