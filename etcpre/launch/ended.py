"""How a node or an MPI launcher ended, in the words of etcrun's messages, for every
launcher (`etc: error: node K: killed by SIGKILL`)."""

from __future__ import annotations

import signal


def signal_name(num: int) -> str:
    """SIGKILL for 9; `signal N` for a number Python does not name."""
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"
