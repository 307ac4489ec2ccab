"""The clang view's cursor walk in C (etcpre/native/cursor_walk.c): it visits what the
Python binding shows in the clang view's order, classifies as clang_view needs, builds
warning-free, and a missing build is an error that says so."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import clang.cindex as ci
import pytest

from etcpre.passes import cursor_walk, libclang
from etcpre.passes.text import Edit, apply

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "etcpre" / "native" / "cursor_walk.c"

PROGRAM = b"""typedef int __attribute__((address_space(77))) gint;
int plain(int v);
int sum(gint *p, int n) {
    int a[4] = {1, 2, 3, 4};
    int s = plain(n) + a[n & 3];
    s += *(p + 1);
    return s;
}
"""


# clang's view of PROGRAM has text inserted (as clang_view's rewrites do): the walk's
# offsets are PROGRAM's
INSERTED = b"/* the view's */ "
VIEW, VIEW_MAP = apply(PROGRAM, [Edit(PROGRAM.index(b"int sum"), PROGRAM.index(b"int sum"),
                                      INSERTED)])


@pytest.fixture(name="parsed")
def fixture_parsed(tmp_path: Path) -> Iterator[tuple[ci.TranslationUnit, libclang.Raw]]:
    path = str(tmp_path / "walk.c")
    tu = ci.Index.create().parse(path, args=["-x", "c", "-std=gnu11"],
                                 unsaved_files=[(path, VIEW.decode())])
    raw = libclang.Raw()
    raw.know_main_file(tu, path, len(VIEW))
    yield tu, raw


def _function(tu: ci.TranslationUnit, name: str) -> ci.Cursor:
    return next(c for c in tu.cursor.get_children() if c.spelling == name)


def _reference_order(top: ci.Cursor) -> list[tuple[int, int]]:
    """(kind, parent's index) of each cursor, walked in Python with the binding the way
    the clang view walks: a cursor, then its children last first; no children listed
    for references, names and literals."""
    leaves = {ci.CursorKind.DECL_REF_EXPR, ci.CursorKind.INTEGER_LITERAL,
              ci.CursorKind.FLOATING_LITERAL, ci.CursorKind.CHARACTER_LITERAL,
              ci.CursorKind.STRING_LITERAL}
    out: list[tuple[int, int]] = []
    stack: list[tuple[ci.Cursor, int]] = [(top, -1)]
    while stack:
        cur, parent = stack.pop()
        out.append((cur.kind.value, parent))
        if cur.kind.is_reference() or cur.kind in leaves:
            continue
        index = len(out) - 1
        stack.extend((kid, index) for kid in cur.get_children())
    return out


def _walk(raw: libclang.Raw, top: ci.Cursor, threaded: bool = False,
          macros: bool = False) -> list[tuple[int, int, int, int, int, int, int]]:
    """(kind, parent, flags, start, end, ref_kind, kid count) of every walked cursor."""
    main = cursor_walk.MainFile(raw.main_handle, raw.main_base, raw.main_limit, 77, VIEW_MAP)
    with cursor_walk.Walker().walk(main, top, threaded, macros) as tree:
        got = [(n.kind, n.parent, n.flags, n.start, n.end, n.ref_kind, n.kid_count)
               for n in tree.nodes]
        for index, node in enumerate(tree.nodes):
            assert all(tree.nodes[k].parent == index for k in tree.children(node))
        assert tree.wanted == [i for i, n in enumerate(got) if n[2] & cursor_walk.WANTED]
    return got


def test_the_walk_visits_what_the_binding_shows(
        parsed: tuple[ci.TranslationUnit, libclang.Raw]) -> None:
    tu, raw = parsed
    top = _function(tu, "sum")
    got = _walk(raw, top)
    assert [(kind, parent) for kind, parent, *_ in got] == _reference_order(top)
    assert len(got) > 30


def test_types_extents_and_references_are_classified(
        parsed: tuple[ci.TranslationUnit, libclang.Raw]) -> None:
    tu, raw = parsed
    got = _walk(raw, _function(tu, "sum"))
    # offsets into PROGRAM, not into the view clang parsed
    by_text = {PROGRAM[s:e].decode(): (kind, flags, ref)
               for kind, _, flags, s, e, ref, _ in got if s >= 0}
    kind, flags, _ = by_text["p + 1"]
    assert kind == ci.CursorKind.BINARY_OPERATOR.value
    assert flags & cursor_walk.GLOBAL_POINTER and flags & cursor_walk.POINTERISH
    assert flags & cursor_walk.WANTED
    _, flags, _ = by_text["*(p + 1)"]
    assert flags & cursor_walk.GLOBAL_OBJECT and not flags & cursor_walk.GLOBAL_POINTER
    assert not flags & cursor_walk.WANTED  # only asked of a macro's body
    kind, flags, ref = next(v for t, v in by_text.items() if t == "plain")
    assert kind == ci.CursorKind.DECL_REF_EXPR.value
    assert ref == ci.CursorKind.FUNCTION_DECL.value and flags & cursor_walk.WANTED
    _, flags, _ = by_text["a"]
    assert flags & cursor_walk.ARRAY and flags & cursor_walk.WANTED
    assert by_text["plain(n)"][1] & cursor_walk.WANTED  # every call
    _, flags, ref = by_text["n"]
    assert ref == ci.CursorKind.PARM_DECL.value and not flags & cursor_walk.WANTED
    assert all(flags & cursor_walk.IN_MAIN for _, _, flags, *_ in got)


def test_locals_are_wanted_in_threaded_functions_only(
        parsed: tuple[ci.TranslationUnit, libclang.Raw]) -> None:
    tu, raw = parsed
    top = _function(tu, "sum")
    var = ci.CursorKind.VAR_DECL.value
    plain = [flags for kind, _, flags, *_ in _walk(raw, top) if kind == var]
    threaded = [flags for kind, _, flags, *_ in _walk(raw, top, threaded=True) if kind == var]
    assert len(plain) == len(threaded) == 2
    assert not any(f & cursor_walk.WANTED for f in plain)
    assert all(f & cursor_walk.WANTED for f in threaded)


def test_the_enum_values_are_the_bindings() -> None:
    for name in ("FUNCTION_DECL", "VAR_DECL", "PARM_DECL", "UNEXPOSED_EXPR", "DECL_REF_EXPR",
                 "CALL_EXPR", "INTEGER_LITERAL", "FLOATING_LITERAL", "STRING_LITERAL",
                 "CHARACTER_LITERAL", "LABEL_STMT", "RETURN_STMT"):
        assert cursor_walk.constant(True, name) == ci.CursorKind.__dict__[name].value, name
    for name in ("INVALID", "POINTER", "TYPEDEF", "CONSTANTARRAY", "INCOMPLETEARRAY",
                 "VARIABLEARRAY", "DEPENDENTSIZEDARRAY", "ELABORATED"):
        assert cursor_walk.constant(False, name) == ci.TypeKind.__dict__[name].value, name
    assert cursor_walk.constant(True, "NOT_A_KIND") == -1


def test_the_node_layout_is_the_c_one() -> None:
    # the C struct: a 32-byte CXCursor, seven int32, a uint32, a CXCursor, two int32
    assert ctypes.sizeof(ci.Cursor) == 32
    assert ctypes.sizeof(cursor_walk.Node) == 32 + 8 * 4 + 32 + 2 * 4


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_the_library_builds_without_warnings(cc: str, tmp_path: Path) -> None:
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed")
    proc = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Wshadow",
                           "-Wstrict-prototypes", "-Wmissing-prototypes", "-Werror", "-fPIC",
                           "-shared", "-o", str(tmp_path / "walk.so"), str(SOURCE), "-ldl"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr


def test_a_missing_library_is_an_error(tmp_path: Path) -> None:
    tc = tmp_path / "p.tc"
    tc.write_text("THREADED MAIN(void) { END_FUNCTION(); }\n")
    script = ("import sys\nfrom pathlib import Path\nfrom etcpre.passes import cursor_walk\n"
              f"cursor_walk.LIBRARY = {str(tmp_path / 'none.so')!r}\n"
              "from etcpre.cli import etcpre_cmd\n"
              f"sys.exit(etcpre_cmd.main([{str(tc)!r}]))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False, cwd=ROOT)
    assert proc.returncode != 0
    assert proc.stderr.startswith("etc: error: etcpre's cursor walk is not built"), proc.stderr
    assert "Traceback" not in proc.stderr
