"""What libclang says about a .tc file (`clang_view` gathers it in the clang child):
plain data with offsets into the working text, which the passes after it read without
loading libclang. The records are named tuples: both processes make their classes
while the other waits (a frozen dataclass takes 7 times as long to make), and
thousands of them cross the pipe.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from etcpre.passes.text import Edit


class Diag(NamedTuple):
    """A clang diagnostic: in the main file when `path` is None (offset in the working
    text), else in a header (offset in the header as written). `always`: forward it;
    otherwise only when it lies in the arguments of a primitive, whose lowering hides
    the types from cc."""

    path: str | None
    offset: int
    error: bool
    message: str
    always: bool = True


class Param(NamedTuple):
    name: str  # "" for an unnamed parameter of a prototype
    text: str  # the declaration as written
    type: str  # its (adjusted) type, spelled as in Threaded-C
    canonical: str  # the same, canonical (compared across declarations)
    layout: str  # what the parameter frame's layout depends on: "size.align.kind"
    assignable: bool  # `=` can copy it: no const in it, at the top or in a member
    top_const: bool  # const-qualified itself (the parameter frame drops that)
    member_const: bool  # a member or element is const


class ThreadedDecl(NamedTuple):
    """A THREADED function declared or defined in the file or a header it includes."""

    name: str
    params: tuple[Param, ...]
    path: str | None  # None: the main file
    offset: int  # of the name (working text for the main file)
    line: int
    definition: bool
    static: bool


class Arg(NamedTuple):
    """An argument of a call to a primitive, as clang sees it."""

    constant: str  # "int", "float", "char" or "" (not a constant)
    value: int | None
    pointee: tuple[int, str, str] | None  # pointer argument: (size, kind, type), before
    # the prelude's conversion; kind is "integer", "floating", "pointer" or "other"


class Call(NamedTuple):
    callee: str
    what: str  # "primitive", "threaded", "function", "undeclared", "other"
    args: tuple[Arg, ...]


class Store(NamedTuple):
    """One store of an in-place initialisation: `<variable><path> = <expression>`."""

    path: str  # designator path ("", ".a", "[2].b", ...)
    start: int  # the initialising expression in the working text
    end: int
    string: bool  # a string literal initialising a char array


class Var(NamedTuple):
    """A variable declared in a threaded function (by its name's offset)."""

    vla: bool
    array_size: int | None  # size of `T a[] = {...}`
    assignable: bool
    stores: tuple[Store, ...] | None  # initialiser list as stores, None: not one
    zero_first: bool  # the stores leave part of the object to zero


@dataclass
class Facts:
    fatal: Diag | None = None
    diagnostics: list[Diag] = field(default_factory=list)
    skipped: list[tuple[int, int]] = field(default_factory=list)  # inactive #if code
    expansions: list[Edit] = field(default_factory=list)  # macro uses to see through
    expansion_errors: list[tuple[int, str]] = field(default_factory=list)
    global_pointers: set[tuple[int, int]] = field(default_factory=set)
    global_decays: set[tuple[int, int]] = field(default_factory=set)  # GLOBAL arrays
    arrays: set[tuple[int, int]] = field(default_factory=set)  # expressions of array type
    calls: dict[int, Call] = field(default_factory=dict)  # by callee name offset
    vars: dict[int, Var] = field(default_factory=dict)  # by declared name offset
    threaded: dict[str, list[ThreadedDecl]] = field(default_factory=dict)
    # a threaded function's name: (offset, name, called like a C function)
    threaded_uses: list[tuple[int, str, bool]] = field(default_factory=list)
    functions: set[str] = field(default_factory=set)  # plain C functions declared

    def absorb(self, later: Facts) -> None:
        """Adds what a walk of the file's later declarations found (this one walked the
        declarations before them, and holds the file-wide facts: diagnostics, skipped
        code). The later part's entries come after this part's, as one walk over the
        whole file puts them."""
        self.global_pointers |= later.global_pointers
        self.global_decays |= later.global_decays
        self.arrays |= later.arrays
        self.calls.update(later.calls)
        self.vars.update(later.vars)
        for name, decls in later.threaded.items():
            self.threaded.setdefault(name, []).extend(decls)
        self.threaded_uses += later.threaded_uses
        self.functions |= later.functions
