"""etcrun: run a Threaded-C program on N nodes (reference section 4).

The program's target is read from the marker the runtime links into it, and its row
of the target table (etcpre/toolchain.py) says how to start it: seq and smp programs
start their own nodes (an smp program becomes their supervisor), so etcrun sets the
environment and execs it; a target with a launcher (tcp: etcpre/launch/tcp.py) is
started as N processes by it.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from etcpre import toolchain
from etcpre.cli.common import MAX_NODES, ArgParser, node_count, run_main
from etcpre.trace import merge as trace_merge
from etcpre.trace.records import TraceFilesError


def _nodes(text: str) -> int:
    try:
        return node_count(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive number of seconds")
    return value


def _events(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive number of events")
    return int(text)


def _arg_parser() -> argparse.ArgumentParser:
    ap = ArgParser(
        prog="etcrun",
        description="Run a Threaded-C program (built by etcc) on N nodes.",
        epilog="Environment: ETC_NODES and ETC_LB give the same settings; options win.",
    )
    ap.add_argument("-n", "--nodes", type=_nodes, default=None, metavar="N",
                    help="number of nodes (default: " + "; ".join(
                        f"{t.name} {t.default_nodes or 'the number of CPUs'}"
                        for t in toolchain.TARGETS.values()) + ")")
    ap.add_argument("--lb", metavar="NAME",
                    help="load balancer: " + ", ".join(toolchain.BALANCERS))
    ap.add_argument("--prof", action="store_true",
                    help="require a -prof build (its profile table is printed at exit)")
    ap.add_argument("--prof-out", metavar="FILE", help="also write the profile as JSON")
    ap.add_argument("--trace", metavar="FILE.json",
                    help="a -trace build: write the run's trace (Chrome Trace Event JSON, "
                    "for ui.perfetto.dev and etctrace; docs/tracing.md)")
    ap.add_argument("--trace-limit", type=_events, default=None,
                    metavar="N", help="at most N events in the trace (default "
                    f"{trace_merge.DEFAULT_LIMIT}); a longer run is cut, saying so")
    ap.add_argument("--tag-output", action="store_true",
                    help="prefix every output line with [node]")
    ap.add_argument("--hosts", metavar="FILE",
                    help=", ".join(t.name for t in toolchain.TARGETS.values() if t.hosts)
                    + ": one 'host' or 'host:count' per line")
    ap.add_argument("--rsh", metavar="CMD", default="ssh",
                    help="tcp: command that starts a node on another host (default ssh)")
    ap.add_argument("--timeout", type=_seconds, default=30.0, metavar="S",
                    help="tcp: seconds for all nodes to start and connect (default 30)")
    ap.add_argument("program", help="the program (built by etcc)")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return ap


def _fail(msg: str, code: int = 2) -> int:
    sys.stderr.write(f"etcrun: error: {msg}\n")
    return code


def _body(argv: list[str]) -> int:
    opts = _arg_parser().parse_args(argv)
    prog = Path(opts.program)
    if not prog.exists():
        return _fail(f"{opts.program}: no such file")
    if prog.is_dir() or not os.access(prog, os.X_OK):
        return _fail(f"{opts.program}: not an executable program")
    try:
        info = toolchain.program_info(prog)
    except OSError as exc:
        return _fail(f"{opts.program}: cannot read: {exc.strerror}")
    if info is None:
        return _fail(f"{opts.program}: not a Threaded-C program built by etcc")
    target = toolchain.TARGETS.get(info.target)
    if target is None:
        return _fail(f"{opts.program} was built for a target this etcrun does not know "
                     f"('{info.target}'; known: {', '.join(toolchain.TARGETS)})")
    nodes = opts.nodes
    if nodes is None and os.environ.get("ETC_NODES"):
        try:  # the runtime reads it the same way (runtime/core/sched.c)
            nodes = node_count(os.environ["ETC_NODES"])
        except ValueError:
            return _fail(f"ETC_NODES='{os.environ['ETC_NODES']}' is not a node count "
                         f"(1 to {MAX_NODES})")
    if nodes is not None and nodes > target.max_nodes:
        others = [t.name for t in toolchain.TARGETS.values() if t.max_nodes >= nodes]
        limit = "1 node" if target.max_nodes == 1 else f"at most {target.max_nodes} nodes"
        return _fail(f"{opts.program} was built for the {target.name} target, which runs on "
                     f"{limit}, not {nodes} (rebuild it with etcc -target "
                     f"{' or '.join(others)})")
    if opts.lb is not None and opts.lb not in toolchain.BALANCERS:
        return _fail(f"unknown load balancer '{opts.lb}' (valid: "
                     f"{', '.join(toolchain.BALANCERS)})")
    env_lb = os.environ.get("ETC_LB")
    if target.launcher and opts.lb is None and env_lb and env_lb not in toolchain.BALANCERS:
        # every node would say it: say it once, as the runtime does
        sys.stderr.write(f"etc: error: unknown load balancer '{env_lb}'; valid ones: "
                         f"{' '.join(toolchain.BALANCERS)}\n")
        return 2
    if (opts.prof or opts.prof_out) and not info.prof:
        what = "--prof" if opts.prof else "--prof-out"
        return _fail(f"{what}: {opts.program} was not built with -prof (etcc -prof ...)")
    if opts.trace and not info.trace:
        return _fail(f"--trace: {opts.program} was not built with -trace (etcc -trace ...)")
    if opts.trace_limit is not None and not opts.trace:
        return _fail("--trace-limit needs --trace FILE.json")
    if opts.trace:
        out = Path(opts.trace)
        if out.is_dir() or not out.resolve().parent.is_dir():
            return _fail(f"--trace: cannot write {opts.trace}: "
                         f"{'a directory' if out.is_dir() else 'no such directory'}")
    if opts.hosts and not target.hosts:
        needs = " or ".join(t.name for t in toolchain.TARGETS.values() if t.hosts)
        return _fail(f"--hosts needs a {needs} program; {opts.program} was built for "
                     f"{info.target}")
    env = dict(os.environ)
    if opts.lb:
        env["ETC_LB"] = opts.lb
    if opts.prof_out:
        env["ETC_PROF_OUT"] = os.path.abspath(opts.prof_out)
    if opts.tag_output:
        env["ETC_TAG_OUTPUT"] = "1"
    nodes = nodes or target.default_nodes
    if opts.trace:
        return _traced(opts, prog, target, nodes, env)
    if target.launcher:
        # only the runs of such a target need its launcher
        launcher = importlib.import_module(f"etcpre.launch.{target.launcher}")
        return int(launcher.launch(prog, opts.args, nodes or 1, env, opts))
    if nodes is not None:
        env["ETC_NODES"] = str(nodes)
    path = str(prog if prog.is_absolute() or "/" in opts.program else Path(".") / prog)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(path, [opts.program, *opts.args], env)
    except OSError as exc:
        return _fail(f"{opts.program}: cannot run: {exc.strerror}", 126)
    return 0  # not reached


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
        return _fail(f"{opts.program}: cannot run: {exc.strerror}", 126)
    finally:
        signal.signal(signal.SIGINT, old)
    return proc.returncode if proc.returncode >= 0 else 128 - proc.returncode


def _node_total(nodes: int | None) -> int:
    return nodes if nodes is not None else (os.cpu_count() or 1)


def _traced(opts: argparse.Namespace, prog: Path, target: toolchain.Target,
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
            result = trace_merge.merge(tmp, _node_total(nodes), Path(opts.trace),
                                       limit, program=opts.program)
        except (TraceFilesError, OSError) as exc:
            _fail(f"--trace: no trace written: {exc}")
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


def main(argv: list[str] | None = None) -> int:
    return run_main("etcrun", _body, argv)


if __name__ == "__main__":
    sys.exit(main())
