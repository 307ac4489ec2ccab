"""etcrun's start-up path (etcpre/cli/etcrun_fast.py): the common run of a seq or
smp program is exec'd by a Python without site-packages, and behaves exactly as the
full etcrun does; everything else reaches the full etcrun."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from etcpre import toolchain
from etcpre.cli import common, etcrun_fast

from support import BIN, ROOT, Builder

FULL = [sys.executable, "-m", "etcpre.cli.etcrun_cmd"]


def test_its_tables_are_the_target_tables() -> None:
    assert etcrun_fast.MAX_NODES == common.MAX_NODES
    assert etcrun_fast.SELF_STARTING == {t.name: t.max_nodes for t in toolchain.TARGETS.values()
                                         if t.launcher is None}


@pytest.mark.parametrize("name", ["etcrun", "etcpre"])
def test_the_installed_script_runs_without_site_processing(name: str) -> None:
    first = (BIN / name).read_text().splitlines()[0]
    assert first.startswith("#!") and first.endswith(" -S"), first


def test_the_installed_etcpre_translates_as_the_module_does(tmp_path: Path) -> None:
    # under -S, with the repository and site-packages put on sys.path by the script
    fib = str(ROOT / "samples" / "fib.tc")
    script = subprocess.run([str(BIN / "etcpre"), fib, "-o", str(tmp_path / "a.c")],
                            capture_output=True, text=True, timeout=120, check=False)
    module = subprocess.run([sys.executable, "-m", "etcpre.cli.etcpre_cmd", fib, "-o",
                             str(tmp_path / "b.c")],
                            capture_output=True, text=True, timeout=120, check=False)
    assert script.returncode == module.returncode == 0, script.stderr + module.stderr
    assert (tmp_path / "a.c").read_bytes() == (tmp_path / "b.c").read_bytes()


@pytest.mark.parametrize(("argv", "taken"), [
    (["-n", "2", "./p", "x"], (2, False, "./p", ["x"])),
    (["-n2", "p"], (2, False, "p", [])),
    (["--nodes=3", "p", "-n", "4"], (3, False, "p", ["-n", "4"])),
    (["--nodes", "65534", "p"], (65534, False, "p", [])),
    (["p", "--lb", "x"], (None, False, "p", ["--lb", "x"])),
    (["--adapt", "-n", "2", "p"], (2, True, "p", [])),
    (["-n", "2", "--adapt", "p", "--adapt"], (2, True, "p", ["--adapt"])),
    (["--adapt", "p"], (None, True, "p", [])), (["--adapt"], None),
    (["-n", "auto", "p"], None), (["-n", "0", "p"], None), (["-n", "02", "p"], None),
    (["-n", "1_0", "p"], None), (["-n", "65535", "p"], None), (["-n", "٣", "p"], None),
    (["--lb", "rand", "p"], None), (["-v", "p"], None), (["--", "p"], None),
    (["-n", "2"], None), ([], None), (["--version"], None),
])
def test_which_command_lines_it_takes(
        argv: list[str], taken: tuple[int | None, bool, str, list[str]] | None) -> None:
    assert etcrun_fast._split(argv) == taken


def _run(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[int, list[str], str]:
    """Status, stdout's lines in order (nodes' lines may come in any order), stderr."""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False,
                          env=env, cwd=cwd)
    return proc.returncode, sorted(proc.stdout.splitlines()), proc.stderr


@pytest.mark.parametrize("target", sorted(etcrun_fast.SELF_STARTING))
def test_it_behaves_as_the_full_etcrun(build: Builder, tmp_path: Path, target: str) -> None:
    prog = build("hello.tc", target=target)
    local = tmp_path / "hello"
    local.symlink_to(prog)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ETC_NODES", None)
    cases: list[tuple[list[str], dict[str, str]]] = [
        (["-n", "1", str(prog)], {}), (["-n", "2", str(prog)], {}),
        (["hello"], {}), (["./hello"], {"ETC_NODES": "2"}), (["./hello"], {"ETC_NODES": "x"}),
        (["-n", "3", "./hello"], {"ETC_NODES": "2"}), (["./missing"], {}),
        (["--adapt", "-n", "2", "./hello"], {}), (["--adapt", "./hello"], {"ETC_ADAPT": "x"}),
        (["-n", "2", "./hello"], {"ETC_ADAPT": "x"}),
        ([str(tmp_path)], {}),
    ]
    for args, extra in cases:
        fast = _run([str(BIN / "etcrun"), *args], {**env, **extra}, tmp_path)
        full = _run([*FULL, *args], {**env, **extra}, tmp_path)
        assert fast == full, (args, extra)
