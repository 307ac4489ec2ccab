"""Plain C parses exactly as tree-sitter-c parses it, on real code: the system's C
headers, the runtime's sources and the generated parser itself. Files that
tree-sitter-c cannot parse cleanly (C++ headers, compiler extensions) are skipped:
error recovery legitimately differs between two parse tables."""

from __future__ import annotations

import glob
from pathlib import Path

import corpus

ROOT = Path(__file__).resolve().parents[2]
HEADER_DIRS = ["/usr/include", "/usr/include/sys", "/usr/include/linux",
               "/usr/include/x86_64-linux-gnu/bits", "/usr/include/netinet"]


def _files() -> list[Path]:
    out = [Path(p) for d in HEADER_DIRS for p in sorted(glob.glob(f"{d}/*.h"))]
    out += sorted((ROOT / "runtime").rglob("*.[ch]"))
    out.append(ROOT / "grammar" / "src" / "parser.c")
    return out


def test_plain_c_parses_as_tree_sitter_c_does() -> None:
    c, ours = corpus.parser(c_only=True), corpus.parser(c_only=False)
    compared, differ = 0, []
    for path in _files():
        data = path.read_bytes()
        base = c.parse(data).root_node
        if base.has_error:
            continue
        compared += 1
        if str(base) != str(ours.parse(data).root_node):
            differ.append(str(path))
    assert differ == []
    assert compared >= 200, f"only {compared} clean C files found to compare"
