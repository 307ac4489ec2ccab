"""Structure-aware mutation fuzzer for etcpre (`make fuzz`; the suite runs a few).

    python tests/translator/fuzz.py [--count N | --seconds S] [--seed K] [--out DIR]

Mutates the samples, the EBS programs, the e2e programs and the valid golden programs
the way a student's program goes wrong: thread labels moved, primitive statements
duplicated or deleted, slot and thread numbers changed, arguments added or dropped,
macros and #if/#else inserted (plus some token-level noise). Each mutant is translated
in a child process (a hang or a crash is caught there), and the invariant is:

- etcpre never crashes, hangs or prints a traceback;
- whatever etcpre accepts compiles with cc, or cc fails only for an error the user's
  own code has: when the generated C does not compile, the mutant's plain-C reading
  (libclang's view of it, the primitives declared by the clang prelude) must not
  compile either. Otherwise the failure is the translator's.

Prints the counts of each outcome; exits 1 if any mutant broke the invariant (those
are kept in --out with what happened).
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import re
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import tree_sitter  # noqa: E402

from etcpre.diagnostics import DiagnosticSink  # noqa: E402
from etcpre.options import Options  # noqa: E402
from etcpre.passes import clang_view  # noqa: E402
from etcpre.passes.parse import language  # noqa: E402
from etcpre.passes.primitives import CALL_PRIMITIVES  # noqa: E402
from etcpre.passes.syntax import call_args, call_name, walk  # noqa: E402
from etcpre.passes.text import apply  # noqa: E402
from etcpre.source import SourceFile  # noqa: E402
from etcpre.translate import translate  # noqa: E402

INCLUDE = ROOT / "runtime" / "include"
GOLDEN_INC = ROOT / "tests" / "golden" / "inc"
OPTIONS = Options(include_dirs=(str(GOLDEN_INC),))
TIMEOUT = 60.0  # seconds a translation may take before it counts as a hang


def corpus() -> list[tuple[str, bytes]]:
    files = (sorted((ROOT / "samples").glob("*.tc")) +
             sorted((ROOT / "samples" / "ebs").glob("*.tc")) +
             sorted((ROOT / "tests" / "e2e" / "programs").glob("*.tc")) +
             [tc for tc in sorted((ROOT / "tests" / "golden").glob("*.tc"))
              if not tc.stem.startswith(("err_", "warn_"))])
    return [(f.name, f.read_bytes()) for f in files]


# ---------------------------------------------------------------- mutations


class Mutator:
    """One mutation of a program's text, chosen among those its tree allows."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.parser = tree_sitter.Parser(language())
        self.serial = 0

    def mutate(self, data: bytes) -> tuple[bytes, list[str]]:
        done = []
        for _ in range(self.rng.randint(1, 3)):
            root = self.parser.parse(data).root_node
            kinds = [self.move_label, self.duplicate_primitive, self.delete_primitive,
                     self.renumber, self.change_arity, self.macro, self.conditional,
                     self.noise]
            weights = [3, 3, 3, 4, 3, 4, 4, 1]
            for _ in range(10):
                op = self.rng.choices(kinds, weights)[0]
                out = op(data, root)
                if out is not None:
                    data = out
                    done.append(op.__name__)
                    break
        return data, done

    # helpers

    def _items(self, root: tree_sitter.Node) -> list[tree_sitter.Node]:
        """Block items inside threaded functions."""
        out = []
        for n in walk(root):
            if n.type == "compound_statement" and n.parent is not None and \
                    n.parent.type in ("threaded_function_definition", "compound_statement",
                                      "if_statement", "while_statement", "for_statement",
                                      "do_statement", "else_clause"):
                out += [c for c in n.named_children if c.type != "comment"]
        return out

    def _primitive_statements(self, root: tree_sitter.Node) -> list[tree_sitter.Node]:
        out = []
        for n in self._items(root):
            if n.type == "expression_statement" and n.named_child_count and \
                    n.named_children[0].type == "call_expression" and \
                    call_name(n.named_children[0]) in CALL_PRIMITIVES:
                out.append(n)
        return out

    def _pick(self, nodes: list[tree_sitter.Node]) -> tree_sitter.Node | None:
        return self.rng.choice(nodes) if nodes else None

    @staticmethod
    def _edit(data: bytes, start: int, end: int, text: bytes) -> bytes:
        return data[:start] + text + data[end:]

    # the mutations

    def move_label(self, data: bytes, root: tree_sitter.Node) -> bytes | None:
        labels = [n for n in walk(root) if n.type == "thread_label"]
        label = self._pick(labels)
        target = self._pick(self._items(root))
        if label is None or target is None or target.start_byte == label.start_byte:
            return None
        text = data[label.start_byte:label.end_byte] + b"\n"
        data = self._edit(data, label.start_byte, label.end_byte, b"")
        pos = target.start_byte if target.start_byte < label.start_byte else \
            target.start_byte - (label.end_byte - label.start_byte)
        return self._edit(data, pos, pos, text)

    def duplicate_primitive(self, data: bytes, root: tree_sitter.Node) -> bytes | None:
        stmt = self._pick(self._primitive_statements(root))
        target = self._pick(self._items(root))
        if stmt is None or target is None:
            return None
        return self._edit(data, target.start_byte, target.start_byte,
                          data[stmt.start_byte:stmt.end_byte] + b"\n")

    def delete_primitive(self, data: bytes, root: tree_sitter.Node) -> bytes | None:
        stmt = self._pick(self._primitive_statements(root))
        if stmt is None:
            return None
        return self._edit(data, stmt.start_byte, stmt.end_byte, b";")

    def renumber(self, data: bytes, root: tree_sitter.Node) -> bytes | None:
        """A slot or thread number (or the number of slots) becomes another."""
        spots = []
        for n in walk(root):
            if n.type == "call_expression":
                prim = CALL_PRIMITIVES.get(call_name(n) or "")
                args = call_args(n)
                for k in (prim.slot_arg, prim.thread_arg) if prim is not None else ():
                    if k is not None and k < len(args):
                        spots.append(args[k])
            elif n.type == "sync_slots_declaration":
                size = n.child_by_field_name("size")
                if size is not None:
                    spots.append(size)
        spot = self._pick(spots)
        if spot is None:
            return None
        new = self.rng.choice([b"0", b"1", b"2", b"3", b"5", b"-1", b"99", b"'a'", b"1.5",
                               b"(1 + 1)", b"2147483648", b"N_UNDEFINED", b"sizeof(int)"])
        return self._edit(data, spot.start_byte, spot.end_byte, new)

    def change_arity(self, data: bytes, root: tree_sitter.Node) -> bytes | None:
        calls = [n for n in walk(root) if n.type == "call_expression" and
                 call_name(n) in CALL_PRIMITIVES and call_args(n)]
        call = self._pick(calls)
        if call is None:
            return None
        args = call_args(call)
        if self.rng.random() < 0.5:  # drop the last argument
            last = args[-1]
            start = args[-2].end_byte if len(args) > 1 else last.start_byte
            return self._edit(data, start, last.end_byte, b"")
        last = args[-1]
        return self._edit(data, last.end_byte, last.end_byte,
                          b", " + data[last.start_byte:last.end_byte])

    def macro(self, data: bytes, root: tree_sitter.Node) -> bytes | None:
        """A primitive statement, an argument or a number goes through a macro (whose
        body may name the function's locals), defined before the function or inside
        its body."""
        self.serial += 1
        name = f"FZ{self.serial}".encode()
        stmt = self._pick(self._primitive_statements(root))
        fn = next((p for p in _ancestors(stmt)
                   if p.type == "threaded_function_definition"), None) if stmt else None
        if stmt is None or fn is None:
            return None
        body = data[stmt.start_byte:stmt.end_byte].rstrip(b";").strip()
        if self.rng.random() < 0.5:
            define = b"#define " + name + b"() " + body.replace(b"\n", b" ") + b"\n"
            use = name + b"();"
        else:
            call = stmt.named_children[0]
            args = call_args(call)
            if not args:
                return None
            arg = self.rng.choice(args)
            define = b"#define " + name + b" " + data[arg.start_byte:arg.end_byte].replace(
                b"\n", b" ") + b"\n"
            text = data[stmt.start_byte:stmt.end_byte]
            rel = arg.start_byte - stmt.start_byte
            use = text[:rel] + name + text[rel + (arg.end_byte - arg.start_byte):]
        data = self._edit(data, stmt.start_byte, stmt.end_byte, use)
        where = fn.start_byte if self.rng.random() < 0.6 else stmt.start_byte
        return self._edit(data, where, where, b"\n" + define)

    def conditional(self, data: bytes, root: tree_sitter.Node) -> bytes | None:
        """#if 0/#if 1 (with or without #else) around a run of block items."""
        items = self._items(root)
        first = self._pick(items)
        if first is None:
            return None
        siblings = [c for c in first.parent.named_children if c.type != "comment"] \
            if first.parent is not None else [first]
        k = siblings.index(first) if first in siblings else 0
        last = siblings[min(len(siblings) - 1, k + self.rng.randint(0, 2))]
        cond = self.rng.choice([b"#if 0", b"#if 1", b"#ifdef FZ_UNDEFINED",
                                b"#ifndef FZ_UNDEFINED", b"#if defined(__STDC__)"])
        chunk = data[first.start_byte:last.end_byte]
        if self.rng.random() < 0.5:
            chunk = chunk + b"\n#else\n" + chunk
        return self._edit(data, first.start_byte, last.end_byte,
                          b"\n" + cond + b"\n" + chunk + b"\n#endif\n")

    NOISE = [b"THREAD_1:", b"THREAD_9:", b"END_THREAD();", b"END_FUNCTION();", b"RETURN();",
             b"SYNC(0);", b"SPAWN(1);", b"GLOBAL", b"*GLOBAL", b"{", b"}", b";", b"\"",
             b"/*", b"#if 1\n", b"#endif\n", b"goto THREAD_1;", b"return;", b"\xff"]

    def noise(self, data: bytes, root: tree_sitter.Node) -> bytes | None:
        del root
        pos = self.rng.randrange(len(data) + 1)
        if self.rng.random() < 0.5:
            return self._edit(data, pos, pos, self.rng.choice(self.NOISE))
        return self._edit(data, pos, min(len(data), pos + self.rng.randint(1, 20)), b"")


def _ancestors(node: tree_sitter.Node | None):
    while node is not None:
        yield node
        node = node.parent


# ---------------------------------------------------------------- one mutant


def translate_isolated(name: str, data: bytes) -> tuple[str, object]:
    """("ok", C text) | ("rejected", diagnostics) | ("traceback", text) |
    ("crash", signal) | ("hang", seconds), from a forked child."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        try:
            sink = DiagnosticSink()
            result = translate(SourceFile(name, data), OPTIONS, sink)
            payload = ("ok", result.text) if result is not None else \
                ("rejected", sink.render())
        except BaseException:  # noqa: BLE001 - the finding
            import traceback  # noqa: PLC0415

            payload = ("traceback", traceback.format_exc())
        with os.fdopen(wfd, "wb") as out:
            out.write(pickle.dumps(payload))
        os._exit(0)
    os.close(wfd)
    chunks = []
    deadline = time.monotonic() + TIMEOUT
    with os.fdopen(rfd, "rb") as inp:
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([inp], [], [], max(0.0, left))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return "hang", TIMEOUT
            chunk = os.read(inp.fileno(), 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return "crash", os.WTERMSIG(status)
    try:
        return pickle.loads(b"".join(chunks))  # type: ignore[no-any-return]
    except Exception as exc:  # noqa: BLE001
        return "traceback", f"no result from the child: {exc}"


def compiles(cmd: list[str], source: str, suffix: str) -> tuple[bool, str]:
    with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False,
                                     encoding="utf-8", errors="replace") as f:
        f.write(source)
        path = f.name
    try:
        proc = subprocess.run([*cmd, path], capture_output=True, text=True, timeout=120,
                              check=False, errors="replace")
        return proc.returncode == 0, proc.stderr
    finally:
        os.unlink(path)


def plain_c_reading(data: bytes) -> str:
    """The mutant as plain C: libclang's view of it, the prelude declaring the
    primitives in front."""
    root = tree_sitter.Parser(language()).parse(data).root_node
    view, _ = apply(data, clang_view.view_edits(root))
    return clang_view.PRELUDE + "\n#line 1\n" + view.decode("utf-8", errors="replace")


def classify(name: str, data: bytes, cc: list[str]) -> tuple[str, str]:
    outcome, detail = translate_isolated(name, data)
    if outcome == "rejected":
        return "rejected by etcpre", ""
    if outcome != "ok":
        return f"etcpre {outcome}", str(detail)
    ok, err = compiles([*cc, "-fsyntax-only", "-std=gnu11", "-w", f"-I{INCLUDE}",
                        f"-I{GOLDEN_INC}", "-x", "c"], str(detail), ".c")
    if ok:
        ok_check, err_check = compiles([*cc, "-fsyntax-only", "-std=gnu11", "-w",
                                        "-DETC_CHECK", f"-I{INCLUDE}", f"-I{GOLDEN_INC}",
                                        "-x", "c"], str(detail), ".c")
        if ok_check:
            return "accepted, compiles", ""
        err = err_check
    plain_ok, _ = compiles(["clang", "-fsyntax-only", "-std=gnu11", "-w", f"-I{GOLDEN_INC}",
                            "-x", "c"], plain_c_reading(data), ".c")
    if not plain_ok:
        return "accepted, cc finds the user's error", ""
    return "TRANSLATOR-CAUSED cc failure", err


BAD = ("etcpre traceback", "etcpre crash", "etcpre hang", "TRANSLATOR-CAUSED cc failure")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=None, help="this many mutants")
    ap.add_argument("--seconds", type=float, default=None, help="for this long")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None, help="where to keep the failing mutants")
    args = ap.parse_args()
    if args.count is None and args.seconds is None:
        args.count = 2000
    rng = random.Random(args.seed)
    seeds = corpus()
    mutator = Mutator(rng)
    cc = shlex.split(os.environ.get("CC") or "cc")
    out = Path(args.out or tempfile.mkdtemp(prefix=f"etc-fuzz-{args.seed}-"))
    out.mkdir(parents=True, exist_ok=True)
    counts: Counter[str] = Counter()
    deadline = time.monotonic() + args.seconds if args.seconds is not None else None
    n = 0
    while (args.count is None or n < args.count) and \
            (deadline is None or time.monotonic() < deadline):
        name, seed_data = rng.choice(seeds)
        data, how = mutator.mutate(seed_data)
        outcome, detail = classify(re.sub(r"\.tc$", "", name) + "_mutant.tc", data, cc)
        counts[outcome] += 1
        n += 1
        if outcome in BAD:
            keep = out / f"{outcome.split()[-1]}-{counts[outcome]}-{name}"
            keep.write_bytes(data)
            keep.with_suffix(".txt").write_text(f"{outcome} after {how}\n{detail}\n")
            print(f"{outcome}: {keep} ({', '.join(how)})\n{detail[-2000:]}", flush=True)
    bad = sum(counts[b] for b in BAD)
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
    print(f"fuzz: {n} mutants (seed {args.seed}): {summary}; {bad} broke the invariant")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
