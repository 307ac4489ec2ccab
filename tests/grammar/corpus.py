"""The grammar's corpus tests (grammar/test/corpus/, tree-sitter's format), in Python.

`python tests/grammar/corpus.py --update` rewrites the expected trees: Threaded-C
files from our grammar (review the diff), files under `c/` from tree-sitter-c 0.24.1
itself, so that they record how plain C parsed *before* the extension. The suite
(test_corpus.py) checks both grammars against them; `tree-sitter test` in grammar/
runs the same files with the CLI.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import tree_sitter

from etcpre.cli.etcpre_cmd import format_sexp

CORPUS = Path(__file__).resolve().parents[2] / "grammar" / "test" / "corpus"
RULE = "=" * 80
DASHES = "-" * 80


@dataclass
class Case:
    name: str
    source: str
    expected: str


def read(path: Path) -> list[Case]:
    text = path.read_text(encoding="utf-8")
    parts = re.split(r"^={3,}\n(.*)\n={3,}\n", text, flags=re.M)
    cases = []
    for i in range(1, len(parts), 2):
        name, body = parts[i].strip(), parts[i + 1]
        source, _, expected = body.partition("\n" + DASHES + "\n")
        cases.append(Case(name, source.strip("\n") + "\n", expected.strip()))
    return cases


def write(path: Path, cases: list[Case]) -> None:
    out = []
    for c in cases:
        out.append(f"{RULE}\n{c.name}\n{RULE}\n\n{c.source.rstrip()}\n\n{DASHES}\n\n"
                   f"{c.expected}\n")
    path.write_text("\n".join(out), encoding="utf-8")


_TOKEN = re.compile(r'\(|\)|[^\s()]+')


def pretty(sexp: str) -> str:
    """One node per line, fields beside their node: as `etcpre --syntax-tree` prints."""
    return format_sexp(sexp)


def normalize(sexp: str) -> str:
    return " ".join(_TOKEN.findall(sexp))


def parser(c_only: bool) -> tree_sitter.Parser:
    if c_only:
        import tree_sitter_c as lang  # noqa: PLC0415
    else:
        import tree_sitter_threaded_c as lang  # noqa: PLC0415
    return tree_sitter.Parser(tree_sitter.Language(lang.language()))


def tree(p: tree_sitter.Parser, source: str) -> tree_sitter.Node:
    return p.parse(source.encode("utf-8")).root_node


def files() -> list[Path]:
    return sorted(CORPUS.rglob("*.txt"))


def is_c(path: Path) -> bool:
    return path.parent.name == "c"


def update() -> None:
    for path in files():
        p = parser(is_c(path))
        cases = read(path)
        for c in cases:
            c.expected = pretty(str(tree(p, c.source)))
        write(path, cases)
        print(f"{path.relative_to(CORPUS.parents[2])}: {len(cases)} cases")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: corpus.py --update")
    update()
