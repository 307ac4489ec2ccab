"""etcpre: translate Threaded-C to C (reference section 4)."""

from __future__ import annotations

import argparse
import functools
import gc
import re
import sys

from etcpre.cli.common import ArgParser, leave, run_main
from etcpre.cli.translation import translate_file
from etcpre.diagnostics import DiagnosticSink
from etcpre.options import Options
from etcpre.passes import parse
from etcpre.passes.text import WorkingText
from etcpre.source import SourceError, SourceFile


def _arg_parser() -> argparse.ArgumentParser:
    ap = ArgParser(
        prog="etcpre",
        help_flag="--help",
        description="Translate a Threaded-C file (.tc) to C.",
    )
    ap.add_argument("file", help="the .tc file to translate")
    ap.add_argument("-o", dest="output", help="write the C output here (default, or -: stdout)")
    ap.add_argument(
        "--syntax-tree",
        action="store_true",
        help="print the syntax tree as an S-expression and exit",
    )
    # -D and -U share one list: the C preprocessor applies them in command-line order
    ap.add_argument("-D", dest="macros", action="append", default=[], metavar="NAME[=V]",
                    type=lambda v: f"-D{v}")
    ap.add_argument("-U", dest="macros", action="append", default=[], metavar="NAME",
                    type=lambda v: f"-U{v}")
    ap.add_argument("-I", dest="includes", action="append", default=[], metavar="DIR")
    ap.add_argument("-isystem", dest="system_dirs", action="append", default=[],
                    metavar="DIR", help="a system header directory, searched after -I's")
    return ap


def _body(argv: list[str], leaving: bool = False) -> int:
    opts = _arg_parser().parse_args(argv)
    if opts.syntax_tree:
        return _syntax_tree(opts.file)
    options = Options(tuple(opts.macros), tuple(opts.includes), tuple(opts.system_dirs))
    output = opts.output if opts.output and opts.output != "-" else None
    translation = translate_file(opts.file, options, output)
    rc = 0 if translation is not None else 1
    if leaving:  # the command, its output written: the translation is never freed
        sys.stdout.flush()  # (run_main reports what cannot be written)
        leave(rc)
    return rc


def _syntax_tree(path: str) -> int:
    try:
        source = SourceFile.load(path)
    except SourceError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    sink = DiagnosticSink()
    result = parse.parse(WorkingText.of(source), sink)
    if sink.has_errors:
        sys.stderr.write(sink.render())
        return 1
    sys.stdout.write(format_sexp(str(result.root)) + "\n")
    return 0


_SEXP_TOKEN = re.compile(r'\(|\)|"(?:[^"\\]|\\.)*"|[^\s()]+')


def format_sexp(sexp: str) -> str:
    """Indent an S-expression one node per line, fields beside their node."""
    lines: list[str] = []
    depth = 0
    field = ""
    for tok in _SEXP_TOKEN.findall(sexp):
        if tok == "(":
            lines.append("  " * depth + field + "(")
            field = ""
            depth += 1
        elif tok == ")":
            depth -= 1
            lines[-1] += ")"
        elif tok.endswith(":") and not tok.startswith('"'):
            field = tok + " "
        else:
            lines[-1] += ("" if lines[-1].endswith("(") else " ") + tok
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        # the command: one translation, then it leaves; the cycle collector would only
        # rescan the translation's live objects (translate() would enable it again at
        # its end, and the next allocation would pay for a full collection)
        gc.disable()
    rc = run_main("etcpre", functools.partial(_body, leaving=argv is None), argv)
    if argv is None:  # the command itself (a caller passing argv goes on)
        leave(rc)
    return rc


if __name__ == "__main__":
    sys.exit(main())
