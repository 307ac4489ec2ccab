"""etcrun's start-up path for the common run: `etcrun [-n N] [--adapt] ./prog args...` of
a seq or smp program, which etcrun only has to exec with ETC_NODES (and ETC_ADAPT) set.

`.venv/bin/etcrun` runs this module with `python -S` (`venv_scripts.py`; no
site-packages: their .pth files and the editable install's import hook cost more
than the rest of a short run) and imports nothing but os and sys. Any other command
line, and anything wrong (no such program, a bad count, another target), goes to the
full etcrun (`etcrun_cmd.py`), which says what is wrong; so this path never reports
an error of its own and behaves exactly as the full one does for what it takes.
"""

from __future__ import annotations

import os
import sys

MAX_NODES = 65534  # etcpre.cli.common.MAX_NODES (a test keeps them equal)
# targets whose programs start their own nodes, and their node limits: the rows of
# etcpre.toolchain.TARGETS without a launcher (a test keeps them equal)
SELF_STARTING = {"seq": 1, "smp": 1024}
MARKER = b"@(#)etc-program target="


def _count(text: str) -> int | None:
    """A plain node count (1 to MAX_NODES), else None: the full path judges it."""
    if not text.isascii() or not text.isdigit() or text[0] == "0":
        return None
    n = int(text)
    return n if n <= MAX_NODES else None


def _split(argv: list[str]) -> tuple[int | None, bool, str, list[str]] | None:
    """(node count or None, --adapt given, program, its arguments) when the options are
    only -n and --adapt."""
    nodes = None
    adapt = False
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        arg = argv[i]
        if arg == "--adapt":
            adapt, i = True, i + 1
            continue
        if arg in ("-n", "--nodes") and i + 1 < len(argv):
            text, i = argv[i + 1], i + 2
        elif arg.startswith("--nodes="):
            text, i = arg[len("--nodes="):], i + 1
        elif arg.startswith("-n") and not arg.startswith("--"):
            text, i = arg[2:], i + 1
        else:
            return None
        nodes = _count(text)
        if nodes is None:
            return None
    if i >= len(argv):
        return None
    return nodes, adapt, argv[i], argv[i + 1:]


def _target(path: str) -> str | None:
    """The target in the program's marker (toolchain.program_info reads the rest)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    at = data.find(MARKER)
    if at < 0:
        return None
    start = at + len(MARKER)
    end = data.find(b" ", start, start + 64)
    return data[start:end].decode("ascii", "replace") if end > start else None


def fast_exec(argv: list[str]) -> None:
    """Execs the program when this path can; returns when the full path must run."""
    split = _split(argv)
    if split is None:
        return
    nodes, adapt, prog, args = split
    env_nodes = os.environ.get("ETC_NODES")
    if nodes is None and env_nodes and _count(env_nodes) is None:
        return
    if not os.path.isfile(prog) or not os.access(prog, os.X_OK):
        return
    target = _target(prog)
    if target not in SELF_STARTING:
        return
    limit = SELF_STARTING[target]
    if (nodes or 0) > limit or (nodes is None and env_nodes and int(env_nodes) > limit):
        return
    env = dict(os.environ)
    if nodes is not None:
        env["ETC_NODES"] = str(nodes)
    if adapt:
        env["ETC_ADAPT"] = "1"
    path = prog if "/" in prog else os.path.join(".", prog)
    try:
        os.execve(path, [prog, *args], env)
    except OSError:
        return


def main() -> int:
    argv = sys.argv[1:]
    fast_exec(argv)
    if sys.flags.no_site:
        import site  # the full path needs site-packages (and the editable install)

        site.main()
    from etcpre.cli.etcrun_cmd import main as full_main

    return full_main(argv)


if __name__ == "__main__":
    sys.exit(main())
