"""Threaded-C (EARTH) grammar for tree-sitter, extending tree-sitter-c.

`language()` returns the capsule that `tree_sitter.Language` takes, as every
tree-sitter grammar binding does; `HIGHLIGHTS_QUERY` is the highlighting query.
"""

from importlib.resources import files

from ._binding import language

HIGHLIGHTS_QUERY: str = (files(__package__) / "queries" / "highlights.scm").read_text()

__all__ = ["HIGHLIGHTS_QUERY", "language"]
