"""Translate one file and write the result: the one path etcpre and etcc share."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from etcpre.diagnostics import DiagnosticSink
from etcpre.options import Options
from etcpre.source import SourceError, SourceFile

if TYPE_CHECKING:
    from etcpre.translate import Translation


def translate_file(path: str, options: Options,
                   output: str | os.PathLike[str] | None) -> Translation | None:
    """Translate `path`; diagnostics go to stderr, the C to `output` (stdout if None).
    Returns None when the file could not be read, translated or written."""
    from etcpre.translate import translate  # noqa: PLC0415 - the passes load only here

    try:
        source = SourceFile.load(path)
    except SourceError as exc:
        sys.stderr.write(f"{exc}\n")
        return None
    from etcpre.passes.clang_child import NotBuilt  # noqa: PLC0415 - as translate

    sink = DiagnosticSink()
    try:
        result = translate(source, options, sink)
    except NotBuilt as exc:
        sys.stderr.write(f"etc: error: {exc}\n")
        return None
    sys.stderr.write(sink.render())
    if result is None:
        return None
    if output is None:
        sys.stdout.write(result.text)
        return result
    try:
        with open(output, "w", encoding="utf-8") as out:
            out.write(result.text)
    except OSError as exc:
        sys.stderr.write(f"etcpre: error: cannot write {output}: {exc.strerror}\n")
        return None
    return result
