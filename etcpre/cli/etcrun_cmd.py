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
import re
import sys
from pathlib import Path

from etcpre import cpus, toolchain
from etcpre.cli.common import MAX_NODES, ArgParser, node_count, run_main
from etcpre.trace import DEFAULT_LIMIT as TRACE_LIMIT


def _nodes(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        return node_count(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a node count (1 to {MAX_NODES}, or auto)") from None


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
        epilog="Environment: ETC_NODES, ETC_LB and ETC_ADAPT give the same settings; "
        "options win.",
    )
    ap.add_argument("-n", "--nodes", type=_nodes, default=None, metavar="N",
                    help="number of nodes, or 'auto': the CPUs the program may use less "
                    "those other jobs are using (default: " + "; ".join(
                        f"{t.name} {t.default_nodes or 'the CPUs it may use'}"
                        for t in toolchain.TARGETS.values()) + ")")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="say how many nodes the run gets and why")
    ap.add_argument("--lb", metavar="NAME",
                    help="load balancer: " + ", ".join(toolchain.BALANCERS))
    ap.add_argument("--adapt", action="store_true",
                    help="self-allocating nodes: on a machine running more tasks than "
                    "CPUs, surplus idle nodes stop taking work until the load falls "
                    "(ETC_ADAPT=1)")
    ap.add_argument("--prof", action="store_true",
                    help="require a -prof build (its profile table is printed at exit)")
    ap.add_argument("--prof-out", metavar="FILE", help="also write the profile as JSON")
    ap.add_argument("--trace", metavar="FILE.json",
                    help="a -trace build: write the run's trace (Chrome Trace Event JSON, "
                    "for ui.perfetto.dev and etctrace; docs/tracing.md)")
    ap.add_argument("--trace-limit", type=_events, default=None,
                    metavar="N", help="at most N events in the trace (default "
                    f"{TRACE_LIMIT}); a longer run is cut, saying so")
    ap.add_argument("--tag-output", action="store_true",
                    help="prefix every output line with [node]")
    ap.add_argument("--hosts", metavar="FILE",
                    help=", ".join(t.name for t in toolchain.TARGETS.values() if t.hosts)
                    + ": one 'host:count' per line, or 'host' for as many nodes as "
                    "the program may use CPUs there (docs/architecture.md)")
    ap.add_argument("--rsh", metavar="CMD", default="ssh",
                    help="the command that runs a program on another host (default ssh): tcp "
                    "nodes, and the question what a host without a count in --hosts gives")
    ap.add_argument("--timeout", type=_seconds, default=30.0, metavar="S",
                    help="tcp: seconds for all nodes to start and connect (default 30)")
    ap.add_argument("program", help="the program (built by etcc)")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return ap


# ETC_PROF_HZ's range (runtime/core/prof.c PROF_HZ_MIN, PROF_HZ_MAX)
PROF_HZ = (10, 20000)


def _sampling_rate(text: str) -> bool:
    """Whether ETC_PROF_HZ's text is one the runtime takes: what strtol reads whole
    (spaces, a sign, decimal digits), in range."""
    if not re.fullmatch(r"[ \t\n\v\f\r]*[+-]?[0-9]+", text):
        return False
    return PROF_HZ[0] <= int(text.strip()) <= PROF_HZ[1]


def _either(names: list[str]) -> str:
    """'a', 'a or b', 'a, b or c'."""
    return " or ".join(filter(None, [", ".join(names[:-1]), names[-1]]))


def fail(msg: str, code: int = 2) -> int:
    sys.stderr.write(f"etcrun: error: {msg}\n")
    return code


def _body(argv: list[str]) -> int:
    opts = _arg_parser().parse_args(argv)
    prog = Path(opts.program)
    if not prog.exists():
        return fail(f"{opts.program}: no such file")
    if prog.is_dir() or not os.access(prog, os.X_OK):
        return fail(f"{opts.program}: not an executable program")
    try:
        info = toolchain.program_info(prog)
    except OSError as exc:
        return fail(f"{opts.program}: cannot read: {exc.strerror}")
    if info is None:
        return fail(f"{opts.program}: not a Threaded-C program built by etcc")
    target = toolchain.TARGETS.get(info.target)
    if target is None:
        return fail(f"{opts.program} was built for a target this etcrun does not know "
                     f"('{info.target}'; known: {', '.join(toolchain.TARGETS)})")
    nodes = opts.nodes
    if nodes is None and os.environ.get("ETC_NODES"):
        try:  # the runtime reads it the same way (runtime/core/sched.c)
            nodes = _nodes(os.environ["ETC_NODES"])
        except argparse.ArgumentTypeError:
            return fail(f"ETC_NODES='{os.environ['ETC_NODES']}' is not a node count "
                         f"(1 to {MAX_NODES}, or auto)")
    if opts.hosts and not target.hosts:
        needs = " or ".join(t.name for t in toolchain.TARGETS.values() if t.hosts)
        return fail(f"--hosts needs a {needs} program; {opts.program} was built for "
                     f"{info.target}")
    opts.host_slots = None
    if opts.hosts:
        from etcpre.launch import hosts  # only runs on several hosts pay for it
        try:
            opts.host_slots = hosts.resolve(hosts.parse_hosts(opts.hosts), prog,
                                            hosts.rsh_command(opts.rsh), os.environ, opts.timeout)
        except hosts.HostsError as exc:
            return fail(str(exc))
        if opts.verbose:
            for slot in opts.host_slots:
                sys.stderr.write(f"etcrun: --hosts {slot.describe()}\n")
        if nodes in (None, "auto"):  # every host's count
            nodes = sum(slot.count for slot in opts.host_slots)
    if nodes == "auto":  # as the runtime decides it (core/cpus.c)
        found = cpus.auto_nodes(os.environ)
        nodes = min(found.nodes, target.max_nodes)
        if opts.verbose:
            sys.stderr.write(f"etcrun: -n auto: {found.describe()}"
                             + (f"; the {target.name} target runs {nodes}"
                                if nodes != found.nodes else "") + "\n")
    assert nodes is None or isinstance(nodes, int)
    if nodes is not None and nodes > target.max_nodes:
        others = [t.name for t in toolchain.TARGETS.values() if t.max_nodes >= nodes]
        limit = "1 node" if target.max_nodes == 1 else f"at most {target.max_nodes} nodes"
        return fail(f"{opts.program} was built for the {target.name} target, which runs on "
                     f"{limit}, not {nodes} (rebuild it with etcc -target "
                     f"{_either(others)})")
    if opts.lb is not None and opts.lb not in toolchain.BALANCERS:
        return fail(f"unknown load balancer '{opts.lb}' (valid: "
                     f"{', '.join(toolchain.BALANCERS)})")
    env_lb = os.environ.get("ETC_LB")
    if target.launcher and opts.lb is None and env_lb and env_lb not in toolchain.BALANCERS:
        # every node would say it: say it once, as the runtime does
        sys.stderr.write(f"etc: error: unknown load balancer '{env_lb}'; valid ones: "
                         f"{' '.join(toolchain.BALANCERS)}\n")
        return 2
    env_adapt = os.environ.get("ETC_ADAPT", "")
    if target.launcher and not opts.adapt and env_adapt not in ("", "0", "1"):
        # every node would say it: say it once, as the runtime does (core/adapt.c)
        sys.stderr.write(f"etc: error: ETC_ADAPT='{env_adapt}' is not 0 or 1\n")
        return 2
    env_hz = os.environ.get("ETC_PROF_HZ", "")
    if target.launcher and info.prof and env_hz and not _sampling_rate(env_hz):
        # every node would say it: say it once, as the runtime does (core/prof.c)
        sys.stderr.write(f"etc: error: ETC_PROF_HZ='{env_hz}' is not a sampling rate "
                         f"({PROF_HZ[0]} to {PROF_HZ[1]} per second)\n")
        return 2
    if (opts.prof or opts.prof_out) and not info.prof:
        what = "--prof" if opts.prof else "--prof-out"
        return fail(f"{what}: {opts.program} was not built with -prof (etcc -prof ...)")
    if opts.trace and not info.trace:
        return fail(f"--trace: {opts.program} was not built with -trace (etcc -trace ...)")
    if opts.trace_limit is not None and not opts.trace:
        return fail("--trace-limit needs --trace FILE.json")
    if opts.trace:
        out = Path(opts.trace)
        if out.is_dir() or not out.resolve().parent.is_dir():
            return fail(f"--trace: cannot write {opts.trace}: "
                         f"{'a directory' if out.is_dir() else 'no such directory'}")
    env = dict(os.environ)
    if opts.lb:
        env["ETC_LB"] = opts.lb
    if opts.prof_out:
        env["ETC_PROF_OUT"] = os.path.abspath(opts.prof_out)
    if opts.tag_output:
        env["ETC_TAG_OUTPUT"] = "1"
    if opts.adapt:
        env["ETC_ADAPT"] = "1"
    nodes = nodes or target.default_nodes
    if opts.verbose and opts.nodes != "auto" and os.environ.get("ETC_NODES") != "auto":
        sys.stderr.write(f"etcrun: {nodes} node{'s' if nodes != 1 else ''}\n" if nodes else
                         f"etcrun: as many nodes as CPUs the program may use "
                         f"({cpus.usable_cpus(os.environ)})\n")
    if opts.trace:
        from etcpre.cli import traced_run  # only traced runs pay for its imports
        return traced_run.run(opts, prog, target, nodes, env)
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
        return fail(f"{opts.program}: cannot run: {exc.strerror}", 126)
    return 0  # not reached


def main(argv: list[str] | None = None) -> int:
    return run_main("etcrun", _body, argv)


if __name__ == "__main__":
    sys.exit(main())
