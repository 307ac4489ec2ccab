"""Every sample gives its expected output on seq and on 1, 2, 4 and 16 smp nodes.

samples/NAME.out is the output on one node; on N nodes some samples name N or a
node, so the expectation is computed here from the same rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import SAMPLES, Builder, check_sample, run

NAMES = sorted(p.stem for p in SAMPLES.glob("*.tc"))
NODES = [1, 2, 4, 16]


def test_every_sample_has_expected_output() -> None:
    assert {"hello", "fib", "vadd", "loop", "call", "getloop"} <= set(NAMES)
    for name in NAMES:
        assert (SAMPLES / f"{name}.out").is_file(), name


@pytest.mark.parametrize("name", NAMES)
def test_sample_seq(build: Builder, name: str) -> None:
    proc = run(build(f"{name}.tc", target="seq"), nodes=1)
    assert proc.returncode == 0, proc.stderr
    check_sample(name, 1, proc.stdout)


@pytest.mark.parametrize("n", NODES)
@pytest.mark.parametrize("name", NAMES)
def test_sample_smp(build: Builder, name: str, n: int) -> None:
    proc = run(build(f"{name}.tc"), nodes=n, timeout=60)
    assert proc.returncode == 0, proc.stderr
    check_sample(name, n, proc.stdout)


@pytest.mark.parametrize("name", NAMES)
def test_sample_checking_build(build: Builder, name: str) -> None:
    proc = run(build(f"{name}.tc", "-g"), nodes=2)
    assert proc.returncode == 0, proc.stderr
    check_sample(name, 2, proc.stdout)
    assert "etc: error" not in proc.stderr


def test_samples_are_samples(tmp_path: Path) -> None:
    # the list: hello, fib (Fig. 2.3), vadd (2.6), loop (2.17), call (2.16),
    # getloop (B.2)
    for name, fig in [("fib", "2.3"), ("vadd", "2.6"), ("loop", "2.17"), ("call", "2.16"),
                      ("getloop", "B.2")]:
        assert f"Fig. {fig}" in (SAMPLES / f"{name}.tc").read_text(), name
