from typing import Final

HIGHLIGHTS_QUERY: Final[str]

def language() -> object:
    """The tree-sitter language capsule for Threaded-C."""
