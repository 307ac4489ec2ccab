"""What the translator needs to know besides the file: the C preprocessor's view of it.

A module of its own, below the passes, so that every pass and both commands (etcpre,
etcc) can use it without importing the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Options:
    """-D/-U/-I as given on the command line, and the target compiler's own header
    directories, so that the translator sees the file as the C compiler will (cc
    applies -D and -U in command-line order)."""

    macros: tuple[str, ...] = ()  # "-DNAME", "-DNAME=VALUE" or "-UNAME", in order
    include_dirs: tuple[str, ...] = ()
    # what the target's compiler searches besides a plain cc (mpicc: MPI's headers),
    # as system headers (-isystem: after the -I directories)
    system_dirs: tuple[str, ...] = ()

    @classmethod
    def of(cls, defines: list[str] | None = None, undefines: list[str] | None = None,
           include_dirs: list[str] | None = None) -> Options:
        """Options from separate lists (defines first, then undefines)."""
        macros = [f"-D{d}" for d in defines or []] + [f"-U{u}" for u in undefines or []]
        return cls(tuple(macros), tuple(include_dirs or []))

    def cpp_args(self) -> list[str]:
        return [*self.macros, *(f"-I{d}" for d in self.include_dirs),
                *(a for d in self.system_dirs for a in ("-isystem", d))]
