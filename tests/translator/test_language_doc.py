"""docs/language.md, the language reference users read, names every primitive of the
translator's table (a new primitive is one row there, and one entry here)."""

from __future__ import annotations

import re

from etcpre.passes.primitives import PRIMITIVES, Kind

from support import ROOT

DOC = ROOT / "docs" / "language.md"


def test_every_primitive_is_documented() -> None:
    text = DOC.read_text()
    for p in PRIMITIVES.values():
        if p.kind is Kind.VALUE:
            assert f"`{p.name}`" in text, p.name
        elif p.suffix is not None:  # the transfers are documented with their suffix as x
            generic = p.name[: -len(p.suffix)] + "x"
            assert f"`{generic}(" in text, p.name
            assert f"`{p.suffix}`" in text, p.name
        else:
            assert re.search(rf"`{p.name}\(", text), p.name


def test_the_readme_points_to_it() -> None:
    assert "docs/language.md" in (ROOT / "README.md").read_text()
