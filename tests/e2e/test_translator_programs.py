"""The translator's valid programs (issue 14) run and give their expected output on
every target of the target table, at each of its node counts: every
tests/golden/NAME.tc with a NAME.out, and every project in tests/golden/projects/
(built from another directory, so its local headers must be found next to its files).
Also programs the suite generates: nesting as deep as gcc accepts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from etcpre import toolchain

from support import (
    MULTI_NODE_TARGETS,
    ROOT,
    SANITIZE,
    etcc,
    require,
    run,
    run_ids,
    target_runs,
)

sys.path.insert(0, str(ROOT / "tests" / "golden"))
import regen  # noqa: E402

RUNS = target_runs()
SINGLE = sorted(tc for tc in regen.GOLDEN.glob("*.tc") if tc.with_suffix(".out").exists())
PROJECTS = sorted(d for d in regen.PROJECTS.iterdir() if (d / "expected.out").exists())


def project_sources(project: Path) -> list[Path]:
    """The .tc files and the plain .c files of a project (a .c next to a .tc of the same
    name is that file's golden translation, not a source)."""
    tcs = sorted(project.glob("*.tc"))
    stems = {tc.stem for tc in tcs}
    return tcs + sorted(c for c in project.glob("*.c") if c.stem not in stems)


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory):
    """programs(name_or_project, target) -> the built program (built once)."""
    out = tmp_path_factory.mktemp("translator-programs")
    built: dict[tuple[str, ...], Path] = {}

    def _build(source: Path, target: str, *more: str) -> Path:
        require(toolchain.TARGETS[target])
        key = (str(source), target, *more)
        if key not in built:
            prog = out / f"{source.stem}-{target}{''.join(more)}"
            if source.is_dir():
                files = [str(f) for f in project_sources(source)]
                flags: list[str] = []
            else:
                files, flags = [str(source)], regen.flags(source)
            # built from a directory of its own: nothing is found by being in the cwd
            proc = etcc("-O2", *SANITIZE, *flags, *more, "-target", target, *files, "-o",
                        str(prog), cwd=out)
            assert proc.returncode == 0, f"etcc failed:\n{proc.stderr}"
            built[key] = prog
        return built[key]

    return _build


@pytest.mark.parametrize(("target", "n"), RUNS, ids=run_ids(RUNS))
@pytest.mark.parametrize("tc", SINGLE, ids=[tc.stem for tc in SINGLE])
def test_program(programs, tc: Path, target: toolchain.Target, n: int) -> None:
    proc = run(programs(tc, target.name), nodes=n, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "etc: error" not in proc.stderr
    assert proc.stdout == tc.with_suffix(".out").read_text()


@pytest.mark.parametrize("tc", SINGLE, ids=[tc.stem for tc in SINGLE])
def test_program_checking_build(programs, tc: Path) -> None:
    # the checking build reports no misuse (a GLOBAL member address that lost its
    # node would be a "remote dereference" here) and prints the same
    proc = run(programs(tc, "smp", "-g"), nodes=2, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "etc: error" not in proc.stderr
    assert proc.stdout == tc.with_suffix(".out").read_text()


@pytest.mark.parametrize(("target", "n"), RUNS, ids=run_ids(RUNS))
@pytest.mark.parametrize("project", PROJECTS, ids=[p.name for p in PROJECTS])
def test_project(programs, project: Path, target: toolchain.Target, n: int) -> None:
    proc = run(programs(project, target.name), nodes=n, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (project / "expected.out").read_text()


def test_every_valid_program_runs() -> None:
    # each issue-14 program that translates is also run here
    assert {"global_members", "macros_and_constants", "conditional", "forward_and_const",
            "other_valid_c"} <= {tc.stem for tc in SINGLE}
    assert "vectors" in {p.name for p in PROJECTS}


def nested_ifs(depth: int) -> str:
    """MAIN with `depth` nested ifs around a thread boundary at the innermost level."""
    opens = "".join(f"if (x < {k + 1}) {{\n" for k in range(depth))
    closes = "}\n" * depth
    return ("#include <stdio.h>\n"
            "THREADED MAIN(void)\n{\n    SLOT SYNC_SLOTS[1];\n    int x = 0;\n"
            "    INIT_SYNC(0, 1, 1, 1);\n"
            f"{opens}x++;\nSYNC(0);\n{closes}"
            "    END_THREAD();\nTHREAD_1:\n    printf(\"x = %d\\n\", x);\n"
            "    END_FUNCTION();\n}\n")


@pytest.mark.parametrize("depth", [500, 10_000])
def test_nesting_as_deep_as_gcc_accepts(tmp_path: Path, depth: int) -> None:
    src = tmp_path / "deep.tc"
    src.write_text(nested_ifs(depth))
    proc = etcc("-target", "seq", str(src), "-o", str(tmp_path / "deep"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = run(tmp_path / "deep", nodes=1)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "x = 1\n"


@pytest.mark.parametrize(("how", "message"), [
    ("call", "'work' ends with END_FUNCTION(), but 'MAIN' started it with CALL (main.tc:18)"),
    ("invoke", "'back' ends with RETURN(), but 'MAIN' started it with INVOKE (main.tc:16)"),
])
@pytest.mark.parametrize("target", [t.name for t in MULTI_NODE_TARGETS])
def test_started_the_wrong_way_from_another_file(tmp_path: Path, target: str, how: str,
                                                  message: str) -> None:
    # one file CALLs a function another file ends with END_FUNCTION (or INVOKEs one
    # ending with RETURN): the translator cannot see it; the checking build says it,
    # naming both functions
    require(toolchain.TARGETS[target])
    project = regen.PROJECTS / "start_mismatch"
    prog = tmp_path / "prog"
    proc = etcc("-g", *SANITIZE, "-target", target, "main.tc", "callee.tc", "-o", str(prog),
                cwd=project)
    assert proc.returncode == 0, proc.stderr
    out = run(prog, how, nodes=2)
    assert out.returncode != 0
    assert "etc: error:" in out.stderr and message in out.stderr, out.stderr
