"""Every sample gives its expected output on every target of the target table, on
each of its node counts (support.node_counts), and in the checking build.

samples/NAME.out is the output on one node; on N nodes some samples name N or a
node, so the expectation is computed here from the same rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from etcpre import toolchain

from support import (
    CAUSAL,
    SAMPLES,
    TARGET_IDS,
    TARGETS,
    Builder,
    check_sample,
    run,
    run_ids,
    target_runs,
)

NAMES = sorted(p.stem for p in SAMPLES.glob("*.tc"))
RUNS = target_runs()


def test_every_sample_has_expected_output() -> None:
    assert {"hello", "fib", "vadd", "loop", "call", "getloop"} <= set(NAMES)
    for name in NAMES:
        assert (SAMPLES / f"{name}.out").is_file(), name


@pytest.mark.parametrize(("target", "n"), RUNS, ids=run_ids(RUNS))
@pytest.mark.parametrize("name", NAMES)
def test_sample(build: Builder, name: str, target: toolchain.Target, n: int) -> None:
    proc = run(build(f"{name}.tc", target=target.name), nodes=n, timeout=60)
    assert proc.returncode == 0, proc.stderr
    check_sample(name, n, proc.stdout, causal=target.name in CAUSAL)


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
@pytest.mark.parametrize("name", NAMES)
def test_sample_checking_build(build: Builder, name: str, target: toolchain.Target) -> None:
    n = min(2, target.max_nodes)
    proc = run(build(f"{name}.tc", "-g", target=target.name), nodes=n)
    assert proc.returncode == 0, proc.stderr
    check_sample(name, n, proc.stdout, causal=target.name in CAUSAL)
    assert "etc: error" not in proc.stderr


def test_samples_are_samples(tmp_path: Path) -> None:
    # the list: hello, fib (Fig. 2.3), vadd (2.6), loop (2.17), call (2.16),
    # getloop (B.2)
    for name, fig in [("fib", "2.3"), ("vadd", "2.6"), ("loop", "2.17"), ("call", "2.16"),
                      ("getloop", "B.2")]:
        assert f"Fig. {fig}" in (SAMPLES / f"{name}.tc").read_text(), name
