"""The runtime tested in C, without the translator: hand-translated programs that
call the ABI the way etcpre's output does, built with gcc and clang in the normal
and the checking build; the runtime's own sources compile warning-free with both
compilers; valgrind's memcheck finds no error or leak in fib and vadd; the smp
layer's shared-heap allocator keeps every block's bytes through a random mix of
the whole malloc family (with UBSan); the coalescing buffers of the message-passing
layers grow a sent frame only while none of it is written (ASan, UBSan)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from support import ROOT, SAMPLES, Builder

HERE = Path(__file__).resolve().parent
INCLUDE = ROOT / "runtime" / "include"
LIB = ROOT / "build" / "runtime" / "lib"
COMPILERS = ["gcc", "clang"]


def _cc(cc: str, src: Path, out: Path, lib: Path, *flags: str) -> None:
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed (.ci/run installs clang)")
    proc = subprocess.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-no-pie",
                           *flags, f"-I{INCLUDE}", str(src), str(lib), "-pthread", "-o",
                           str(out)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("check", [False, True], ids=["normal", "checking"])
def test_core_semantics(tmp_path: Path, cc: str, check: bool) -> None:
    prog = tmp_path / "unit_core"
    lib = LIB / ("libetc_seq_check.a" if check else "libetc_seq.a")
    _cc(cc, HERE / "unit_core.c", prog, lib, *(["-DETC_CHECK"] if check else []))
    proc = subprocess.run([str(prog)], capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "done 0", proc.stdout
    assert not [x for x in lines if x.startswith("FAIL")]
    assert len([x for x in lines if x.startswith("ok ")]) == 15


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("check", [False, True], ids=["normal", "checking"])
def test_hand_translated_fib_seq(tmp_path: Path, cc: str, check: bool) -> None:
    prog = tmp_path / "hand_fib"
    lib = LIB / ("libetc_seq_check.a" if check else "libetc_seq.a")
    _cc(cc, HERE / "hand_fib.c", prog, lib, *(["-DETC_CHECK"] if check else []))
    proc = subprocess.run([str(prog), "24"], capture_output=True, text=True, timeout=30,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "fib(24) = 46368\n"


def _unit_test(tmp_path: Path, cc: str, debug: bool, sanitizers: str, sources: list[Path],
               cases: int) -> None:
    """Builds a unit test of runtime sources (`debug`: with the runtime's internal
    checks, ETC_ASSERT) under the sanitizers, runs it, and checks that its `cases`
    cases printed `ok` and none failed."""
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed (.ci/run installs clang)")
    prog = tmp_path / sources[0].stem
    proc = subprocess.run([cc, "-std=c11", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wextra", "-Werror",
                           *(["-DETC_DEBUG"] if debug else []), f"-fsanitize={sanitizers}",
                           "-fno-sanitize-recover=undefined", f"-I{ROOT / 'runtime'}",
                           f"-I{INCLUDE}", *map(str, sources), "-pthread", "-o", str(prog)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run([str(prog)], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "done 0", proc.stdout
    assert len([x for x in lines if x.startswith("ok ")]) == cases, proc.stdout


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("debug", [False, True], ids=["normal", "debug"])
def test_smp_shared_heap_allocator(tmp_path: Path, cc: str, debug: bool) -> None:
    # debug: with the runtime's internal checks (the boundary tags of every block
    # the allocator steps across, no double free)
    smp = ROOT / "runtime" / "net" / "smp"
    _unit_test(tmp_path, cc, debug, "undefined",
               [HERE / "unit_smp_heap.c", smp / "smp_heap.c", smp / "smp_share.c"], 7)


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("debug", [False, True], ids=["normal", "debug"])
def test_coalescing_buffers_grow_only_unwritten_frames(tmp_path: Path, cc: str,
                                                       debug: bool) -> None:
    # net/common/wire.c against a writer that takes all, nothing or part: a frame
    # grows (N13) only while none of it is written, and only the last one; what the
    # channel carried parses back into exactly the messages sent; a flush visits
    # only the destinations with bytes waiting, and keeps those whose channel is
    # full (ASan, UBSan)
    common = ROOT / "runtime" / "net" / "common"
    _unit_test(tmp_path, cc, debug, "address,undefined",
               [HERE / "unit_wire.c", common / "wire.c", common / "frag.c"], 10)


@pytest.mark.parametrize("nodes", [1, 2, 4])
def test_hand_translated_fib_smp(tmp_path: Path, nodes: int) -> None:
    prog = tmp_path / "hand_fib"
    _cc("gcc", HERE / "hand_fib.c", prog, LIB / "libetc_smp.a")
    proc = subprocess.run([str(prog), "24"], capture_output=True, text=True, timeout=30,
                          check=False, env={**os.environ, "ETC_NODES": str(nodes)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "fib(24) = 46368\n"


@pytest.mark.parametrize("cc", COMPILERS)
def test_runtime_sources_compile_warning_free(tmp_path: Path, cc: str) -> None:
    # with the runtime Makefile, so that each layer is compiled as it is built (its
    # layer.mk's compiler and flags): the normal variant, every define at once, and
    # the tracing build (a build of its own)
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed (.ci/run installs clang)")
    for build, extra in ((tmp_path / "plain", ["VARIANTS=plain"]),
                         (tmp_path / "all", ["VARIANTS=check_prof", "DEBUG=1"]),
                         (tmp_path / "trace", ["VARIANTS=trace", "DEBUG=1"])):
        proc = subprocess.run(["make", "-C", str(ROOT / "runtime"), "-j2", f"BUILD={build}",
                               f"CC={cc}", "WERROR=1", *extra], capture_output=True,
                              text=True, check=False)
        assert proc.returncode == 0, f"{extra}: {proc.stdout[-3000:]}{proc.stderr[-3000:]}"


@pytest.mark.parametrize("name", ["fib", "vadd"])
def test_valgrind_memcheck(build: Builder, name: str) -> None:
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed (.ci/run installs it)")
    prog = build(f"{name}.tc", target="seq")
    proc = subprocess.run(["valgrind", "--error-exitcode=99", "--leak-check=full",
                           "--errors-for-leak-kinds=definite,indirect", str(prog),
                           *(["18"] if name == "fib" else [])],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ERROR SUMMARY: 0 errors" in proc.stderr
    assert re.search(r"definitely lost: 0 bytes", proc.stderr) or \
        "All heap blocks were freed" in proc.stderr, proc.stderr[-2000:]
    want = "fib(18) = 2584\n" if name == "fib" else (SAMPLES / f"{name}.out").read_text()
    assert proc.stdout == want


def test_valgrind_sees_the_heap_of_smp_nodes(build: Builder) -> None:
    # smp nodes allocate from their shared heap slice, which valgrind cannot track;
    # under valgrind they keep glibc's malloc, so a lost block is still reported
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed (.ci/run installs it)")
    prog = build("leak.tc")
    proc = subprocess.run(["valgrind", "--leak-check=full", str(prog)], capture_output=True,
                          text=True, timeout=300, check=False,
                          env={**os.environ, "ETC_NODES": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == "ok\n"
    assert "definitely lost: 1,000 bytes in 1 blocks" in proc.stderr, proc.stderr[-3000:]
