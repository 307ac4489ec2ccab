"""etcrun --trace: the run with its nodes recording (ETC_TRACE_DIR), then their records
merged into one Chrome Trace Event file (docs/tracing.md)."""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from etcpre import cpus, toolchain
from etcpre.cli.etcrun_cmd import fail
from etcpre.trace import merge as trace_merge
from etcpre.trace.records import TraceFilesError


def _start(opts: argparse.Namespace, prog: Path, target: toolchain.Target, nodes: int | None,
           env: dict[str, str]) -> int:
    """Runs the program to its end (not exec: the trace is merged after it)."""
    if target.launcher:
        launcher = importlib.import_module(f"etcpre.launch.{target.launcher}")
        return int(launcher.launch(prog, opts.args, nodes or 1, env, opts))
    if nodes is not None:
        env["ETC_NODES"] = str(nodes)
    sys.stdout.flush()
    sys.stderr.flush()
    # an interrupt reaches the program too (the same process group): it ends, and the
    # trace of what ran is still written
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc = subprocess.run([opts.program, *opts.args], executable=os.path.abspath(prog),
                              env=env, check=False)
    except OSError as exc:
        return fail(f"{opts.program}: cannot run: {exc.strerror}", 126)
    finally:
        signal.signal(signal.SIGINT, old)
    return proc.returncode if proc.returncode >= 0 else 128 - proc.returncode


def _node_total(nodes: int | None, env: dict[str, str]) -> int:
    """The nodes that wrote records: without a count, an smp program's own choice."""
    return nodes if nodes is not None else cpus.usable_cpus(env)


def run(opts: argparse.Namespace, prog: Path, target: toolchain.Target,
            nodes: int | None, env: dict[str, str]) -> int:
    """A run with --trace: the nodes write their records to a directory (ETC_TRACE_DIR;
    on several hosts one under the current directory, which every host must share),
    merged into opts.trace at the end."""
    where = os.getcwd() if opts.hosts else None
    limit = opts.trace_limit or trace_merge.DEFAULT_LIMIT
    tmp = Path(tempfile.mkdtemp(prefix=".etctrace-" if where else "etctrace-", dir=where))
    try:
        env["ETC_TRACE_DIR"] = str(tmp)
        env["ETC_TRACE_LIMIT"] = str(limit)
        rc = _start(opts, prog, target, nodes, env)
        try:
            result = trace_merge.merge(tmp, _node_total(nodes, env), Path(opts.trace),
                                       limit, program=opts.program)
        except (TraceFilesError, OSError) as exc:
            fail(f"--trace: no trace written: {exc}")
            return rc or 1
        if result.truncated:
            sys.stderr.write(f"etcrun: warning: {result.note}\n")
        if result.unfinished:
            which = ", ".join(map(str, result.unfinished))
            sys.stderr.write(f"etcrun: warning: the trace lacks the last records (up to 8,192) "
                             f"of node(s) {which}, which did not end normally\n")
        return rc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
