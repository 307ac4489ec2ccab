"""etcc: the cc-like driver (reference section 4, thesis B.5).

`.tc` files go through etcpre, then everything is compiled by the system C compiler
(`$CC` or `cc`) and linked with the runtime archive of the chosen target and build.
`.c`, `.o`, `.a` and `.so` files pass through. Options are cc's plus the EARTH ones.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from etcpre import toolchain
from etcpre.cli.common import run_main, version_text
from etcpre.diagnostics import DiagnosticSink
from etcpre.source import SourceError, SourceFile
from etcpre.translate import Options as TranslateOptions
from etcpre.translate import translate

USAGE = """\
usage: etcc [options] files...

Translate Threaded-C (.tc) files, compile them and link them with the etc runtime.
.c, .o, .a and .so files pass through to the C compiler ($CC, default cc).

  -o FILE            write the output to FILE (default a.out, or NAME.o with -c)
  -c                 compile only, to .o files
  -S                 compile only, to assembly (.s)
  -E                 translate and preprocess only, to standard output
  -O[n]              optimise (passed to cc)
  -g                 the checking build: debug information, and misuse (slot out of
                     range, remote dereference, frame used after END_FUNCTION,
                     over-signalled slot) reported as etc: error: with the .tc line
  -Dname[=v] -Uname  define / undefine a macro (for etcpre and cc)
  -Idir              add an include directory (for etcpre and cc)
  -Ldir -llib        library directory / library (passed to the linker)
  -target T          {targets} (default {default}); also --target=T
  -lb NAME           default load balancer (etcrun --lb and ETC_LB override it):
                     {balancers}
  -prof              the profiling build (thesis appendix C): a table at exit
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
    output: str | None = None
    mode: str = "link"  # link | c | S | E
    target: str = toolchain.DEFAULT_TARGET
    lb: str | None = None
    prof: bool = False
    check: bool = False
    keep: bool = False
    verbose: bool = False
    cpp: list[str] = field(default_factory=list)  # -D/-U/-I, in order
    defines: list[str] = field(default_factory=list)
    undefines: list[str] = field(default_factory=list)
    includes: list[str] = field(default_factory=list)
    cc_flags: list[str] = field(default_factory=list)
    link_flags: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)


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
        elif a == "-g" or (a.startswith("-g") and a[2:].isdigit()):
            o.check = True
            o.cc_flags.append(a)
            i += 1
        elif a.startswith("-O"):
            o.cc_flags.append(a)
            i += 1
        elif a == "-o" or (a.startswith("-o") and not a.startswith("--")):
            o.output, i = _value(argv, i, "-o")
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
            {"-D": o.defines, "-U": o.undefines, "-I": o.includes}[a[:2]].append(v)
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
            o.inputs.append(a)
            i += 1
    if not o.inputs:
        raise UsageError("no input files")
    if o.output and o.mode in ("c", "S") and \
            sum(1 for f in o.inputs if _kind(f) in ("tc", "c")) > 1:
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

    def etcpre(self, tc: str, index: int) -> Path | None:
        """Translates one .tc file in-process; diagnostics go to stderr."""
        try:
            source = SourceFile.load(tc)
        except SourceError as exc:
            sys.stderr.write(f"{exc}\n")
            return None
        stem = Path(tc).stem
        out = Path(f"{stem}.c") if self.o.keep else self.tmp / f"{index}_{stem}.c"
        if self.o.keep and out.exists() and not _generated(out):
            sys.stderr.write(f"etcc: error: -keep would overwrite {out}, which etcpre did not "
                             "write; rename one of them\n")
            return None
        self.say(["etcpre", *self.o.cpp, tc, "-o", str(out)])
        sink = DiagnosticSink()
        text = translate(source, TranslateOptions(self.o.defines, self.o.undefines,
                                                  self.o.includes), sink)
        sys.stderr.write(sink.render())
        if text is None:
            return None
        out.write_text(text, encoding="utf-8")
        return out

    def cflags(self) -> list[str]:
        flags = ["-std=gnu11", f"-I{toolchain.include_dir()}", "-fno-pie", *self.o.cpp]
        if self.o.check:
            flags.append("-DETC_CHECK")
        if self.o.prof:  # line tables: the profile places samples by line (core/prof.c)
            flags += ["-DETC_PROF"] + ([] if self.o.check else ["-g1"])
        return flags + self.o.cc_flags

    def compile(self, src: str | Path, out: Path | None, mode: str, tc: bool = False) -> int:
        # a thread's frame stays on the stack while what it calls runs: a crash or
        # an interrupt names the thread by it (runtime/core/functions.c)
        threads = ["-fno-optimize-sibling-calls"] if tc else []
        cmd = [*self.cc, *self.cflags(), *threads, f"-{mode}", str(src)]
        if out is not None:
            cmd += ["-o", str(out)]
        return self.run(cmd)

    def main(self) -> int:
        o = self.o
        objects: list[str] = []
        for index, f in enumerate(o.inputs):
            kind = _kind(f)
            if kind == "tc":
                c_file = self.etcpre(f, index)
                if c_file is None:
                    return 1
                src: str | Path = c_file
            elif kind in ("c", "asm"):
                src = f
            else:
                if o.mode == "link":
                    objects.append(f)
                continue
            stem = Path(f).stem
            tc = kind == "tc"
            if o.mode == "E":
                rc = self.compile(src, Path(o.output) if o.output else None, "E", tc)
            elif o.mode in ("c", "S"):
                ext = "o" if o.mode == "c" else "s"
                rc = self.compile(src, Path(o.output or f"{stem}.{ext}"), o.mode, tc)
            else:
                obj = self.tmp / f"{stem}_{len(objects)}.o"
                rc = self.compile(src, obj, "c", tc)
                objects.append(str(obj))
            if rc != 0:
                return rc
        if o.mode != "link":
            return 0
        return self.link(objects)

    def link(self, objects: list[str]) -> int:
        o = self.o
        lib = toolchain.library(o.target, o.check, o.prof, self.sanitize)
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
        return self.run(cmd)


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
    return run_main("etcc", _body, argv)


if __name__ == "__main__":
    sys.exit(main())
