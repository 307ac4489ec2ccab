"""Session fixtures: Threaded-C programs built with etcc once per session."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from etcpre import toolchain

from support import PROGRAMS, SAMPLES, SANITIZE, Builder, etcc, require


@pytest.fixture(scope="session")
def build(tmp_path_factory: pytest.TempPathFactory) -> Builder:
    """build(source, *flags, target="smp", runtime=None) -> path of the program (cached).
    `runtime`: "debug" links the runtime built with its internal checks, "" the normal
    one (ETC_RUNTIME; None: as the environment says). A target that cannot be used
    here skips the test."""
    out = tmp_path_factory.mktemp("programs")
    cache: dict[str, Path] = {}

    def _build(source: Path | str, *flags: str, target: str = "smp",
               runtime: str | None = None) -> Path:
        require(toolchain.TARGETS[target])
        src = Path(source)
        if not src.is_absolute():
            src = (PROGRAMS / src) if (PROGRAMS / src).exists() else SAMPLES / src
        all_flags = ["-O2", *SANITIZE, *flags, "-target", target]
        if runtime is None:
            runtime = os.environ.get("ETC_RUNTIME", "")
        key = hashlib.sha1(f"{src}|{all_flags}|{runtime}".encode()).hexdigest()[:12]
        if key not in cache:
            prog = out / f"{src.stem}-{target}-{key}"
            env = {**os.environ, "ETC_RUNTIME": runtime}
            proc = etcc(*all_flags, str(src), "-o", str(prog), env=env)
            assert proc.returncode == 0, f"etcc failed:\n{proc.stderr}"
            cache[key] = prog
        return cache[key]

    return _build


