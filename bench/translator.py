"""Translator benchmarks: parse throughput of the grammar (issue 2) on a generated
10,000-line .tc file, and etcpre's translation time (issues 3, 19) for generated
programs of about 5,000 lines in two shapes, libclang included: many small threaded
functions, and a few large ones with many threads and loops.

Baselines in the same run: tree-sitter-c parsing the same file made plain C by
same-length substitutions (THREADED -> void, GLOBAL -> const, THREAD_n: -> a C
label): what the extension costs over C; and `cc -fsyntax-only` on the generated C
(what a C compiler front end takes for the same program)."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

from benchlib import BIN, OUT, Section, median_of, table

FUNCTION = """
/* generated threaded function {i} */
THREADED work{i}(SPTR done, int n, int *GLOBAL out, double scale)
{{
    SLOT SYNC_SLOTS[2];
    int i, acc, part[4];
    double x;

    acc = 0;
    x = scale * {i};
    INIT_SYNC(0, 2, 2, 1);
    INIT_SYNC(1, 1, 1, 2);
    for (i = 0; i < n; i++) {{
        acc += i * {i} % 7;
        if (acc > 1000)
            acc -= 1000;
    }}
    part[0] = acc;
    TOKEN(leaf, SLOT_ADR(0), acc, TO_GLOBAL(&part[1]));
    TOKEN(leaf, SLOT_ADR(0), n, TO_GLOBAL(&part[2]));
    END_THREAD();
THREAD_1:
    GET_SYNC_L(TO_GLOBAL(&part[1]), TO_GLOBAL(&part[3]), 1);
    END_THREAD();
THREAD_2:
    DATA_RSYNC_L(part[0] + part[1] + part[2] + part[3] + (int)x, out, done);
    END_FUNCTION();
}}
"""

HEADER = """#include <stdio.h>

THREADED leaf(SPTR done, int v, int *GLOBAL out)
{
    DATA_RSYNC_L(v * 2, out, done);
    END_FUNCTION();
}
"""

MAIN = """
THREADED MAIN(void)
{
    SLOT SYNC_SLOTS[1];
    int r;
    INIT_SYNC(0, 1, 1, 1);
    INVOKE(0, work0, SLOT_ADR(0), 10, TO_GLOBAL(&r), 1.5);
    END_THREAD();
THREAD_1:
    printf("%d\\n", r);
    END_FUNCTION();
}
"""


THREAD_STEP = """THREAD_{k}:
    for (i = 0; i < n; i++) {{
        for (j = 0; j < 16; j++) {{
            buf[j] = buf[j] * 0.5 + x * (i + j + {k});
            if (buf[j] > 100.0)
                buf[j] -= 100.0;
        }}
        acc += (int)buf[i % 16] % {m};
        while (acc > 1000)
            acc -= {m};
    }}
    if (acc % 3 == 0)
        x += 1.0;
    else if (acc % 3 == 1)
        x -= 0.5;
    else
        x *= 0.99;
    j = 0;
    do {{
        if (j % 2 == 0) {{
            part[j % 4] += (int)buf[j] + {k};
            x = x * 0.75 + part[j % 4];
        }} else {{
            part[j % 4] -= acc % {m};
            x = x * 0.5 - buf[(j + {k}) % 16];
        }}
        for (i = 0; i < 4; i++)
            buf[(i + j) % 16] += part[i] * 0.001;
        j++;
    }} while (j < 16 && x < 1.0e6);
    part[{k} % 4] += acc;
    DATA_SYNC_D(x + buf[{k} % 16], TO_GLOBAL(&result[{k}]), {k});
    END_THREAD();
"""

BIG_HEAD = """
/* generated large threaded function {i}: {threads} threads in sequence, each a loop nest */
THREADED big{i}(SPTR done, int n, double *GLOBAL out, double scale)
{{
    SLOT SYNC_SLOTS[{threads}];
    int i, j, acc, part[4];
    double x, buf[16], result[{threads}];

    acc = 0;
    x = scale * {i};
    for (j = 0; j < 16; j++)
        buf[j] = j * scale;
    for (j = 0; j < 4; j++)
        part[j] = 0;
{inits}    DATA_SYNC_D(x, TO_GLOBAL(&result[0]), 0);
    END_THREAD();
"""

BIG_TAIL = """THREAD_{k}:
    DATA_RSYNC_D(x + part[0] + part[1] + part[2] + part[3] + result[{last}], out, done);
    END_FUNCTION();
}}
"""

BIG_MAIN = """
THREADED MAIN(void)
{
    SLOT SYNC_SLOTS[1];
    double r;
    INIT_SYNC(0, 1, 1, 1);
    INVOKE(0, big0, SLOT_ADR(0), 10, TO_GLOBAL(&r), 1.5);
    END_THREAD();
THREAD_1:
    printf("%g\\n", r);
    END_FUNCTION();
}
"""


def big_function(i: int, threads: int) -> str:
    """A threaded function of `threads` threads in sequence: thread k (k >= 1) runs
    loop nests and enables thread k + 1 with a transfer into its slot k."""
    inits = "".join(f"    INIT_SYNC({k}, 1, 1, {k + 1});\n" for k in range(threads))
    body = [BIG_HEAD.format(i=i, threads=threads, inits=inits)]
    body += [THREAD_STEP.format(k=k, m=7 + k % 5) for k in range(1, threads)]
    body.append(BIG_TAIL.format(k=threads, last=threads - 1))
    return "".join(body)


def generate_large(lines: int, path: Path, threads: int = 16) -> Path:
    """A program of about `lines` lines of a few large threaded functions."""
    parts = ["#include <stdio.h>\n"]
    per = big_function(0, threads).count("\n")
    for i in range(max(1, round((lines - 12) / per))):
        parts.append(big_function(i, threads))
    parts.append(BIG_MAIN)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(parts))
    return path


def generate(lines: int, path: Path) -> Path:
    parts = [HEADER]
    i = 0
    while sum(p.count("\n") for p in parts) < lines - 12:
        parts.append(FUNCTION.format(i=i))
        i += 1
    parts.append(MAIN)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(parts))
    return path


def as_plain_c(data: bytes) -> bytes:
    """The same program as plain C of the same length, for the base grammar."""
    out = data.replace(b"THREADED ", b"void     ").replace(b"GLOBAL", b"const ")
    out = out.replace(b"SLOT SYNC_SLOTS", b"int  SYNC_SLOTS")
    return re.sub(rb"THREAD_(\d+):", lambda m: b"thread_" + m.group(1) + b":", out)


def _parse_rates(data: bytes, repeats: int) -> tuple[float, float]:
    import tree_sitter  # noqa: PLC0415
    import tree_sitter_c  # noqa: PLC0415
    import tree_sitter_threaded_c  # noqa: PLC0415

    ours = tree_sitter.Parser(tree_sitter.Language(tree_sitter_threaded_c.language()))
    base = tree_sitter.Parser(tree_sitter.Language(tree_sitter_c.language()))
    plain = as_plain_c(data)
    assert len(plain) == len(data) and not base.parse(plain).root_node.has_error
    t_ours, t_base = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        tree = ours.parse(data)
        t_ours.append(time.perf_counter() - t0)
        assert not tree.root_node.has_error
        t0 = time.perf_counter()
        base.parse(plain)
        t_base.append(time.perf_counter() - t0)
    return median_of(t_ours), median_of(t_base)


def bench(quick: bool) -> Section:
    sec = Section("Translator: parse throughput and translation time (issues 2, 3, 19)")
    big = generate(10_000, OUT / "translator" / "parse10k.tc")
    data = big.read_bytes()
    t_ours, t_base = _parse_rates(data, 5 if quick else 15)
    nlines = data.count(b"\n")
    mb = len(data) / 1e6
    sec.add(f"Parse: a generated {nlines:,}-line `.tc` file ({mb:.2f} MB), median of runs, "
            "tree-sitter through the Python binding.", "")
    sec.add(*table(["grammar", "time ms", "lines/s", "MB/s", "vs tree-sitter-c"], [
        ["threaded_c (ours)", t_ours * 1e3, nlines / t_ours, mb / t_ours, t_ours / t_base],
        ["tree-sitter-c 0.24.1 on the same file as plain C (baseline)", t_base * 1e3,
         nlines / t_base,
         mb / t_base, 1.0],
    ]))
    shapes = [
        ("many small functions", generate(5_000, OUT / "translator" / "prog5k.tc")),
        ("few large functions", generate_large(5_000, OUT / "translator" / "large5k.tc")),
    ]
    rows, data = [], {}
    for shape, prog in shapes:
        m = _translation(prog, 3 if quick else 7)
        src = prog.read_text()
        lines_out = (prog.with_suffix(".c")).read_text().count("\n")
        threads = len(re.findall(r"\bTHREAD_\d+:", src)) + src.count("THREADED ")
        rows.append([shape, f"{src.count(chr(10)):,}", src.count("THREADED "), threads,
                     f"{lines_out:,}", m["cli"], m["cli_cpu"], m["inproc"], m["cc"],
                     m["cli"] / m["cc"], m["inproc"] / m["cc"]])
        data[shape] = m
    sec.add("Translation: generated programs of about 5,000 lines in two shapes: many "
            "small threaded functions (each with slots, three threads, TOKENs, transfers "
            "and a loop), and a few large ones (the MAIN and ones of 16 threads in "
            "sequence, each thread loop nests and conditionals). Baseline: `cc -std=gnu11 "
            "-fsyntax-only` on etcpre's own output, run alternately with etcpre in the "
            "same loop; medians.", "")
    sec.add(*table(["shape", "lines", "threaded functions", "threads (with each 0)",
                    "C lines out", "etcpre s", "etcpre CPU s", "in-process s", "cc s",
                    "etcpre / cc", "in-process / cc"], rows))
    worst = max(r[-2] for r in rows)
    verdict = "met" if worst <= 5 else "not met"
    stretch = "met" if worst <= 3 else "not met"
    sec.add("etcpre: the command (Python start-up with its bytecode cached, libclang in a "
            "child, all passes; its CPU time is user and system time of all its processes); "
            "in-process: `translate()` alone, without start-up. "
            f"Goal (issue 19): etcpre at most 5x cc on every shape: **{verdict}** "
            f"(largest {worst:.1f}x); stretch 3x: **{stretch}**.", "")
    small = data["many small functions"]
    sec.add(f"Goal (issue 3): under one second for 5,000 lines including libclang: "
            f"**{'met' if small['cli'] < 1.0 else 'not met'}** ({small['cli']:.2f} s, "
            f"many small functions).", "")
    sec.add(*stage_table(shapes, data))
    sec.add(*output_size())
    sec.data = {"parse_s": t_ours, "parse_base_s": t_base, "parse_lines": nlines,
                "translation": data}
    return sec


def stage_table(shapes: list[tuple[str, Path]], data: dict[str, dict[str, float]]) -> list[str]:
    """Where etcpre's time goes (bench/translator_stages.py, in process, median of 5)
    beside cc's and the goal's budget: what bounds the ratio."""
    from translator_stages import bare_walk, stages  # noqa: PLC0415

    from etcpre.source import SourceFile  # noqa: PLC0415

    empty = OUT / "translator" / "empty.tc"
    empty.write_text("THREADED MAIN(void)\n{\n    END_FUNCTION();\n}\n")
    env = _etcpre_env()
    cmd = [str(BIN / "etcpre"), str(empty), "-o", str(empty.with_suffix(".c"))]
    fixed = []
    for _ in range(7):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        fixed.append(time.perf_counter() - t0)
    rows, walks = [], []
    for shape, prog in shapes:
        source = SourceFile.load(str(prog))
        runs = [stages(source) for _ in range(5)]
        ms = {name: median_of([r[name] for r in runs]) * 1e3 for name in runs[0]}
        walk = median_of([bare_walk(source) for _ in range(5)]) * 1e3
        cc = data[shape]["cc"] * 1e3
        rows.append([shape, median_of(fixed) * 1e3, *ms.values(), walk, cc, 5 * cc])
        names = list(ms)
        after_parse = sum(ms.values()) - ms["parse (tree-sitter)"]
        room = 5 * cc - median_of(fixed) * 1e3 - ms["parse (tree-sitter)"]
        walks.append(f"{shape}: the passes after the parse take {after_parse:.0f} ms, "
                     f"**{after_parse / walk:.1f}** bare walks; the budget, less the fixed "
                     f"cost and the parse, holds **{max(room, 0) / walk:.1f}**")
    return ["**Where etcpre's time goes** (`bench/translator_stages.py`, each pass in "
            "process, median of 5; the fixed cost is the command on a one-line program: "
            "Python's start-up, the imports, libclang on the runtime's header), in ms, "
            "beside cc's time on the output and the goal's budget of 5x cc. analyse and "
            "lower are Python walking every node of the tree. A *bare walk* is the least "
            "a Python pass over the whole tree does: the passes' own pre-order walk "
            "(`syntax.walk`) reading every node's type and nothing else.", "",
            *table(["shape", "fixed (command, empty program)", *names, "a bare walk",
                    "cc", "budget (5x cc)"], rows),
            "The fixed cost with analyse and lower alone: " + "; ".join(
                f"{r[0]}: {r[1] + r[4] + r[5]:.0f} ms of the {r[-1]:.0f} ms budget"
                for r in rows) + ".", "",
            "Counted in bare walks: " + "; ".join(walks) + ". The passes need about "
            "three (the clang view walks the cursors, analyse indexes the tree, lower "
            "renders every thread's code) with libclang's own parse on top: the room is "
            "there for passes that do little more per node than a bare walk, not for "
            "these.", ""]


def output_size() -> list[str]:
    """Issue 19's output-size goals on the shapes tests/translator/test_output_size.py
    checks (which also runs them): C lines out per line in at 200 threads, and the
    time of 2,000 threads in sequence."""
    root = Path(__file__).resolve().parents[1]
    sys.path[:0] = [str(root / "tests"), str(root / "tests" / "translator")]
    from test_output_size import SHAPES  # noqa: PLC0415

    def translate(name: str, program: str) -> tuple[int, int, float]:
        tc = OUT / "translator" / f"{name}.tc"
        tc.write_text(program)
        t0 = time.perf_counter()
        subprocess.run([str(BIN / "etcpre"), str(tc), "-o", str(tc.with_suffix(".c"))],
                       check=True, capture_output=True, env=_etcpre_env())
        return (program.count("\n"), tc.with_suffix(".c").read_text().count("\n"),
                time.perf_counter() - t0)

    rows, worst = [], 0.0
    for shape, make in SHAPES.items():
        lines_in, lines_out, secs = translate(f"threads-{shape.replace(' ', '-')}",
                                              make(200)[0])
        worst = max(worst, lines_out / lines_in)
        rows.append([f"200 threads {shape}", f"{lines_in:,}", f"{lines_out:,}",
                     lines_out / lines_in, secs])
    lines_in, lines_out, big = translate("threads-2000", SHAPES["in sequence"](2000)[0])
    rows.append(["2,000 threads in sequence", f"{lines_in:,}", f"{lines_out:,}",
                 lines_out / lines_in, big])
    return ["**Output size** (issue 19): generated functions of many threads, in the "
            "shapes of `tests/translator/test_output_size.py` (in a loop, every thread "
            "reaches the whole loop: the function is one shared body, `lower.py` "
            "SHARED_BODY); one run of the etcpre command each.", "",
            *table(["program", "lines in", "C lines out", "out / in", "etcpre s"], rows),
            f"Goals (issue 19): at most 4x the lines for 200 threads: **{worst:.1f}x** "
            f"at most ({'met' if worst <= 4 else 'not met'}); 2,000 threads in under 10 s: "
            f"**{big:.1f} s** ({'met' if big < 10 else 'not met'}).", ""]


def _etcpre_env() -> dict[str, str]:
    """etcpre as installed, its modules' bytecode cached (an environment that turns
    writing it off would make every run compile them again: about 30 ms); the cache
    goes to bench/out, not beside the sources."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(OUT / "pycache")
    return env


def _translation(prog: Path, repeats: int) -> dict[str, float]:
    """Median seconds of the etcpre command, of `translate()` in-process and of `cc
    -fsyntax-only` on the output; the command and cc alternate, so that both see the
    same load."""
    c_out = prog.with_suffix(".c")
    inc = str(Path(__file__).resolve().parents[1] / "runtime" / "include")
    etcpre = [str(BIN / "etcpre"), str(prog), "-o", str(c_out)]
    cc = ["cc", "-std=gnu11", "-fsyntax-only", f"-I{inc}", str(c_out)]
    env = _etcpre_env()
    subprocess.run(etcpre, check=True, capture_output=True, env=env)
    t_cli, t_cc, cpu_cli = [], [], []
    for _ in range(repeats):
        for cmd, samples in ((etcpre, t_cli), (cc, t_cc)):
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True, env=env)
            samples.append(time.perf_counter() - t0)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if cmd is etcpre:
                cpu_cli.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    # in-process: the passes alone, without Python's start-up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from etcpre.diagnostics import DiagnosticSink  # noqa: PLC0415
    from etcpre.source import SourceFile  # noqa: PLC0415
    from etcpre.translate import Options, translate  # noqa: PLC0415

    src = SourceFile.load(str(prog))
    inproc = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        assert translate(src, Options(), DiagnosticSink()) is not None
        inproc.append(time.perf_counter() - t0)
    return {"cli": median_of(t_cli), "cli_cpu": median_of(cpu_cli), "inproc": median_of(inproc),
            "cc": median_of(t_cc)}
