"""The translator pipeline (see docs/architecture.md):

    parse -> clang view -> (expand macro uses, again) -> analyse -> lower -> emit

`translate()` is the one entry point; it neither reads nor writes files (the commands
do, through `etcpre.cli.translation`).
"""

from __future__ import annotations

import bisect
import gc
import re
import sys
import threading
from typing import TYPE_CHECKING

from etcpre.diagnostics import DiagnosticSink
from etcpre.options import Options
from etcpre.passes import clang_child, parse
from etcpre.passes.text import Edit, WorkingText
from etcpre.passes.view_edits import view_edits
from etcpre.source import SourceFile

if TYPE_CHECKING:
    import tree_sitter

    from etcpre.passes.emit import Emitted as Translation
    from etcpre.passes.facts import Diag

__all__ = ["Options", "Translation", "translate"]

# Rounds of macro expansion: each expands the outermost uses whose bodies the passes
# must see; macros nested deeper than this in such a use are reported.
MAX_EXPANSION_ROUNDS = 16


# Nesting: the passes walk the syntax tree recursively where that reads best (the
# renderer); they run on a thread with a stack and a recursion limit that hold any
# nesting gcc compiles in practice (10,000 nested ifs take about 40,000 frames).
DEEP_STACK_BYTES = 1 << 30
DEEP_RECURSION_LIMIT = 400_000


def translate(source: SourceFile, options: Options,
              sink: DiagnosticSink) -> Translation | None:
    """Translate one .tc file to C (`.text`, and `.source_map` for cc's diagnostics).
    Returns None when `sink` holds errors."""
    result: list[Translation | None] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            result.append(_translate(source, options, sink))
        except RecursionError:
            sink.error(source, 0, "the file nests deeper than etcpre can follow "
                                  f"(about {DEEP_RECURSION_LIMIT // 4} levels)")
            result.append(None)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread
            failure.append(exc)

    old_limit = sys.getrecursionlimit()
    old_stack = threading.stack_size()
    collecting = gc.isenabled()
    try:
        sys.setrecursionlimit(max(old_limit, DEEP_RECURSION_LIMIT))
        threading.stack_size(DEEP_STACK_BYTES)
        # A translation makes a great many objects that reference counting frees;
        # the cycle collector only rescans the live ones (5-10% of the time). What
        # cycles it leaves are collected after.
        gc.disable()
        thread = threading.Thread(target=work, name="etcpre-translate")
        thread.start()
        thread.join()
    finally:
        if collecting:
            gc.enable()
        threading.stack_size(old_stack)
        sys.setrecursionlimit(old_limit)
    if failure:
        raise failure[0]
    return result[0]


def _translate(source: SourceFile, options: Options,
               sink: DiagnosticSink) -> Translation | None:
    working = WorkingText.of(source)
    clang, tree = _parsed_for_clang(working, options)
    # while the child works: load the passes after it, and do what of the analysis
    # needs no facts (analyse() drops it when the text changes; a tree with syntax
    # errors is reported, not analysed)
    from etcpre.passes import analyse, emit, lower  # noqa: PLC0415 - see above

    prepared = None if tree.root_node.has_error else analyse.prepare(working, tree.root_node)
    for _ in range(MAX_EXPANSION_ROUNDS):
        facts = clang.facts()
        if facts.fatal is not None:
            _fatal(source, working, facts.fatal, sink)
            return None
        blanks = _inactive(working.data, facts.skipped)
        if not facts.expansions:
            if blanks:  # same length: clang's facts stay true of the new text
                working = working.edited(blanks)
                tree = parse.tree(working)
            break
        working = working.edited(facts.expansions + blanks)
        clang, tree = _parsed_for_clang(working, options)
    else:
        sink.error(source, working.origin(facts.expansions[0].start),
                   "macros nested too deeply for etcpre to see through them")
        return None
    parsed = parse.parse(working, sink, tree)
    if sink.has_errors:
        return None
    model = analyse.analyse(parsed, facts, sink, prepared)
    if sink.has_errors:
        return None
    return emit.emit(lower.lower(model))


def _parsed_for_clang(working: WorkingText,
                      options: Options) -> tuple[clang_child.Pending, tree_sitter.Tree]:
    """The clang child, started first (it loads libclang meanwhile), and the syntax
    tree, whose rewrites of libclang's view it is then sent."""
    clang = clang_child.start(working, options)
    tree = parse.tree(working)
    clang.show(view_edits(tree.root_node))
    return clang, tree


def _inactive(data: bytes, skipped: list[tuple[int, int]]) -> list[Edit]:
    """Blank what the preprocessor decides: the code of inactive #if branches and the
    directives of every conditional that has one, keeping every line break, so
    tree-sitter sees the program cc sees (a branch may hold half a construct, like a
    loop's opening line) and offsets do not move."""
    if not skipped:
        return []
    starts = sorted(s for s, _ in skipped)
    blank = bytearray(len(data))  # 1: this byte goes
    for group in _conditionals(data):
        if any(bisect.bisect_left(starts, s) < len(starts) and
               starts[bisect.bisect_left(starts, s)] < e for s, e in group):
            for s, e in group:
                blank[s:e] = b"\x01" * (e - s)
    for start, end in skipped:
        first_eol = data.find(b"\n", start, end)
        last_bol = data.rfind(b"\n", start, end) + 1
        if 0 <= first_eol < last_bol:
            blank[first_eol + 1:last_bol] = b"\x01" * (last_bol - first_eol - 1)
    edits = []
    pos = blank.find(1)
    while pos >= 0:
        end = blank.find(0, pos)
        end = len(data) if end < 0 else end
        new = bytes(b if b in b"\r\n" else 0x20 for b in data[pos:end])
        if new != data[pos:end]:
            edits.append(Edit(pos, end, new))
        pos = blank.find(1, end)
    return edits


_DIRECTIVE = re.compile(rb"[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b")


def _conditionals(data: bytes) -> list[list[tuple[int, int]]]:
    """The directive lines (start, end) of each #if ... #endif group, outermost last."""
    groups: list[list[tuple[int, int]]] = []
    stack: list[list[tuple[int, int]]] = []
    in_comment = False
    pos = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        while end < len(data) and data[pos:end].rstrip(b"\r").endswith(b"\\"):
            nxt = data.find(b"\n", end + 1)  # a directive continued on the next line
            end = len(data) if nxt < 0 else nxt
        line = data[pos:end]
        m = None if in_comment else _DIRECTIVE.match(line)
        if m is not None:
            word = m.group(1)
            if word.startswith(b"if"):
                stack.append([(pos, end)])
            elif stack:
                stack[-1].append((pos, end))
                if word == b"endif":
                    groups.append(stack.pop())
        in_comment = _ends_in_comment(line, in_comment)
        pos = end + 1
    return groups


def _ends_in_comment(line: bytes, in_comment: bool) -> bool:
    i = 0
    while i < len(line):
        if in_comment:
            j = line.find(b"*/", i)
            if j < 0:
                return True
            in_comment, i = False, j + 2
        else:
            j = line.find(b"/*", i)
            k = line.find(b"//", i)
            if j < 0 or 0 <= k < j:
                return False
            in_comment, i = True, j + 2
    return in_comment


def _fatal(source: SourceFile, working: WorkingText, fatal: Diag,
           sink: DiagnosticSink) -> None:
    if fatal.path is None:
        sink.error(source, working.origin(fatal.offset), fatal.message)
        return
    from etcpre.source import SourceError  # noqa: PLC0415

    try:
        sink.error(SourceFile.load(fatal.path), fatal.offset, fatal.message)
    except SourceError:
        sink.error(None, 0, f"{fatal.path}: {fatal.message}")
