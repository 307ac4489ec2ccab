"""The Python binding and the highlighting query, as an editor would use them."""

from __future__ import annotations

import tree_sitter
import tree_sitter_threaded_c

SOURCE = b"""THREADED f(SPTR done, int *GLOBAL p)
{
    SLOT SYNC_SLOTS[1];
    INIT_SYNC(0, 1, 1, 1);
    INVOKE(NODE_ID, g, SLOT_ADR(0));
    END_THREAD();
THREAD_1:
    RSYNC(done);
    END_FUNCTION();
}
"""


def test_language_is_a_capsule_tree_sitter_accepts() -> None:
    lang = tree_sitter.Language(tree_sitter_threaded_c.language())
    assert lang.abi_version >= 14
    assert lang.node_kind_for_id(lang.id_for_node_kind("thread_label", True)) == "thread_label"


def test_highlights_capture_threaded_c() -> None:
    lang = tree_sitter.Language(tree_sitter_threaded_c.language())
    query = tree_sitter.Query(lang, tree_sitter_threaded_c.HIGHLIGHTS_QUERY)
    tree = tree_sitter.Parser(lang).parse(SOURCE)
    captures = tree_sitter.QueryCursor(query).captures(tree.root_node)
    texts = {name: {n.text.decode() for n in nodes} for name, nodes in captures.items()}
    assert "THREADED" in texts["keyword"]
    assert "THREAD_1" in texts["label"]
    assert {"INVOKE", "END_THREAD", "END_FUNCTION"} <= texts["keyword.control"]
    assert {"INIT_SYNC", "SLOT_ADR", "RSYNC"} <= texts["function.builtin"]
    assert "NODE_ID" in texts["constant.builtin"]
    assert "GLOBAL" in texts["keyword.modifier"]


def test_highlights_know_exactly_the_primitives_of_the_table() -> None:
    # the highlighting query is written by hand; the primitives table is the source
    from etcpre.passes.primitives import PRIMITIVES, Kind  # noqa: PLC0415

    calls = [p for p in PRIMITIVES.values() if p.kind is not Kind.VALUE]
    body = "".join(f"    {p.name}();\n" for p in calls)
    body += "".join(f"    x = {p.name};\n" for p in PRIMITIVES.values() if p.kind is Kind.VALUE)
    body += "    INIT_SNYC();\n    DATA_SYNC_Q();\n    x = NODE_IDS;\n"
    source = f"THREADED f(void)\n{{\n{body}}}\n".encode()
    lang = tree_sitter.Language(tree_sitter_threaded_c.language())
    query = tree_sitter.Query(lang, tree_sitter_threaded_c.HIGHLIGHTS_QUERY)
    tree = tree_sitter.Parser(lang).parse(source)
    captures = tree_sitter.QueryCursor(query).captures(tree.root_node)
    texts = {name: {n.text.decode() for n in nodes} for name, nodes in captures.items()}
    control = {p.name for p in calls if p.kind in (Kind.CONTROL, Kind.START)}
    assert texts["keyword.control"] == control
    assert texts["function.builtin"] == {p.name for p in calls} - control
    assert texts["constant.builtin"] == {p.name for p in PRIMITIVES.values()
                                         if p.kind is Kind.VALUE}
