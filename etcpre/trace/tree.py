"""etctrace tree: the activation tree of a run (who started whom, on which node),
the critical path highlighted, as Graphviz DOT or SVG (rendered by dot)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from etcpre.trace.analysis import longest
from etcpre.trace.model import Trace, TraceError

MAX_ACTIVATIONS = 2000
PALETTE = ["#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69",
           "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"]


@dataclass
class Activation:
    id: str
    function: str
    node: int
    parent: str | None
    children: list[str] = field(default_factory=list)
    threads: int = 0


def activations(trace: Trace) -> dict[str, Activation]:
    """Each activation (named by its thread 0's run) with its parent: the activation
    of the thread that started it."""
    by_id = {t.id: t for t in trace.threads}
    acts: dict[str, Activation] = {}
    for t in sorted(trace.threads, key=lambda t: t.ts):
        if t.activation == t.id:
            creator = by_id.get(t.deps[0]) if t.deps else None
            acts[t.id] = Activation(t.id, t.function, t.node,
                                    creator.activation if creator else None)
    for t in trace.threads:
        if t.activation in acts:
            acts[t.activation].threads += 1
    for a in acts.values():
        if a.parent is not None and a.parent in acts:
            acts[a.parent].children.append(a.id)
        else:
            a.parent = None
    return acts


def _depths(acts: dict[str, Activation]) -> dict[str, int]:
    depth: dict[str, int] = {}
    todo = [(a.id, 0) for a in acts.values() if a.parent is None]
    while todo:
        aid, d = todo.pop()
        depth[aid] = d
        todo.extend((c, d + 1) for c in acts[aid].children)
    return depth


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dot_text(trace: Trace, limit: int = MAX_ACTIVATIONS) -> str:
    acts = activations(trace)
    depth = _depths(acts)
    shown = set(acts)
    note = f"{len(acts)} activations on {trace.nodes} node(s)"
    if len(acts) > limit:
        per_level: dict[int, int] = {}
        for d in depth.values():
            per_level[d] = per_level.get(d, 0) + 1
        keep, total = -1, 0
        for d in sorted(per_level):
            if total + per_level[d] > limit:
                break
            keep, total = d, total + per_level[d]
        shown = {a for a, d in depth.items() if d <= keep}
        note += f"; over {limit}: drawn to depth {keep} ({len(shown)} of them)"
    _, chain = longest(trace, "threads")
    critical = {t.activation for t in chain}
    note += "; red: the critical path (the longest chain of threads)"
    lines = ["digraph activations {",
             f"  graph [rankdir=TB, labelloc=t, fontname=Helvetica, label={_quote(note)}];",
             "  node [shape=box, style=\"rounded,filled\", fontname=Helvetica, fontsize=10];",
             "  edge [color=\"#777777\"];"]
    for aid in sorted(shown, key=lambda a: (depth.get(a, 0), a)):
        a = acts[aid]
        colour = PALETTE[a.node % len(PALETTE)]
        extra = ", color=red, penwidth=3" if aid in critical else ""
        label = f"{a.function}\\nnode {a.node}"
        lines.append(f"  {_quote(aid)} [label=\"{label}\", fillcolor=\"{colour}\"{extra}];")
    for aid in shown:
        a = acts[aid]
        if a.parent is not None and a.parent in shown:
            extra = " [color=red, penwidth=3]" if aid in critical and a.parent in critical \
                else ""
            lines.append(f"  {_quote(a.parent)} -> {_quote(aid)}{extra};")
    lines.append("  subgraph cluster_legend { label=\"nodes\"; fontname=Helvetica;")
    shown_nodes = min(trace.nodes, len(PALETTE))
    for k in range(shown_nodes):
        lines.append(f"    legend{k} [label=\"node {k}\", fillcolor=\"{PALETTE[k]}\"];")
    if shown_nodes > 1:  # in node order
        lines.append("    " + " -> ".join(f"legend{k}" for k in range(shown_nodes)) +
                     " [style=invis];")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write(trace: Trace, out: Path, limit: int = MAX_ACTIVATIONS) -> None:
    suffix = out.suffix.lower()
    if suffix not in (".svg", ".dot", ".gv"):
        raise TraceError(f"{out}: the tree is written as .svg or .dot, not '{out.suffix}'")
    text = dot_text(trace, limit)
    if suffix != ".svg":
        try:
            out.write_text(text)
        except OSError as exc:
            raise TraceError(f"cannot write {out}: {exc.strerror or exc}") from None
        return
    dot = shutil.which("dot")
    if dot is None:
        raise TraceError("Graphviz's 'dot' is not installed: write the tree as .dot, or "
                         "install graphviz")
    proc = subprocess.run([dot, "-Tsvg", "-o", str(out)], input=text, text=True,
                          capture_output=True, check=False)
    if proc.returncode != 0:
        raise TraceError(f"dot failed: {proc.stderr.strip() or proc.returncode}")
