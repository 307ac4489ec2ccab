"""A part of the end-to-end suite under ASan+UBSan, in `make test` (the whole suite
under the sanitizers is `make test-asan`): programs built with -fsanitize and linked
with the sanitized runtime (which also checks the runtime's internal invariants), on
every target of the target table. Any report fails the run."""

from __future__ import annotations

import os

import pytest

from etcpre import toolchain

from support import CAUSAL, TARGETS, Builder, check_sample, run, run_ids

SAN = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer",
       "-fno-sanitize-recover=undefined"]
ENV = {**os.environ, "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
       "UBSAN_OPTIONS": "print_stacktrace=1"}


# every target on one node and on its largest node count up to 4
RUNS = sorted({(t, min(n, t.max_nodes)) for t in TARGETS for n in (1, 4)},
              key=lambda r: (TARGETS.index(r[0]), r[1]))
MULTI = [t for t in TARGETS if t.max_nodes >= 3]


@pytest.mark.parametrize(("target", "nodes"), RUNS, ids=run_ids(RUNS))
def test_samples_sanitized(build: Builder, target: toolchain.Target, nodes: int) -> None:
    for name in ("fib", "vadd", "call", "getloop", "hello", "loop"):
        proc = run(build(f"{name}.tc", *SAN, target=target.name), nodes=nodes, env=ENV,
                   timeout=120)
        assert proc.returncode == 0, f"{name}: {proc.stderr[-3000:]}"
        assert "ERROR: AddressSanitizer" not in proc.stderr
        assert "runtime error:" not in proc.stderr
        check_sample(name, nodes, proc.stdout, causal=target.name in CAUSAL)


@pytest.mark.parametrize("target", MULTI, ids=[t.name for t in MULTI])
def test_remote_operations_sanitized(build: Builder, target: toolchain.Target) -> None:
    nodes = 3
    proc = run(build("remote_ops.tc", *SAN, target=target.name), nodes=nodes, env=ENV,
               timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == f"remote ops: {nodes} nodes, {nodes * (nodes - 1)} pairs, 0 errors\n"
    proc = run(build("stress.tc", *SAN, target=target.name), "60000", nodes=nodes, env=ENV,
               timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "0 errors, sums agree" in proc.stdout


def test_checking_build_sanitized(build: Builder) -> None:
    proc = run(build("check_misuse.tc", "-g", *SAN), "none", nodes=2, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == "done none\n"
