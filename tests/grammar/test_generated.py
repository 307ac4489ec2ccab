"""The committed grammar/src/ is what the tree-sitter CLI generates from grammar.js.

Needs the CLI and npm (for the pinned tree-sitter-c); skipped, with the reason, when
either is missing. .ci/run installs the CLI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

GRAMMAR = Path(__file__).resolve().parents[2] / "grammar"
GENERATED = ["parser.c", "grammar.json", "node-types.json", "tree_sitter/parser.h",
             "tree_sitter/alloc.h", "tree_sitter/array.h"]


def _cli() -> str | None:
    found = shutil.which("tree-sitter")
    home = Path(os.path.expanduser("~/.cargo/bin/tree-sitter"))
    return found or (str(home) if home.is_file() else None)


def test_committed_sources_match_grammar_js(tmp_path: Path) -> None:
    cli = _cli()
    if cli is None:
        pytest.skip("the tree-sitter CLI is not installed (cargo install tree-sitter-cli)")
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed (needed for the pinned tree-sitter-c)")
    for name in ("grammar.js", "package.json", "package-lock.json", "tree-sitter.json"):
        shutil.copy(GRAMMAR / name, tmp_path / name)
    npm = subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    if npm.returncode != 0:
        pytest.skip(f"npm could not install tree-sitter-c: {npm.stderr.strip()[-300:]}")
    gen = subprocess.run([cli, "generate"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, check=False)
    assert gen.returncode == 0, gen.stderr
    for rel in GENERATED:
        committed = (GRAMMAR / "src" / rel).read_bytes()
        assert (tmp_path / "src" / rel).read_bytes() == committed, \
            f"grammar/src/{rel} is stale: run 'make grammar' and commit the result"
