"""etcc: the cc-like driver (reference section 4, thesis B.5).

`.tc` files go through etcpre, then everything is compiled by the system C compiler
(`$CC` or `cc`) and linked with the runtime archive of the chosen target and build.
`.c`, `.o`, `.a` and `.so` files pass through. Options are cc's plus the EARTH ones.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from etcpre import toolchain
from etcpre.cli import ccdiag
from etcpre.cli.common import leave, run_main, version_text
from etcpre.cli.translation import translate_file
from etcpre.options import Options as TranslateOptions

if TYPE_CHECKING:
    from etcpre.translate import Translation

USAGE = """\
usage: etcc [options] files...

Translate Threaded-C (.tc) files, compile them and link them with the etc runtime.
.c, .o, .a and .so files pass through to the C compiler ($CC, default cc); plain .c
files are compiled with etc.h (NODE_ID, NUM_NODES, POLL(), etc_time(), ...).

  -o FILE            write the output to FILE (default a.out, or NAME.o with -c)
  -c                 compile only, to .o files
  -S                 compile only, to assembly (.s)
  -E                 translate and preprocess only, to standard output
  -O[n]              optimise (passed to cc)
  -g                 the checking build: debug information, and misuse (slot out of
                     range, remote dereference, frame used after END_FUNCTION,
                     over-signalled slot) reported as etc: error: with the .tc line
  -g0                the plain build again (as cc's: the last -g option counts)
  -Dname[=v] -Uname  define / undefine a macro (for etcpre and cc)
  -Idir              add an include directory (for etcpre and cc)
  -Ldir -llib        library directory / library (passed to the linker)
  -x tc | c | none   treat the following .c files as Threaded-C (tc), as plain C (c),
                     or by their suffix again (none), as cc's -x does
  -target T          {targets} (default {default}); also --target=T
  -lb NAME           default load balancer (etcrun --lb and ETC_LB override it):
                     {balancers}
  -prof              the profiling build (thesis appendix C): a table at exit
  -trace             the tracing build: etcrun --trace FILE.json writes every thread
                     run (docs/tracing.md)
  -keep              keep the generated C as NAME.c in the current directory
  -v                 print the commands run
  -h, --help         this help
  --version          etcc's version
  --gdb-script       the path of etc-gdb.py: gdb -x "$(etcc --gdb-script)" ./prog
Any other option starting with '-' is passed to the C compiler.
"""


class UsageError(Exception):
    pass


@dataclass
class Options:
    """etcc's command line."""

    output: str | None = None
    mode: str = "link"  # link | c | S | E
    target: str = toolchain.DEFAULT_TARGET
    lb: str | None = None
    prof: bool = False
    trace: bool = False
    check: bool = False
    keep: bool = False
    verbose: bool = False
    cpp: list[str] = field(default_factory=list)  # -D/-U/-I, in order
    macros: list[str] = field(default_factory=list)  # -D/-U, in order
    includes: list[str] = field(default_factory=list)
    cc_flags: list[str] = field(default_factory=list)
    link_flags: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    languages: dict[int, str] = field(default_factory=dict)  # input index -> -x given

    def kind(self, index: int) -> str:
        """tc, c, asm, o, lib or other: by -x, else by suffix."""
        path = self.inputs[index]
        given = self.languages.get(index)
        if given is not None and _kind(path) in ("c", "tc", "other"):
            return given
        return _kind(path)


def _value(argv: list[str], i: int, opt: str) -> tuple[str, int]:
    """The value of an option given as `-oFILE`, `-o FILE` or `--opt=FILE`."""
    arg = argv[i]
    if arg.startswith("--") and "=" in arg:
        return arg.split("=", 1)[1], i + 1
    if len(arg) > len(opt) and not arg.startswith("--"):
        return arg[len(opt):], i + 1
    if i + 1 >= len(argv):
        raise UsageError(f"option '{opt}' needs a value")
    return argv[i + 1], i + 2


def parse(argv: list[str]) -> Options:
    o = Options()
    i = 0
    language: str | None = None  # from -x
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            raise SystemExit(_help())
        if a == "--version":
            sys.stdout.write(version_text("etcc"))
            raise SystemExit(0)
        if a == "--gdb-script":
            sys.stdout.write(f"{toolchain.gdb_script()}\n")
            raise SystemExit(0)
        if a == "-c":
            o.mode, i = "c", i + 1
        elif a == "-S":
            o.mode, i = "S", i + 1
        elif a == "-E":
            o.mode, i = "E", i + 1
        elif a in ("-v", "--verbose"):
            o.verbose, i = True, i + 1
        elif a in ("-keep", "--keep"):
            o.keep, i = True, i + 1
        elif a in ("-prof", "--prof"):
            o.prof, i = True, i + 1
        elif a in ("-trace", "--trace"):
            o.trace, i = True, i + 1
        elif a == "-g" or (a.startswith("-g") and a[2:].isdigit()):
            o.check = a != "-g0"  # as cc's -g0 takes back an earlier -g
            o.cc_flags.append(a)
            i += 1
        elif a.startswith("-O"):
            o.cc_flags.append(a)
            i += 1
        elif a == "-o" or (a.startswith("-o") and not a.startswith("--")):
            o.output, i = _value(argv, i, "-o")
        elif a == "-x" or (a.startswith("-x") and len(a) > 2):
            lang, i = _value(argv, i, "-x")
            if lang not in ("tc", "c", "none"):
                raise UsageError(f"unknown language '{lang}' for -x (valid: tc, c, none)")
            language = None if lang == "none" else lang
        elif a in ("-target", "--target") or a.startswith("--target="):
            o.target, i = _value(argv, i, a.split("=")[0])
            if o.target not in toolchain.TARGETS:
                raise UsageError(f"unknown target '{o.target}' (valid: "
                                 f"{', '.join(toolchain.TARGETS)})")
            why = toolchain.TARGETS[o.target].missing()
            if why:
                raise UsageError(f"target '{o.target}' is not available here: {why}")
        elif a in ("-lb", "--lb") or a.startswith("--lb="):
            o.lb, i = _value(argv, i, a.split("=")[0])
            if o.lb not in toolchain.BALANCERS:
                raise UsageError(f"unknown load balancer '{o.lb}' (valid: "
                                 f"{', '.join(toolchain.BALANCERS)})")
        elif a[:2] in ("-D", "-U", "-I"):
            v, i = _value(argv, i, a[:2])
            (o.includes if a[:2] == "-I" else o.macros).append(v if a[:2] == "-I" else a[:2] + v)
            o.cpp.append(a[:2] + v)
        elif a[:2] in ("-L", "-l"):
            v, i = _value(argv, i, a[:2])
            o.link_flags.append(a[:2] + v)
        elif a.startswith("-Wl,") or a in ("-static", "-pthread", "-rdynamic"):
            o.link_flags.append(a)
            if a == "-pthread":
                o.cc_flags.append(a)
            i += 1
        elif a.startswith("-") and a != "-":
            o.cc_flags.append(a)
            i += 1
        else:
            if language is not None:
                o.languages[len(o.inputs)] = language
            o.inputs.append(a)
            i += 1
    if not o.inputs:
        raise UsageError("no input files")
    if o.trace and (o.check or o.prof):
        other = "-g" if o.check else "-prof"
        raise UsageError(f"-trace cannot be combined with {other}: the tracing build is a "
                         "build of its own (docs/tracing.md)")
    if o.output and o.mode in ("c", "S") and \
            sum(1 for k, f in enumerate(o.inputs) if o.kind(k) in ("tc", "c")) > 1:
        raise UsageError(f"cannot use -o with -{o.mode} and several source files")
    return o


def _help() -> int:
    sys.stdout.write(USAGE.format(balancers=" ".join(toolchain.BALANCERS),
                                  targets=" | ".join(toolchain.TARGETS),
                                  default=toolchain.DEFAULT_TARGET))
    return 0


def _kind(path: str) -> str:
    suffix = Path(path).suffix
    return {".tc": "tc", ".c": "c", ".o": "o", ".a": "lib", ".so": "lib", ".s": "asm",
            ".S": "asm"}.get(suffix, "other")


def _plain_c_hint(path: str) -> str | None:
    """`file.c:L:C: error: ...` when a plain C file defines a threaded function (cc
    would answer with a wall of errors)."""
    from etcpre.passes import parse as ts  # noqa: PLC0415
    from etcpre.passes.syntax import text, walk  # noqa: PLC0415

    try:
        data = Path(path).read_bytes()
    except OSError:
        return None  # cc says why
    if b"THREADED" not in data:
        return None
    import tree_sitter  # noqa: PLC0415

    root = tree_sitter.Parser(ts.language()).parse(data).root_node
    node = next((n for n in walk(root) if n.type == "threaded_function_definition"), None)
    if node is None:
        return None
    name = node.child_by_field_name("name")
    line = node.start_point.row + 1
    col = node.start_point.column + 1
    return (f"{path}:{line}:{col}: error: THREADED function "
            f"'{text(name) if name is not None else '?'}' in a plain C file: rename it to "
            f"{Path(path).stem}.tc or compile it with -x tc\n")


class Driver:
    def __init__(self, o: Options, tmp: Path) -> None:
        self.o = o
        self.tmp = tmp
        try:
            self.cc = toolchain.c_compiler(o.target)
        except ValueError as exc:
            raise UsageError(f"$CC is not a command line ({exc}): {os.environ['CC']}") from None
        if not self.cc:
            raise UsageError("$CC is blank: it names no compiler")
        self.sanitize = any(f.startswith("-fsanitize=") for f in o.cc_flags)
        self.target_dirs: tuple[str, ...] | None = None

    def say(self, cmd: list[str]) -> None:
        if self.o.verbose:
            sys.stderr.write(" ".join(shlex.quote(c) for c in cmd) + "\n")

    def run(self, cmd: list[str]) -> int:
        self.say(cmd)
        try:
            return subprocess.run(cmd, check=False).returncode
        except FileNotFoundError:
            sys.stderr.write(f"etcc: error: cannot run '{cmd[0]}' (set $CC?)\n")
            return 127

    def etcpre(self, tc: str, index: int) -> tuple[Path, Translation] | None:
        """Translates one .tc file in-process; diagnostics go to stderr."""
        stem = Path(tc).stem
        out = Path(f"{stem}.c") if self.o.keep else self.tmp / f"{index}_{stem}.c"
        if self.o.keep and out.exists() and not _generated(out):
            sys.stderr.write(f"etcc: error: -keep would overwrite {out}, which etcpre did not "
                             "write; rename one of them\n")
            return None
        options = TranslateOptions(tuple(self.o.macros), tuple(self.o.includes),
                                   self.system_dirs())
        self.say(["etcpre", *self.o.cpp, *(a for d in options.system_dirs
                                           for a in ("-isystem", d)), tc, "-o", str(out)])
        translation = translate_file(tc, options, out)
        return (out, translation) if translation is not None else None

    def system_dirs(self) -> tuple[str, ...]:
        """The target compiler's own header directories (asked once per etcc)."""
        if self.target_dirs is None:
            self.target_dirs = tuple(toolchain.target_include_dirs(self.o.target))
        return self.target_dirs

    def cflags(self) -> list[str]:
        flags = ["-std=gnu11", f"-I{toolchain.include_dir()}", "-fno-pie", *self.o.cpp]
        if self.o.check:
            flags.append("-DETC_CHECK")
        if self.o.trace:
            flags.append("-DETC_TRACE")
        if self.o.prof:  # line tables: the profile places samples by line (core/prof.c)
            flags += ["-DETC_PROF"] + ([] if self.o.check else ["-g1"])
        return flags + self.o.cc_flags

    def compile(self, src: str | Path, out: Path | None, mode: str, extra: list[str],
                translation: Translation | None = None) -> int:
        cmd = [*self.cc, *self.cflags(), *extra, f"-{mode}", str(src)]
        if out is not None:
            cmd += ["-o", str(out)]
        if translation is None:
            return self.run(cmd)
        # generated C: cc's columns go back to the .tc file (ccdiag)
        cmd[len(self.cc):len(self.cc)] = list(ccdiag.caret_flags(tuple(self.cc)))
        self.say(cmd)
        try:
            proc = subprocess.run(cmd, check=False, stderr=subprocess.PIPE, text=True,
                                  errors="replace")
        except FileNotFoundError:
            sys.stderr.write(f"etcc: error: cannot run '{cmd[0]}' (set $CC?)\n")
            return 127
        sys.stderr.write(ccdiag.remap(proc.stderr, translation))
        return proc.returncode

    def main(self) -> int:
        o = self.o
        objects: list[str] = []
        for index, f in enumerate(o.inputs):
            kind = o.kind(index)
            extra: list[str] = []
            translation = None
            if kind == "tc":
                done = self.etcpre(f, index)
                if done is None:
                    return 1
                src: str | Path = done[0]
                translation = done[1]
                # the generated file is elsewhere: its "x.h" are next to the .tc file;
                # a thread's frame stays on the stack while what it calls runs: a crash
                # or an interrupt names the thread by it (runtime/core/functions.c)
                extra = ["-iquote", str(Path(f).parent), "-fno-optimize-sibling-calls"]
            elif kind == "c":
                hint = _plain_c_hint(f)
                if hint is not None:
                    sys.stderr.write(hint)
                    return 1
                src = f
                extra = ["-include", "etc.h"]
            elif kind == "asm":
                src = f
            else:
                if o.mode == "link":
                    objects.append(f)
                continue
            stem = Path(f).stem
            if o.mode == "E":
                rc = self.compile(src, Path(o.output) if o.output else None, "E", extra,
                                  translation)
            elif o.mode in ("c", "S"):
                ext = "o" if o.mode == "c" else "s"
                rc = self.compile(src, Path(o.output or f"{stem}.{ext}"), o.mode, extra,
                                  translation)
            else:
                obj = self.tmp / f"{stem}_{len(objects)}.o"
                rc = self.compile(src, obj, "c", extra, translation)
                objects.append(str(obj))
            if rc != 0:
                return rc
        if o.mode != "link":
            return 0
        return self.link(objects)

    def link(self, objects: list[str]) -> int:
        o = self.o
        lib = toolchain.library(o.target, o.check, o.prof, self.sanitize, o.trace)
        extra: list[str] = []
        if o.lb:
            # the program's default balancer: a strong definition of the library's
            # weak, empty etc_default_lb
            cfg = self.tmp / "etc_link_config.c"
            cfg.write_text(f'const char etc_default_lb[] = "{o.lb}";\n')
            cfg_o = self.tmp / "etc_link_config.o"
            rc = self.run([*self.cc, "-c", str(cfg), "-o", str(cfg_o)])
            if rc != 0:
                return rc
            extra.append(str(cfg_o))
        san = [f for f in o.cc_flags if f.startswith("-fsanitize")]
        cmd = [*self.cc, "-no-pie", *san, *objects, *extra, str(lib),
               *toolchain.TARGETS[o.target].link_flags, *o.link_flags, "-pthread", "-o",
               o.output or "a.out"]
        self.say(cmd)
        try:
            proc = subprocess.run(cmd, check=False, capture_output=True, text=True,
                                  errors="replace")
        except FileNotFoundError:
            sys.stderr.write(f"etcc: error: cannot run '{cmd[0]}' (set $CC?)\n")
            return 127
        sys.stdout.write(proc.stdout)
        if proc.returncode != 0:
            explained = _explain_link_failure(proc.stderr)
            sys.stderr.write(explained if explained is not None else proc.stderr)
        else:
            sys.stderr.write(proc.stderr)
        return proc.returncode


def _explain_link_failure(output: str) -> str | None:
    """The link errors a Threaded-C program's structure causes, said in its terms (the
    translator sees one file; only the link sees the whole program)."""
    for name in dict.fromkeys(re.findall(r"_etc_layout_(\w+?)_[0-9a-f]{10}\b", output)):
        if re.search(rf"\b_{re.escape(name)}_0\b", output):
            return (f"etcc: error: threaded function '{name}' is started, but no file "
                    "defines it\n")
        return (f"etcc: error: the files disagree on the parameters of threaded function "
                f"'{name}': the file that defines it and a file that starts it declare it "
                "differently (declare it once, in a header every file includes)\n")
    if re.search(r"etc_user_main", output) and re.search(r"undefined", output):
        return ("etcc: error: the program has no THREADED MAIN: a Threaded-C program starts "
                "at thread 0 of THREADED MAIN(void) or THREADED MAIN(int argc, char **argv)\n")
    if re.search(r"(multiple definition of|duplicate symbol:?)\s*[`']?main\b", output):
        where = re.search(r"[^\s:/]+\.c(?=:\(\.text)", output)
        in_file = f" ({where.group()})" if where else ""
        return (f"etcc: error: the program defines main(){in_file}: the runtime defines "
                "main() and starts the program at THREADED MAIN (rename main to THREADED "
                "MAIN)\n")
    return None


def _generated(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(64).startswith(b"/* Generated by etcpre")
    except OSError:
        return False


def _body(argv: list[str]) -> int:
    try:
        o = parse(argv)
    except UsageError as exc:
        sys.stderr.write(f"etcc: error: {exc}\n(try 'etcc -h')\n")
        return 2
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        with tempfile.TemporaryDirectory(prefix="etcc-") as tmp:
            return Driver(o, Path(tmp)).main()
    except UsageError as exc:
        sys.stderr.write(f"etcc: error: {exc}\n")
        return 2
    except toolchain.ToolchainError as exc:
        sys.stderr.write(f"etcc: error: {exc}\n")
        return 1


def main(argv: list[str] | None = None) -> int:
    rc = run_main("etcc", _body, argv)
    if argv is None:  # the command itself (a caller passing argv goes on)
        leave(rc)
    return rc


if __name__ == "__main__":
    sys.exit(main())
