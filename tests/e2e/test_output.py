"""The run's output (reference section 3, issue 15): a write error on stdout or
stderr ends the run with `etc: error:` and a non-zero status on every target, a
reader that goes away (`| head`) is not an error, and a node's last line without a
newline is never glued to another node's line."""

from __future__ import annotations

import os
import subprocess

import pytest

from etcpre import toolchain

from support import BIN, Builder, run, run_ids, target_runs

RUNS = [(t, n) for t, n in target_runs() if n <= 3]


def relayed(target: toolchain.Target, n: int) -> bool:
    """Whether the nodes' output passes through a relay (N10), rather than being
    written by the program's own process to the run's streams."""
    return n > 1 or target.launcher is not None


@pytest.mark.parametrize(("target", "n"), RUNS, ids=run_ids(RUNS))
def test_unterminated_lines_are_never_glued(build: Builder, target: toolchain.Target,
                                            n: int) -> None:
    proc = run(build("unterminated.tc", target=target.name), nodes=n)
    assert proc.returncode == 0, proc.stderr
    got = proc.stdout.splitlines()
    assert sorted(got) == [f"unterminated from node {k}" for k in range(n)], proc.stdout
    assert proc.stdout.endswith("\n") == relayed(target, n), repr(proc.stdout)


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
@pytest.mark.parametrize(("target", "n"), RUNS, ids=run_ids(RUNS))
def test_a_full_disk_is_an_error(build: Builder, target: toolchain.Target, n: int,
                                 stream: str) -> None:
    prog = build("unterminated.tc", target=target.name)
    with open("/dev/full", "wb") as full:
        if stream == "stdout":
            proc = subprocess.run([str(BIN / "etcrun"), "-n", str(n), str(prog), "100"],
                                  stdout=full, stderr=subprocess.PIPE, text=True,
                                  timeout=60, check=False)
            assert "cannot write to standard output: No space left on device" \
                in proc.stderr, proc.stderr
            assert "etc: error: " in proc.stderr
        else:  # the message itself cannot be written: the status says it
            proc = subprocess.run([str(BIN / "etcrun"), "-n", str(n), str(prog), "100"],
                                  stdout=full, stderr=full, timeout=60, check=False)
    assert proc.returncode != 0


@pytest.mark.parametrize(("target", "n"), RUNS, ids=run_ids(RUNS))
def test_a_closed_stdout_is_an_error(build: Builder, target: toolchain.Target,
                                     n: int) -> None:
    prog = build("unterminated.tc", target=target.name)
    proc = subprocess.run([str(BIN / "etcrun"), "-n", str(n), str(prog), "10"],
                          stderr=subprocess.PIPE, text=True, timeout=60, check=False,
                          preexec_fn=lambda: os.close(1))
    assert proc.returncode != 0
    assert "etc: error: " in proc.stderr and "cannot write to standard output" in proc.stderr


@pytest.mark.parametrize(("target", "n"), RUNS, ids=run_ids(RUNS))
def test_a_reader_that_goes_away_is_not_an_error(build: Builder, target: toolchain.Target,
                                                 n: int) -> None:
    prog = build("unterminated.tc", target=target.name)
    p = subprocess.Popen([str(BIN / "etcrun"), "-n", str(n), str(prog), "200000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    assert p.stdout.readline().startswith(b"node ")
    p.stdout.close()  # as `| head -1` does
    err = p.stderr.read()
    assert p.wait(timeout=60) == 0, err
    assert err == b""
