"""The clang view's walk over a function's cursors, done in C (`etcpre/native/`).

`make` builds `build/native/libetc_cursor_walk.so`. One `walk` call hands back every
cursor of a function (or file-scope variable) in the clang view's visiting order, with
its kind, parent, children, extent in the main file (working-text offsets), the class
of its type and the kind of what it refers to, and the indices of the few cursors the
Python side must look at (`Tree.wanted`); the library calls the libclang.so the
binding loaded.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import clang.cindex as ci

from etcpre.passes.clang_child import NotBuilt
from etcpre.passes.text import EditMap

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
LIBRARY = os.path.join(_ROOT, "build", "native", "libetc_cursor_walk.so")

# Node.flags, as cursor_walk.c sets them
EXPRESSION = 1 << 0
POINTERISH = 1 << 1
GLOBAL_POINTER = 1 << 2
ARRAY = 1 << 3
GLOBAL_ARRAY = 1 << 4
GLOBAL_OBJECT = 1 << 5
IN_MAIN = 1 << 6
WANTED = 1 << 7


class _File(ctypes.Structure):
    _fields_ = [("handle", ctypes.c_void_p), ("base", ctypes.c_uint),
                ("limit", ctypes.c_uint), ("global_address_space", ctypes.c_uint),
                ("edit_new_starts", ctypes.POINTER(ctypes.c_int32)),
                ("edit_lengths", ctypes.POINTER(ctypes.c_int32)),
                ("edit_old_starts", ctypes.POINTER(ctypes.c_int32)),
                ("edit_old_ends", ctypes.POINTER(ctypes.c_int32)),
                ("edits", ctypes.c_size_t)]


class MainFile:
    """What the walk knows of the main file: libclang's handle of it, where its
    locations lie in clang's encoding (`libclang.Raw.know_main_file`), the address
    space of GLOBAL, and the map from clang's view to the working text (the walk's
    offsets are the working text's)."""

    def __init__(self, handle: int, base: int, limit: int, global_address_space: int,
                 view_map: EditMap) -> None:
        columns = view_map.table()
        self._columns = [(ctypes.c_int32 * len(c))(*c) for c in columns]  # kept alive
        self.c = _File(handle, base, limit, global_address_space, *self._columns,
                       len(columns[0]))


class Node(ctypes.Structure):
    _fields_ = [("cursor", ci.Cursor), ("kind", ctypes.c_int32), ("parent", ctypes.c_int32),
                ("kids", ctypes.c_int32), ("kid_count", ctypes.c_int32),
                ("start", ctypes.c_int32), ("end", ctypes.c_int32),
                ("ref_kind", ctypes.c_int32), ("flags", ctypes.c_uint32), ("ref", ci.Cursor),
                ("expansion", ctypes.c_int32), ("spelling", ctypes.c_int32)]


class _Value(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("is_unsigned", ctypes.c_int),
                ("as_signed", ctypes.c_longlong), ("as_unsigned", ctypes.c_ulonglong),
                ("as_double", ctypes.c_double)]


# _Value.kind (clang's CXEvalResultKind)
EVAL_INT = 1
EVAL_FLOAT = 2


class _Tree(ctypes.Structure):
    _fields_ = [("nodes", ctypes.POINTER(Node)), ("count", ctypes.c_size_t),
                ("kids", ctypes.POINTER(ctypes.c_int32)), ("kid_total", ctypes.c_size_t),
                ("wanted", ctypes.POINTER(ctypes.c_int32)), ("wanted_count", ctypes.c_size_t)]


@dataclass(frozen=True)
class Tree:
    """A walked function: valid inside `Walker.walk`'s `with` only (the C library owns
    the memory; copy a cursor that must outlive it)."""

    nodes: ctypes.Array[Node]
    kids: ctypes.Array[ctypes.c_int32]
    wanted: list[int]

    def children(self, node: Node) -> list[int]:
        return list(self.kids[node.kids:node.kids + node.kid_count])


class Walker:
    """The library bound to the binding's libclang (one per parse)."""

    def __init__(self) -> None:
        lib = _library()
        self._walk = lib.etc_walk
        self._free = lib.etc_walk_free
        self._evaluate = lib.etc_walk_evaluate
        self._value = _Value()
        self._value_p = ctypes.byref(self._value)

    def evaluate(self, cur: ci.Cursor) -> tuple[int, int | float | None]:
        """(kind, value) of a constant expression: kind EVAL_INT or EVAL_FLOAT (value
        set), another kind (value None), or 0 when it is not constant."""
        self._evaluate(cur, self._value_p)
        v = self._value
        if v.kind == EVAL_INT:
            return v.kind, int(v.as_unsigned if v.is_unsigned else v.as_signed)
        if v.kind == EVAL_FLOAT:
            return v.kind, float(v.as_double)
        return v.kind, None

    @contextmanager
    def walk(self, main: MainFile, top: ci.Cursor, threaded: bool,
             macros: bool) -> Iterator[Tree]:
        tree = _Tree()
        try:
            if self._walk(ctypes.byref(main.c), top, int(threaded), int(macros),
                          ctypes.byref(tree)) != 0:
                raise MemoryError("the cursor walk ran out of memory")
            nodes = (Node * tree.count).from_address(
                ctypes.addressof(tree.nodes.contents)) if tree.count else (Node * 0)()
            kids = (ctypes.c_int32 * tree.kid_total).from_address(
                ctypes.addressof(tree.kids.contents)) if tree.kid_total else \
                (ctypes.c_int32 * 0)()
            wanted = tree.wanted[:tree.wanted_count] if tree.wanted_count else []
            yield Tree(nodes, kids, wanted)
        finally:
            self._free(ctypes.byref(tree))


def constant(cursor_kind: bool, name: str) -> int:
    """The value cursor_walk.c uses for a clang.cindex CursorKind (or TypeKind) name,
    -1 for one it does not use."""
    return int(_library().etc_walk_constant(int(cursor_kind), name.encode()))


def _library() -> ctypes.CDLL:
    if not os.path.isfile(LIBRARY):
        raise NotBuilt(f"etcpre's cursor walk is not built ({LIBRARY}); run make")
    try:
        lib = ctypes.CDLL(LIBRARY)
    except OSError as exc:
        raise NotBuilt(f"etcpre's cursor walk cannot be loaded: {exc}") from None
    lib.etc_walk_bind.argtypes = [ctypes.c_void_p]
    lib.etc_walk_bind.restype = ctypes.c_char_p
    lib.etc_walk.argtypes = [ctypes.POINTER(_File), ci.Cursor, ctypes.c_int, ctypes.c_int,
                             ctypes.POINTER(_Tree)]
    lib.etc_walk.restype = ctypes.c_int
    lib.etc_walk_free.argtypes = [ctypes.POINTER(_Tree)]
    lib.etc_walk_free.restype = None
    lib.etc_walk_evaluate.argtypes = [ci.Cursor, ctypes.POINTER(_Value)]
    lib.etc_walk_evaluate.restype = None
    lib.etc_walk_constant.argtypes = [ctypes.c_int, ctypes.c_char_p]
    lib.etc_walk_constant.restype = ctypes.c_int
    missing = lib.etc_walk_bind(ci.conf.lib._handle)
    if missing is not None:
        raise NotBuilt(f"the libclang etcpre loaded has no {missing.decode()}")
    return lib


def check() -> None:
    """Raises NotBuilt when the library cannot be used (asked first in the clang
    child, which hands it back, so that the message reaches the user as it is)."""
    _library()
