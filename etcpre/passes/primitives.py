"""The Threaded-C primitives (reference section 2, thesis appendix A) as data.

The grammar keeps primitives as ordinary calls (see docs/architecture.md); this table is
what the analyse and lower passes use to recognise and check them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    CONTROL = "control"  # END_THREAD, END_FUNCTION, RETURN
    START = "start"  # INVOKE, TOKEN, CALL
    SLOT = "slot"  # operate on a local slot number
    REMOTE = "remote"  # operate on a global slot pointer / frame
    TRANSFER = "transfer"  # DATA_/GET_/BLKMOV_
    ADDRESS = "address"  # SLOT_ADR, FRAME_ADR, IP_ADR
    ANYWHERE = "anywhere"  # usable in plain C too (POLL, global-address operations)


@dataclass(frozen=True)
class Primitive:
    name: str
    kind: Kind
    arity: int | None  # None: variadic (INVOKE/TOKEN/CALL)
    slot_arg: int | None = None  # index of a local slot-number argument
    thread_arg: int | None = None  # index of a thread-number argument
    runtime: str = ""  # runtime function it lowers to, where it is a plain mapping


SUFFIXES: dict[str, str] = {
    # suffix -> runtime suffix; the value types are the runtime's (etc.h)
    "B": "b", "S": "s", "L": "l", "LL": "ll", "F": "f", "D": "d", "G": "g",
}


def _table() -> dict[str, Primitive]:
    prims = [
        Primitive("END_THREAD", Kind.CONTROL, 0),
        Primitive("END_FUNCTION", Kind.CONTROL, 0),
        Primitive("RETURN", Kind.CONTROL, 0),
        Primitive("INVOKE", Kind.START, None),
        Primitive("TOKEN", Kind.START, None),
        Primitive("CALL", Kind.START, None),
        Primitive("INIT_SYNC", Kind.SLOT, 4, slot_arg=0, thread_arg=3),
        Primitive("SYNC", Kind.SLOT, 1, slot_arg=0),
        Primitive("INCR_SYNC", Kind.SLOT, 2, slot_arg=0),
        Primitive("SPAWN", Kind.SLOT, 1, thread_arg=0),
        Primitive("RSYNC", Kind.REMOTE, 1, runtime="etc_rsync"),
        Primitive("INCR_RSYNC", Kind.REMOTE, 2, runtime="etc_incr_rsync"),
        Primitive("RSPAWN", Kind.REMOTE, 2),
        Primitive("SLOT_ADR", Kind.ADDRESS, 1, slot_arg=0),
        Primitive("FRAME_ADR", Kind.ADDRESS, 0),
        Primitive("IP_ADR", Kind.ADDRESS, 1, thread_arg=0),
        Primitive("BLKMOV_SYNC", Kind.TRANSFER, 4, slot_arg=3, runtime="etc_blkmov_sync"),
        Primitive("BLKMOV_RSYNC", Kind.TRANSFER, 4, runtime="etc_blkmov_sync"),
        Primitive("POLL", Kind.ANYWHERE, 0),
        Primitive("TO_GLOBAL", Kind.ANYWHERE, 1),
        Primitive("TO_LOCAL", Kind.ANYWHERE, 1),
        Primitive("MAKE_GPTR", Kind.ANYWHERE, 2),
        Primitive("OWNER_OF", Kind.ANYWHERE, 1),
        Primitive("IS_OWNER", Kind.ANYWHERE, 1),
    ]
    for sfx, rt in SUFFIXES.items():
        prims += [
            Primitive(f"DATA_SYNC_{sfx}", Kind.TRANSFER, 3, slot_arg=2,
                      runtime=f"etc_data_sync_{rt}"),
            Primitive(f"DATA_RSYNC_{sfx}", Kind.TRANSFER, 3, runtime=f"etc_data_sync_{rt}"),
            Primitive(f"GET_SYNC_{sfx}", Kind.TRANSFER, 3, slot_arg=2,
                      runtime=f"etc_get_sync_{rt}"),
            Primitive(f"GET_RSYNC_{sfx}", Kind.TRANSFER, 3, runtime=f"etc_get_sync_{rt}"),
        ]
    return {p.name: p for p in prims}


PRIMITIVES: dict[str, Primitive] = _table()

# Names that are values, not calls; allowed everywhere.
VALUE_PRIMITIVES = frozenset({"NUM_NODES", "NODE_ID"})
