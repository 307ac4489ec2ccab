"""A source file held as bytes (tree-sitter works on bytes) with line/column lookup."""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field

BOM = b"\xef\xbb\xbf"


class SourceError(Exception):
    """A file that cannot be read; the message is ready for the user."""


@dataclass(frozen=True)
class SourceFile:
    name: str
    data: bytes
    _line_starts: list[int] = field(default_factory=list, compare=False, repr=False)

    def __post_init__(self) -> None:
        starts = [0]
        pos = self.data.find(b"\n")
        while pos != -1:
            starts.append(pos + 1)
            pos = self.data.find(b"\n", pos + 1)
        object.__setattr__(self, "_line_starts", starts)

    @classmethod
    def load(cls, path: str) -> SourceFile:
        try:
            if os.path.isdir(path):
                raise SourceError(f"{path}: error: is a directory")
            with open(path, "rb") as f:
                data = f.read()
        except SourceError:
            raise
        except FileNotFoundError:
            raise SourceError(f"{path}: error: no such file") from None
        except PermissionError:
            raise SourceError(f"{path}: error: permission denied") from None
        except OSError as exc:
            raise SourceError(f"{path}: error: cannot read: {exc.strerror}") from None
        return cls(path, data)

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and character column of a byte offset."""
        offset = max(0, min(offset, len(self.data)))
        idx = bisect.bisect_right(self._line_starts, offset) - 1
        start = self._line_starts[idx]
        if start == 0 and self.data.startswith(BOM):
            start = min(len(BOM), offset)  # editors do not count a byte-order mark
        col = len(self.data[start:offset].decode("utf-8", errors="replace")) + 1
        return idx + 1, col

    @property
    def line_count(self) -> int:
        return len(self._line_starts)

    def line_text(self, line: int) -> str:
        start = self._line_starts[line - 1]
        end = self.data.find(b"\n", start)
        raw = self.data[start:] if end == -1 else self.data[start:end]
        if start == 0 and raw.startswith(BOM):
            raw = raw[len(BOM):]
        return raw.rstrip(b"\r").decode("utf-8", errors="replace")

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", errors="replace")
