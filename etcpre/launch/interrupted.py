"""What an interrupted run says (L7, R11): one line naming what every node was
running, as the smp supervisor says it (core/functions.c), from the tcp launcher's
WHERE answers or from the lines the mpi ranks print when their launcher stops them."""

from __future__ import annotations

import re

# a rank's own line when its MPI launcher stops it (core/crash.c), maybe tagged "[K] "
RANK_WAS = re.compile(r"^(?:\[\d+\] )?etc: interrupted \([A-Z0-9]+\): node (\d+) was (.+)$")


def describe_ran(ran: list[str | None]) -> str:
    """'nodes 0-2 were in thread 0 of 'spin' (x.tc:7); node 3 was idle'; nodes that
    did not say are left out."""
    parts = []
    k = 0
    while k < len(ran):
        last = k
        while last + 1 < len(ran) and ran[last + 1] == ran[k]:
            last += 1
        if ran[k] is not None:
            parts.append(f"node {k} was {ran[k]}" if last == k else
                         f"nodes {k}-{last} were {ran[k]}")
        k = last + 1
    return "; ".join(parts)


def interrupted_line(signame: str, n: int, ran: list[str | None]) -> str:
    """'etc: interrupted (SIGINT): stopped all 3 nodes; nodes 0-2 were ...'"""
    said = describe_ran(ran)
    return (f"etc: interrupted ({signame}): stopped all {n} node{'s' if n != 1 else ''}"
            f"{'; ' + said if said else ''}")
