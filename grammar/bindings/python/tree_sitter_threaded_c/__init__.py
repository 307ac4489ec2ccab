"""Threaded-C (EARTH) grammar for tree-sitter, extending tree-sitter-c.

`language()` returns the capsule that `tree_sitter.Language` takes, as every
tree-sitter grammar binding does; `HIGHLIGHTS_QUERY` is the highlighting query.
"""

from ._binding import language


def __getattr__(name: str) -> str:
    # read when first asked for: importlib.resources would cost every start of the
    # translator 7 ms
    if name == "HIGHLIGHTS_QUERY":
        from importlib.resources import files

        return (files(__package__) / "queries" / "highlights.scm").read_text()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["HIGHLIGHTS_QUERY", "language"]
