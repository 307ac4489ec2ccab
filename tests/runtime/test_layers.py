"""The runtime Makefile finds the network layers by their folders (runtime/net/*/,
net/common/ being shared code), and the target table (etcpre/toolchain.py) lists
the same ones; a layer's layer.mk gives its compiler and flags, or the reason it
cannot be built on this machine, which skips it with a note."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from etcpre import toolchain

from support import ROOT

RUNTIME = ROOT / "runtime"


def make(*args: str, cwd: Path = RUNTIME) -> str:
    proc = subprocess.run(["make", "--no-print-directory", "-C", str(cwd), *args],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_the_makefile_and_the_target_table_agree() -> None:
    built = make("targets").split()
    usable = [t.name for t in toolchain.TARGETS.values() if not t.missing()]
    assert sorted(built) == sorted(usable)
    folders = sorted(p.name for p in (RUNTIME / "net").iterdir()
                     if p.is_dir() and p.name != "common")
    assert sorted(toolchain.TARGETS) == folders, "a layer folder without a row, or the reverse"


def test_a_layer_is_a_folder(tmp_path: Path) -> None:
    rt = tmp_path / "runtime"
    shutil.copytree(RUNTIME, rt)
    fake = rt / "net" / "fake"
    fake.mkdir()
    src = (RUNTIME / "net" / "seq" / "seq.c").read_text()
    assert 'ETC_NET_LAYER("seq");' in src
    (fake / "fake.c").write_text(src.replace('ETC_NET_LAYER("seq");', 'ETC_NET_LAYER("fake");'))
    (fake / "layer.mk").write_text("LAYER_CC := gcc\nLAYER_CFLAGS := -DFAKE_LAYER_FLAG\n")
    absent = rt / "net" / "absent"
    absent.mkdir()
    (absent / "absent.c").write_text("#error not to be compiled\n")
    (absent / "layer.mk").write_text(
        "LAYER_MISSING := $(if $(shell command -v no-such-compiler-here),,"
        "no-such-compiler-here is not installed)\n")
    build = tmp_path / "build"
    targets = make("targets", f"BUILD={build}", cwd=rt).split()
    assert "fake" in targets and "absent" not in targets and "common" not in targets
    plan = make("-n", f"BUILD={build}", cwd=rt)
    assert "SKIP    target absent: no-such-compiler-here is not installed" in plan
    compile_fake = [line for line in plan.splitlines()
                    if line.startswith("gcc ") and "net/fake/fake.c" in line]
    assert compile_fake and all("-DFAKE_LAYER_FLAG" in line for line in compile_fake)
    assert "libetc_fake.a" in plan and "libetc_net_fake.a" in plan
    assert "absent.c" not in plan and "libetc_absent" not in plan
