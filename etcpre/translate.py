"""The translator pipeline: parse -> analyse -> lower -> emit (see docs/architecture.md).

`translate()` is the one entry point used by the etcpre command and the etcc driver.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

from etcpre.diagnostics import DiagnosticSink
from etcpre.source import SourceFile


@dataclass(frozen=True)
class Options:
    """What the C preprocessor needs to see the file as the C compiler will."""

    defines: list[str] = field(default_factory=list)  # NAME or NAME=VALUE
    undefines: list[str] = field(default_factory=list)
    include_dirs: list[str] = field(default_factory=list)


def translate(source: SourceFile, options: Options, sink: DiagnosticSink) -> str | None:
    """Translate one .tc file to C. Returns None when `sink` holds errors."""
    from etcpre.passes import analyse, emit, lower, parse  # noqa: PLC0415

    parsed = parse.parse(source, sink)
    if sink.has_errors:
        return None
    model = analyse.analyse(parsed, options, sink)
    if sink.has_errors:
        return None
    lowered = lower.lower(model, sink)
    if sink.has_errors:
        return None
    return emit.emit(lowered)


def run(source: SourceFile, opts: argparse.Namespace, sink: DiagnosticSink) -> int:
    """The etcpre command's translation path: write C, report diagnostics."""
    options = Options(list(opts.defines), list(opts.undefines), list(opts.includes))
    text = translate(source, options, sink)
    sys.stderr.write(sink.render())
    if text is None:
        return 1
    if opts.output:
        try:
            Path(opts.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            sys.stderr.write(f"etcpre: error: cannot write {opts.output}: {exc.strerror}\n")
            return 1
    else:
        sys.stdout.write(text)
    return 0
