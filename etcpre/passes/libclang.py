"""What etcpre needs from libclang beyond the Python binding.

The binding (`clang.cindex`, PyPI `libclang`) leaves out a few functions of the C API
that decide what the translator must know: where a token of a macro argument was
written (`clang_getFileLocation`) and which preprocessor branches are inactive
(`clang_getSkippedRanges`). They are bound here with ctypes (the value of a constant
expression, `clang_Cursor_Evaluate`, is asked through `cursor_walk`).

They are used in the clang child only (`clang_child`).
"""

from __future__ import annotations

import ctypes
from typing import Any

import clang.cindex as ci


class _RangeList(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint), ("ranges", ctypes.POINTER(ci.SourceRange))]


_bound = False


def _bind() -> None:
    global _bound  # noqa: PLW0603 - a process-wide fact: the functions are declared once
    if _bound:
        return
    for name, argtypes, restype in [
        ("clang_getSkippedRanges", [ci.TranslationUnit, ci.File],
         ctypes.POINTER(_RangeList)),
        ("clang_disposeSourceRangeList", [ctypes.POINTER(_RangeList)], None),
    ]:
        function = getattr(ci.conf.lib, name)
        function.argtypes = argtypes
        function.restype = restype
    _bound = True


def file_handle(f: ci.File) -> int:
    return ctypes.cast(f.obj if hasattr(f, "obj") else f._as_parameter_,
                       ctypes.c_void_p).value or 0


def file_name(handle: int) -> str:
    return ci.File(ctypes.cast(ctypes.c_void_p(handle), ci.c_object_p)).name


class Raw:
    """The functions the translator calls on many cursors, bound without the binding's
    wrapping (the walk over every cursor of a body is `cursor_walk`'s, in C):
    `clang.cindex` checks every child against the null cursor (two more calls) and
    wraps every result in Python objects. Here a cursor's and a type's kind is the struct's
    `_kind_id`; results are bare `ci.Cursor`, `ci.Type` and `ci.SourceLocation`
    structs without the binding's `_tu` (set it before using the binding's methods
    on them). One per parse, used on one thread (the out-parameters are reused)."""

    def __init__(self) -> None:
        lib = ci.conf.lib

        def bind(name: str, argtypes: list[type], restype: type | None) -> Any:
            function = lib[name]  # a new function object: the binding's stays as it was
            function.argtypes = argtypes
            function.restype = restype
            return function

        cursor, typ, loc = ci.Cursor, ci.Type, ci.SourceLocation
        self.visit = bind("clang_visitChildren", [cursor, _VISITOR, ctypes.py_object],
                          ctypes.c_uint)
        self.cursor_type = bind("clang_getCursorType", [cursor], typ)
        self.canonical = bind("clang_getCanonicalType", [typ], typ)
        self.pointee = bind("clang_getPointeeType", [typ], typ)
        self.element = bind("clang_getElementType", [typ], typ)
        self.referenced = bind("clang_getCursorReferenced", [cursor], cursor)
        self.semantic_parent = bind("clang_getCursorSemanticParent", [cursor], cursor)
        self.is_null = bind("clang_Cursor_isNull", [cursor], ctypes.c_int)
        self.equal = bind("clang_equalCursors", [cursor, cursor], ctypes.c_uint)
        self.location = bind("clang_getCursorLocation", [cursor], loc)
        self.extent = bind("clang_getCursorExtent", [cursor], ci.SourceRange)
        self.range_start = bind("clang_getRangeStart", [ci.SourceRange], loc)
        self.range_end = bind("clang_getRangeEnd", [ci.SourceRange], loc)
        out = [loc, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint),
               ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint)]
        self._file_location = bind("clang_getFileLocation", out, None)
        self._file = ctypes.c_void_p()
        self._offset = ctypes.c_uint()
        self._file_p = ctypes.pointer(self._file)
        self._offset_p = ctypes.pointer(self._offset)
        self._visitor = _VISITOR(_append_child)  # kept alive as long as this object
        # the main file's locations: [main_base, main_limit] of clang's encoding
        self.main_handle = 0
        self.main_base, self.main_limit = 1, 0

    def children(self, cur: ci.Cursor) -> list[ci.Cursor]:
        out: list[ci.Cursor] = []
        self.visit(cur, self._visitor, out)
        return out

    def know_main_file(self, tu: ci.TranslationUnit, path: str, size: int) -> int:
        """The main file's handle. Its locations are then read from their encoding:
        clang numbers the places of all files in one space, a file's bytes
        contiguous from where it starts, with the top bit for macro expansions (the
        libclang version is pinned); the first and last offset are checked."""
        f = tu.get_file(path)
        self.main_handle = handle = file_handle(f)
        first = ci.SourceLocation.from_offset(tu, f, 0)
        last = ci.SourceLocation.from_offset(tu, f, size)
        if self.file_location(first) == (handle, 0) and \
                self.file_location(last) == (handle, size) and \
                last.int_data - first.int_data == size and not last.int_data & _MACRO_BIT:
            self.main_base, self.main_limit = first.int_data, last.int_data
        return handle

    def file_location(self, loc: ci.SourceLocation) -> tuple[int, int]:
        """(file, offset) where a location was written: for a token of a macro
        argument its place in the argument, for a token of a macro's body the macro's
        use. The file is libclang's handle (0 for none; `file_name` gives its name):
        comparing handles is much cheaper than comparing names."""
        if self.main_base <= loc.int_data <= self.main_limit:
            return self.main_handle, loc.int_data - self.main_base
        self._file_location(loc, self._file_p, None, None, self._offset_p)
        return self._file.value or 0, self._offset.value

    def main_range(self, cur: ci.Cursor) -> tuple[int, int] | None:
        """The offsets of a cursor's extent in the main file (None: elsewhere, in
        part or whole)."""
        ext = self.extent(cur)
        base, limit = self.main_base, self.main_limit
        start, end = ext.begin_int_data, ext.end_int_data
        if base <= start <= limit and base <= end <= limit:
            return start - base, end - base
        handle, start = self.file_location(self.range_start(ext))
        if handle != self.main_handle:
            return None
        handle, end = self.file_location(self.range_end(ext))
        if handle != self.main_handle:
            return None
        return start, end


_MACRO_BIT = 1 << 31  # of a location's encoding: a place in a macro expansion
_VISITOR = ctypes.CFUNCTYPE(ctypes.c_int, ci.Cursor, ci.Cursor, ctypes.py_object)
_CONTINUE = 1  # CXChildVisit_Continue: the next sibling, not this cursor's children


def _append_child(child: ci.Cursor, _parent: ci.Cursor, out: list[ci.Cursor]) -> int:
    out.append(child)
    return _CONTINUE


def skipped_ranges(tu: ci.TranslationUnit, path: str) -> list[tuple[int, int]]:
    """Byte ranges of `path` the preprocessor skipped (inactive #if branches)."""
    _bind()
    f = tu.get_file(path)
    lst = ci.conf.lib.clang_getSkippedRanges(tu, f)
    if not lst:
        return []
    try:
        return [(lst.contents.ranges[i].start.offset, lst.contents.ranges[i].end.offset)
                for i in range(lst.contents.count)]
    finally:
        ci.conf.lib.clang_disposeSourceRangeList(lst)
