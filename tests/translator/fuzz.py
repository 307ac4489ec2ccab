"""Mutation fuzzer for etcpre: mutated samples must never crash or hang the translator.

`python tests/translator/fuzz.py SECONDS [SEED]` (also `make fuzz`); the suite runs it
for a few seconds. Every input either translates or yields diagnostics; an exception
is a failure and is printed with the input that caused it.
"""

from __future__ import annotations

import random
import re
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from etcpre.diagnostics import DiagnosticSink  # noqa: E402
from etcpre.source import SourceFile  # noqa: E402
from etcpre.translate import Options, translate  # noqa: E402

TOKENS = [b"THREAD_1:", b"THREAD_0:", b"THREAD_99:", b"END_THREAD();", b"END_FUNCTION();",
          b"RETURN();", b"INVOKE(", b"TOKEN(", b"CALL(", b"SYNC(0);", b"INIT_SYNC(0,1,1,1);",
          b"GLOBAL", b"*GLOBAL", b"SLOT SYNC_SLOTS[2];", b"{", b"}", b"(", b")", b";", b",",
          b"#if 1\n", b"#endif\n", b"#define X\n", b"\"", b"'", b"/*", b"*/", b"\\",
          b"THREADED", b"\x00", b"\xff\xfe", b"int", b"goto L;", b"L:", b"return;",
          b"SPAWN(1);", b"SLOT_ADR(0)", b"TO_GLOBAL(&", b"->", b"[", b"]", b"\n"]


def corpus() -> list[bytes]:
    files = sorted((ROOT / "samples").glob("*.tc")) + sorted((ROOT / "tests/golden").glob("*.tc"))
    return [f.read_bytes() for f in files]


WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*|-?[0-9]+")
NUMBERS = [b"0", b"1", b"-1", b"2", b"3", b"99", b"2147483648", b"0x10"]


def mutate_words(rng: random.Random, data: bytes) -> bytes:
    """Syntax-preserving mutations: the deeper passes see these."""
    words = [m for m in WORD.finditer(data)]
    if not words:
        return data
    m = rng.choice(words)
    w = m.group()
    if w.lstrip(b"-").isdigit():
        new = rng.choice(NUMBERS)
    elif w.isupper() and rng.random() < 0.7:
        new = rng.choice([b"SYNC", b"RSYNC", b"SPAWN", b"INIT_SYNC", b"INVOKE", b"TOKEN",
                          b"CALL", b"END_THREAD", b"END_FUNCTION", b"RETURN", b"SLOT_ADR",
                          b"TO_GLOBAL", b"TO_LOCAL", b"DATA_RSYNC_L", b"GET_SYNC_G",
                          b"THREAD_1", b"THREAD_2", b"GLOBAL", b"MAIN", b"NODE_ID"])
    else:
        new = rng.choice(words).group()
    return data[:m.start()] + new + data[m.end():]


def mutate(rng: random.Random, data: bytes) -> bytes:
    if rng.random() < 0.5:
        for _ in range(rng.randint(1, 3)):
            data = mutate_words(rng, data)
        return data
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        pos = rng.randrange(len(buf) + 1)
        if op == 0 and buf:  # delete a span
            del buf[pos:pos + rng.randint(1, 40)]
        elif op == 1:  # insert a token
            buf[pos:pos] = rng.choice(TOKENS)
        elif op == 2 and buf:  # duplicate a span
            span = buf[pos:pos + rng.randint(1, 80)]
            buf[rng.randrange(len(buf) + 1):0] = span
        elif op == 3:  # random bytes
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
        elif buf:  # swap two lines
            lines = bytes(buf).split(b"\n")
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            buf = bytearray(b"\n".join(lines))
    return bytes(buf)


def run(seconds: float, seed: int) -> int:
    rng = random.Random(seed)
    seeds = corpus()
    deadline = time.monotonic() + seconds
    count = failures = 0
    work = Path("/tmp") / f"etc-fuzz-{seed}"
    work.mkdir(exist_ok=True)
    while time.monotonic() < deadline:
        data = mutate(rng, rng.choice(seeds))
        path = work / "input.tc"
        path.write_bytes(data)
        count += 1
        try:
            options = Options(include_dirs=[str(ROOT / "tests/golden/inc")])
            translate(SourceFile(str(path), data), options, DiagnosticSink())
        except Exception:  # noqa: BLE001 - any exception is the finding
            failures += 1
            keep = work / f"crash-{failures}.tc"
            keep.write_bytes(data)
            print(f"CRASH on {keep}:\n{traceback.format_exc()}", flush=True)
    print(f"fuzz: {count} inputs, {failures} crashes (seed {seed})")
    return 1 if failures else 0


if __name__ == "__main__":
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    sd = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    sys.exit(run(secs, sd))
