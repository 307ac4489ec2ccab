"""Session fixtures: Threaded-C programs built with etcc once per session."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from support import PROGRAMS, SAMPLES, SANITIZE, Builder, etcc


@pytest.fixture(scope="session")
def build(tmp_path_factory: pytest.TempPathFactory) -> Builder:
    """build(source, *flags, target="smp") -> path of the program (cached)."""
    out = tmp_path_factory.mktemp("programs")
    cache: dict[str, Path] = {}

    def _build(source: Path | str, *flags: str, target: str = "smp") -> Path:
        src = Path(source)
        if not src.is_absolute():
            src = (PROGRAMS / src) if (PROGRAMS / src).exists() else SAMPLES / src
        all_flags = ["-O2", *SANITIZE, *flags, "-target", target]
        key = hashlib.sha1(f"{src}|{all_flags}".encode()).hexdigest()[:12]
        if key not in cache:
            prog = out / f"{src.stem}-{target}-{key}"
            proc = etcc(*all_flags, str(src), "-o", str(prog))
            assert proc.returncode == 0, f"etcc failed:\n{proc.stderr}"
            cache[key] = prog
        return cache[key]

    return _build


