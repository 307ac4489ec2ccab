"""Where a pipelined remote INVOKE goes, against a pipelined remote sync (issues 17, 19):
callgrind's instructions per operation on each of two tcp nodes, grouped by the part of
the runtime (or the program) each line belongs to. The goal compares times (an INVOKE at
most 3x a sync); this says how much of that ratio is work each node must do, which no
tuning of waits removes. Kernel time (the sockets' system calls) is not in it."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from benchlib import (
    BENCH,
    BIN,
    OUT,
    BenchError,
    callgrind_costs,
    etc_h_functions,
    etcc,
    per_unit,
    run,
    table,
)

# the inline functions of etc.h by the part they belong to (others: the scheduler's)
FRAME_FNS = {"etc_frame_alloc", "etc_block_free"}
SEND_FNS = {"etc_rsync_g", "etc_untag_own", "etc_tag_of"}
# functions of the core (remote.c, rts.h) and the layer (tcp.c, net/common) by part
CORE_SEND = {"etc_send", "send_comm", "etc_rsync_remote", "etc_invoke_remote"}
LAYER_SEND = {"etc_net_send", "etc_net_extend", "write_peer", "flush_all", "send_direct",
              "etc_net_flush",
              "etc_coalesce_flush", "etc_coalesce_flush_all", "etc_coalesce_put",
              "etc_wire_put_frame", "etc_wire_reserve"}
# memory a queue of calls takes the first time: new frames, a bigger ready queue
GROWTH_FNS = {"etc_alloc_slow", "etc_rq_grow", "etc_tq_grow", "ring_grow"}
LAYER_FILES = {"tcp.c", "wire.h", "wire.c", "frag.c", "frag.h", "gate.h", "gate.c"}

PARTS = {
    "threads": "the program's threads (ops.tc)",
    "frames": "parameter and activation frames (allocate, free)",
    "send": "sending: the core's send path and the layer's coalescing",
    "receive": "receiving: the layer's polls, reads and frame parsing",
    "dispatch": "dispatch: handler table and handlers",
    "sched": "scheduler: ready queue, slots, run loop, idle loop",
    "copy": "copies of parameter frames into the queued calls (inline, or memcpy)",
    "other": "other",
    "growth": "a queue's first growth: new frames, a bigger ready queue",
}


def part_of(key: tuple[str, str, int], etc_h: dict[int, str]) -> str:
    """The part a line's instructions count to. Code inlined from a header is
    callgrind's under the function it was inlined into (`fn`)."""
    path, fn, line = key
    name = Path(path).name
    if name == "ops.tc":
        return "threads"
    if name == "etc.h":
        inline = etc_h.get(line, "")
        if inline in FRAME_FNS:
            return "frames"
        if inline == "etc_copy_small":  # a message's bytes, sent or taken off
            return "send" if fn in CORE_SEND | LAYER_SEND else "copy"
        return "send" if inline in SEND_FNS else "sched"
    if name == "alloc.c":
        return "growth" if fn in GROWTH_FNS else "frames"
    if name in LAYER_FILES:
        return "send" if fn in LAYER_SEND else "receive"
    if name in ("remote.c", "rts.h"):
        if fn in CORE_SEND:
            return "send"
        return "dispatch" if fn == "etc_deliver" or fn.startswith("handle_") else "other"
    if name in ("sched.c", "term.c"):
        return "sched"
    if "libc" in path or "memmove" in path or "memcpy" in path:
        return "copy"
    return "other"


def node_costs(prog: Path, test: str, count: int, arg: int,
               ) -> list[dict[tuple[str, str, int], int]]:
    """Instructions by line of node 0 and node 1 of one tcp run of ops.tc, each node
    under callgrind (etcrun's own process is traced too, and left out)."""
    with tempfile.TemporaryDirectory(dir=OUT) as tmp:
        run(["valgrind", "--tool=callgrind", "--trace-children=yes", "--compress-pos=no",
             "--compress-strings=no", f"--callgrind-out-file={tmp}/cg.%p",
             str(BIN / "etcrun"), "-n", "2", str(prog), test, str(count), str(arg), "1"],
            timeout=900)
        nodes = []
        for out in sorted(Path(tmp).glob("cg.*")):
            cmd = next((x for x in out.read_text(errors="replace")[:8192].splitlines()
                        if x.startswith("cmd:")), "")
            if cmd[4:].split()[:1] == [str(prog)]:
                nodes.append(callgrind_costs(out))
    if len(nodes) != 2:
        raise BenchError(f"expected 2 nodes of {prog.name} under callgrind, found {len(nodes)}")
    # node 0 runs the test's thread (t_call, t_pingpong): it has ops.tc lines in _t_
    nodes.sort(key=lambda c: not any(fn.startswith("_t_") for _, fn, _ in c))
    return nodes


def breakdown(prog: Path, test: str, arg: int, small: int, large: int,
              ) -> list[dict[str, float]]:
    """Instructions per operation of each node by part: the run of `large` operations
    minus the run of `small`, over the difference."""
    etc_h = etc_h_functions()
    runs = [node_costs(prog, test, n, arg) for n in (small, large)]
    out = []
    for k in (0, 1):
        parts: dict[str, float] = {}
        for key, ir in per_unit(runs[0][k], runs[1][k], large - small).items():
            part = part_of(key, etc_h)
            parts[part] = parts.get(part, 0.0) + ir
        out.append(parts)
    return out


def lines(invoke_ns: float, sync_ns: float) -> list[str]:
    """The breakdown's table and what it says of the goal's ratio, `invoke_ns` and
    `sync_ns` being the times measured in the same run."""
    if shutil.which("valgrind") is None:
        return ["(valgrind is not installed: no breakdown of a remote INVOKE.)", ""]
    prog = etcc(BENCH / "ops" / "ops.tc", OUT / "ops" / "ops-tcp-g", "-target", "tcp",
                "-ggdb")
    n = 20_000  # instruction counts: a bigger run adds time under callgrind, not accuracy
    call = breakdown(prog, "call_pipe", 1, n, 2 * n)
    sync = breakdown(prog, "sync_pipe", 0, n, 2 * n)
    cols = [call[0], call[1], sync[0], sync[1]]
    rows = []
    for part, label in PARTS.items():
        values = [c.get(part, 0.0) for c in cols]
        if any(abs(v) >= 0.5 for v in values):
            rows.append([label, *values])
    totals = [sum(c.values()) for c in cols]
    steady = [t - c.get("growth", 0.0) for t, c in zip(totals, cols, strict=True)]
    rows.append(["**all**", *totals])
    rows.append(["**all but the growth**", *steady])
    busiest_call, busiest_sync = max(steady[:2]), max(steady[2:])
    ratio = busiest_call / busiest_sync
    text = [f"**Where a pipelined remote INVOKE goes** (issues 17, 19): instructions per "
            f"operation by callgrind on each tcp node, a run of {2 * n:,} operations minus "
            f"one of {n:,}, by the part of the runtime each line is in (`-O2 -ggdb`). A "
            "remote INVOKE is a call in a message that the next calls of the same function "
            "join (docs/protocols.md, N13), the RSYNC its function sends back, and a "
            "parameter frame and an activation frame on the invoked node; a pipelined sync "
            "is one message and a slot's decrement. System calls are not "
            "counted. Under callgrind the invoked node falls behind the invoking one, so "
            "every call of the run queues and takes fresh memory (the growth row); at "
            "full speed the queue stays a few thousand calls deep and the frames come "
            "from the free lists, so the comparison leaves the growth out.", ""]
    text += table(["part", "INVOKE: invoking node", "INVOKE: invoked node",
                   "sync: sending node", "sync: receiving node"], rows)
    text.append(f"The busier node of an INVOKE runs {busiest_call:.0f} instructions a call, "
                f"of a sync {busiest_sync:.0f} a sync: **{ratio:.2f}x** the work, against "
                f"{invoke_ns / sync_ns:.2f}x the time measured above. The work ratio is the "
                "part of the time ratio that no change of waiting or scheduling removes; "
                "what instructions do not count makes the rest: the sockets' system calls "
                "(per INVOKE a call's 16 bytes out and a reply frame back, per sync one "
                "frame) "
                "and memory stalls.")
    text.append("")
    return text
