"""etcrun under MPICH's launcher, Hydra (etcpre/launch/hydra.py, docs/protocols.md P9):
its account of a dead rank is kept out of the program's output and never names a
wrong node. The whole path runs in the mpi tests under MPICH (`make test`); these
hold its parts to exact inputs, such as Hydra's race with etcrun, that a run makes
only now and then."""

from __future__ import annotations

import os
import selectors
from pathlib import Path

from etcpre.launch import hydra

BAR = b"=" * 83 + b"\n"
ACCOUNT = [b"\n", BAR, hydra.HEAD.encode() + b"\n", b"=   PID 4242 RUNNING AT vm\n",
           b"=   EXIT CODE: 9\n", BAR,
           b"YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)\n",
           b"This typically refers to a problem with your application.\n"]


def through(lines: list[bytes], failed: bool) -> tuple[bytes, list[str], hydra.Stdout]:
    written: list[bytes] = []
    out = hydra.Stdout(written.append)
    for line in lines:
        out.line(line)
    account = out.finish(failed)
    return b"".join(written), account, out


def test_the_programs_lines_pass_whole_and_in_order() -> None:
    # blank lines and bars wait for the next line, then go on as they were
    lines = [b"a\n", b"\n", b"\n", BAR, b"b\n", BAR, BAR, b"\n", b"c\n", b"\n", BAR]
    written, account, _ = through(lines, failed=False)
    assert written == b"".join(lines) and account == []


def test_a_failed_runs_account_is_held_back() -> None:
    lines = [b"running\n", *ACCOUNT, b"[mpiexec@vm] Exit codes: [vm] 0,0,9\n"]
    written, account, out = through(lines, failed=True)
    assert written == b"running\n"
    assert account[0] == "=" * 83 and "=   PID 4242 RUNNING AT vm" in account
    assert out.codes == [[0, 0, 9]]


def test_the_program_keeps_what_came_after_the_accounts_head() -> None:
    # a rank's last lines may come after Hydra began its account
    written, _, _ = through([*ACCOUNT[:6], b"late line\n", *ACCOUNT[6:]], failed=True)
    assert written == b"late line\n"
    # and a run that went well prints all of it: it was the program's
    lines = [*ACCOUNT, b"more\n"]
    assert through(lines, failed=False)[0] == b"".join(lines)


def test_the_exit_codes_are_never_the_programs() -> None:
    # asked for by etcrun; a last line without its newline keeps its text; each host
    # after the first on a line of its own
    written, _, out = through([b"x\n", b"tail[mpiexec@vm] Exit codes: [a] 0,9\n",
                               b"[b] 1280,-1\n", b"[c] 0\n", b"[not codes]\n"], failed=False)
    assert written == b"x\ntail\n[not codes]\n" and out.codes == [[0, 9], [1280, -1], [0]]


ALL = {0, 1, 2}  # the ranks that held their lifelines


def test_the_rank_that_ended_alone_first_is_named() -> None:
    assert hydra.explain([], [[2], [0], [1]], ALL, [[0, 9, 9]], 3) == "node 2: killed by SIGKILL"
    assert hydra.explain([], [[1]], ALL, [[0, 5 << 8, 9]], 3) == \
        "node 1: exited with status 5 while the run was going on"
    # a rank that finished first, well, is not the one that failed
    assert hydra.explain([], [[0], [2, 1]], ALL, [[0, 0, 9]], 3) == "node 2: killed by SIGKILL"


def test_ranks_that_ended_at_once_are_all_named_and_none_chosen() -> None:
    said = hydra.explain([], [[0, 1, 2]], ALL, [[0, 9, 9]], 3)
    assert said is not None and said.startswith("one of nodes 1, 2 ended the run")


def test_what_is_not_known_is_not_guessed() -> None:
    line = "Abort(3) on node 2 (rank 2 in comm 0): application called MPI_Abort(x, 3)"
    assert hydra.explain([line], [], set(), [], 3) == \
        "node 2: ended the run with MPI_Abort (status 3)"
    assert hydra.explain([], [], ALL, [[0, 9, 0]], 3) is None  # no lifeline seen closed
    # rank 0 ended badly before it held its lifeline: it may have been the first
    assert hydra.explain([], [[2]], {1, 2}, [[9, 0, 9]], 3) is None
    # statuses of several hosts: not in rank order; of fewer ranks than ran (Hydra
    # leaves out a host that gave none)
    assert hydra.explain([], [[2]], ALL, [[0, 0], [9]], 3) is None
    assert hydra.explain([], [[1]], ALL, [[0, 9]], 3) is None


def test_a_lifeline_is_seen_when_its_rank_ends(tmp_path: Path) -> None:
    lines = hydra.Lifelines(tmp_path, 3)
    sel = selectors.DefaultSelector()
    lines.watch(sel)
    assert sel.select(0) == []  # no rank has held one yet: nothing ended
    held = [os.open(tmp_path / str(k), os.O_WRONLY | os.O_NONBLOCK) for k in range(3)]
    for k in (0, 1):  # as a rank says it holds its own
        os.write(held[k], b"+")
    lines.ended(sel, [key.fd for key, _ in sel.select(0)])
    assert lines.held == {0, 1} and lines.batches == []
    for k in (1, 0):  # rank 1 ends, then (at the next wake-up) rank 0
        os.close(held[k])
        lines.ended(sel, [key.fd for key, _ in sel.select(0)])
    os.close(held[2])  # rank 2 ends without having said it held its own: not counted
    lines.ended(sel, [key.fd for key, _ in sel.select(0)])
    assert lines.batches == [[1], [0]]
    lines.close(sel)
    assert sel.get_map() == {} and lines.fds == {}


def test_a_signalled_rank_is_told_from_a_rank_that_could_not_start() -> None:
    # Hydra's exit status is 2 both for a rank that exited 2 (a bad setting, before
    # the run) and for one killed by SIGINT alone: its statuses tell them apart
    exited_2, sigint = 2 << 8, 2
    assert not hydra.any_signalled([[exited_2, 0, 0]])
    assert hydra.any_signalled([[0, sigint, 9 << 8]])
    assert hydra.any_signalled([[0], [0, 9]])  # a second host's line
    assert not hydra.any_signalled([])  # no statuses said
