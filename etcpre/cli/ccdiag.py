"""cc's diagnostics on generated C, put back on the .tc file.

`#line` gives cc the .tc line of every generated line, but not the column: rewritten
code is longer than the source, so cc's column (and its caret under the .tc line it
shows) would land past the end of the line or on the wrong token. etcc therefore asks
cc for diagnostics without carets, maps each column through the translation's source
map, and prints the .tc line with a caret itself. It also says a generated thread
function's name (`_fib_1`) as the thread it is.
"""

from __future__ import annotations

import functools
import re
import subprocess
from typing import TYPE_CHECKING

from etcpre.diagnostics import caret_lines

if TYPE_CHECKING:
    from etcpre.translate import Translation

_ANSI = re.compile(r"\x1b\[[0-9;]*[mK]")
_LOCATED = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<rest>.*)$")
_IN_FUNCTION = re.compile(r"^(?P<head>.*: In function )(?P<q1>['‘`])(?P<name>\w+)(?P<q2>['’])"
                          r"(?P<tail>:?)$")


@functools.lru_cache(maxsize=8)
def caret_flags(cc: tuple[str, ...]) -> tuple[str, ...]:
    """The flags that make `cc` print diagnostics without caret lines, with byte
    columns (etcc prints the carets)."""
    try:
        version = subprocess.run([*cc, "--version"], capture_output=True, text=True,
                                 timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    if "clang" in version:
        return ("-fno-caret-diagnostics", "-fno-color-diagnostics")
    if "GCC" in version or "gcc" in version or "Free Software Foundation" in version:
        flags = ["-fno-diagnostics-show-caret", "-fdiagnostics-color=never"]
        m = re.search(r"(\d+)\.\d+", version)
        if m is not None and int(m.group(1)) >= 11:
            flags.append("-fdiagnostics-column-unit=byte")  # not display columns
        return tuple(flags)
    return ()


def remap(output: str, translation: Translation) -> str:
    """cc's diagnostics on `translation`'s C, with .tc columns and carets."""
    source = translation.source_map.working.source
    out = []
    for raw in _ANSI.sub("", output).splitlines():
        m = _LOCATED.match(raw)
        if m is not None and m.group("file") == source.name:
            line, col = int(m.group("line")), int(m.group("col"))
            where = translation.source_map.locate(line, col)
            if where is not None:
                line, col = where
            out.append(f"{source.name}:{line}:{col}: {m.group('rest')}")
            out.extend(caret_lines(source, line, col))
            continue
        m = _IN_FUNCTION.match(raw)
        if m is not None and m.group("name") in translation.threads:
            out.append(f"{m.group('head').replace(' In function ', ' In ')}"
                       f"{translation.threads[m.group('name')]}{m.group('tail')}")
            continue
        out.append(raw)
    return "".join(line + "\n" for line in out)
