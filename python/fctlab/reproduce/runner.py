"""The generic reproduction runner and its report.

A paper is a :class:`Paper`: its scenario files and ``expected.toml`` (the published numbers,
see :mod:`.expected`) in ``scenarios/papers/<name>/``, and small item functions that run
scenarios and measure. :func:`run_paper` runs the selected items (an item that fails is
reported, the others still run), writes ``report.md``, ``report.html`` (one document model,
rendered by :mod:`fctlab.report.render`) and ``results.json``, and returns the results.
"""

from __future__ import annotations

import json
import math
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from ..report.render import Bullets, Heading, Image, Paragraph, Table, render_html, render_markdown
from .common import Runner


@dataclass
class Paper:
    """What a reproduction adds to the generic runner."""

    name: str
    #: item number -> function(runner, mode, out_dir) -> Item
    items: dict
    #: the order to run items in (most informative first)
    order: list
    #: run settings of the quick and the full mode (anything with a ``name``)
    quick_mode: Any
    full_mode: Any
    #: paragraphs after the report's title (Markdown inline markup allowed)
    intro: Callable[[Any], list] = lambda mode: []
    #: blocks at the end of the report (settings of the modes, workload notes)
    footer: Callable[[], list] = lambda: []
    required_files: tuple = field(default_factory=tuple)


def _clean(x):
    """Numbers as JSON can hold them (non-finite -> null, numpy scalars -> Python)."""
    import numpy as np

    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return None if not math.isfinite(float(x)) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    return x


def report_blocks(intro: list, items: list, footer: list, out: Path) -> list:
    """The report as a document: intro, a summary table, one section per item, the footer."""
    blocks: list = [Paragraph(p) for p in intro]
    blocks.append(Heading("Summary"))
    summary = []
    for it in items:
        wall = f"{it.wall_s:.1f} s" if it.status == "done" else "-"
        verdict = it.summary_verdict if it.status == "done" else f"{it.status}: {it.reason}"
        summary.append([f"{it.number}. {it.title}", it.source, verdict, wall])
    blocks.append(Table(["item", "paper source", "verdict", "wall time"], summary, text=True))
    for it in items:
        blocks += [Heading(f"Item {it.number}: {it.title}"), Paragraph(f"*Paper source:* {it.source}"),
                   Paragraph(f"**What the paper did.** {it.paper_did}"), Paragraph(f"**fctlab setup.** {it.setup}")]
        if it.status != "done":
            blocks.append(Paragraph(f"**Status: {it.status}** ({it.reason}). No fctlab numbers are reported for this item."))
            continue
        blocks.append(Table(["quantity", "paper", "fctlab", "verdict"], [[r.quantity, r.paper, r.fctlab, r.verdict] for r in it.rows], text=True))
        for fname, caption in it.figures:
            blocks += [Image(fname, (out / fname).read_bytes(), caption), Paragraph(f"*{caption}*")]
        if it.explanation:
            blocks += [Paragraph("**Differences and explanation.**"), Bullets(list(it.explanation))]
    return blocks + list(footer)


def run_paper(paper: Paper, items: list, quick: bool, out: Path, scenario_dir: Path, log: Callable[[str], None],
              budget_s: Optional[float] = None) -> dict:
    """Runs the selected items of `paper`, writes the report and returns the results."""
    import fctlab

    mode = paper.quick_mode if quick else paper.full_mode
    out.mkdir(parents=True, exist_ok=True)
    rn = Runner(scenario_dir, out, log)
    ex = rn.expected
    t_start = time.perf_counter()
    done: dict = {}
    order = [n for n in paper.order if n in items]
    log(f"fctlab reproduce {paper.name}: {mode.name} run of items {', '.join(map(str, order))} -> {out}")
    for k, n in enumerate(order):
        elapsed = time.perf_counter() - t_start
        if budget_s is not None and elapsed > budget_s:
            log(f"[{k + 1}/{len(order)}] item {n}: not run (time budget of {budget_s:.0f} s used up)")
            done[n] = rn.placeholder(n, f"not run: the time budget of {budget_s:.0f} s was used up before it started")
            continue
        log(f"[{k + 1}/{len(order)}] item {n}: {ex.items[n]['title']}")
        t0 = time.perf_counter()
        try:
            it = paper.items[n](rn, mode, out)
            it.status = "done"
        except Exception as e:  # an item that fails is reported, the others still run
            log(traceback.format_exc().rstrip())
            it = rn.placeholder(n, f"failed: {type(e).__name__}: {e}")
        it.wall_s = time.perf_counter() - t0
        log(f"    item {n}: {it.summary_verdict} ({it.wall_s:.1f} s)")
        done[n] = it
    for n in sorted(paper.items):
        if n not in done:
            done[n] = rn.placeholder(n, "not selected (--items)")
    total = time.perf_counter() - t_start
    ordered = [done[n] for n in sorted(paper.items)]

    title = f"Reproduction of the {ex.paper.get('title', paper.name)} paper with fctlab"
    intro = [
        f"Run: `fctlab reproduce {paper.name}{' --quick' if quick else ''}` ({mode.name} mode), fctlab "
        f"{fctlab.__version__}, {rn.runs} simulations, {total:.0f} s wall-clock time in total.",
        f"The paper: {ex.paper.get('summary', '')} Its numbers, their sources in the paper and the rules "
        f"that grade fctlab's against them are in `scenarios/papers/{paper.name}/expected.toml`.",
    ] + list(paper.intro(mode))
    blocks = report_blocks(intro, ordered, paper.footer(), out)
    (out / "report.md").write_text(render_markdown(title, blocks))
    (out / "report.html").write_text(render_html(title, blocks))
    result = {
        "paper": paper.name,
        "mode": mode.name,
        "wall_s": total,
        "simulations": rn.runs,
        "items": {
            str(it.number): {
                "title": it.title,
                "status": it.status,
                "reason": it.reason,
                "verdict": it.summary_verdict,
                "wall_s": it.wall_s,
                "rows": [r.__dict__ for r in it.rows],
                "numbers": _clean(it.numbers),
                "figures": [f for f, _ in it.figures],
            }
            for it in ordered
        },
    }
    (out / "results.json").write_text(json.dumps(result, indent=1, sort_keys=True))
    log(f"fctlab reproduce {paper.name}: wrote {out / 'report.md'} and report.html ({total:.0f} s, {rn.runs} simulations)")
    return result
