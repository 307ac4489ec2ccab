"""docs/tutorial.md never goes stale: its code blocks are run in order in an empty
directory, as a student would. A ```c file=NAME block is written to NAME; a ```sh
block is run with bash and must succeed, a ```sh fails block must fail; a
```text output block after one must appear in what that block printed (each line)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from support import BIN, ROOT

TUTORIAL = ROOT / "docs" / "tutorial.md"
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```$", re.S | re.M)


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1).strip(), m.group(2)) for m in FENCE.finditer(TUTORIAL.read_text())]


def test_the_tutorial_has_what_it_should() -> None:
    kinds = [info for info, _ in blocks()]
    assert any(k.startswith("c file=") for k in kinds)
    assert "sh fails" in kinds and "text output" in kinds
    text = TUTORIAL.read_text()
    for command in ("etcc -trace", "etcrun --trace", "etctrace summary", "etctrace plot",
                    "etctrace tree", "etcc -g", "etcc -O2 -prof", "etcpre"):
        assert command in text.replace("-O2 -trace", "-trace"), command
    assert "docs/tutorial.md" in (ROOT / "README.md").read_text()


def test_every_command_of_the_tutorial_runs(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    last: tuple[str, str] | None = None  # (the last sh block, what it printed)
    ran = 0
    for info, body in blocks():
        if info.startswith("c file="):
            (tmp_path / info.removeprefix("c file=")).write_text(body)
        elif info in ("sh", "sh fails"):
            proc = subprocess.run(["bash", "-c", "set -e\n" + body], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=300, check=False)
            if info == "sh":
                assert proc.returncode == 0, f"{body}\n{proc.stdout}\n{proc.stderr}"
            else:
                assert proc.returncode != 0, f"{body}\n{proc.stdout}\n{proc.stderr}"
            last = (body, proc.stdout + proc.stderr)
            ran += 1
        elif info == "text output":
            assert last is not None, "an output block before any command"
            for line in body.splitlines():
                if line.strip():
                    assert line.strip() in last[1], f"{last[0]}\nwanted: {line}\ngot:\n{last[1]}"
    assert ran >= 10
    # what the commands made is what they say
    assert (tmp_path / "speedup.png").read_bytes().startswith(b"\x89PNG")
    assert b"<svg" in (tmp_path / "tree.svg").read_bytes()
    summary = json.loads((tmp_path / "fib2-summary.json").read_text())
    assert summary["work_threads"] == 3 * 987 and summary["span_threads"] == 31  # fib(15)
    assert len(json.loads((tmp_path / "profile.json").read_text())["nodes"]) == 2
