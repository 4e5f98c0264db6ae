"""The generic reproduction runner and its report.

A paper is a :class:`Paper`: its scenario files and ``expected.toml`` (the published numbers,
see :mod:`.expected`) in ``scenarios/papers/<name>/``, and small item functions that run
scenarios and measure. :func:`run_paper` runs the selected items (an item that fails is
reported, the others still run), under each of the paper's TCP profiles (the first is the
primary setting; the report sets each profile's numbers in its own column), writes ``report.md``, ``report.html`` (one document model,
rendered by :mod:`fctlab.report.render`) and ``results.json``, and returns the results.
"""

from __future__ import annotations

import concurrent.futures as cf
import copy
import importlib
import json
import multiprocessing as mp
import shutil
import math
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

import fctlab

from ..crosscheck.ns2 import find_ns
from ..report.render import Bullets, Heading, Image, Paragraph, Table, render_html, render_markdown
from ..sweeps import _executor
from .common import Ns2Runner, Runner, stderr_log
from .expected import set_ns2
from .verdicts import RULES_TEXT


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
    #: the settings every run is made under: (name, scenario overrides, description); the first
    #: is the primary one. Empty: the scenario files as they are.
    profiles: tuple = field(default_factory=tuple)
    #: items that are measured again with ns-2.35 (:func:`ns2_pass`), and the profile whose
    #: settings they are run under there (None: the scenario files as they are)
    ns2_items: tuple = field(default_factory=tuple)
    ns2_profile: Optional[str] = None
    #: for a row id, why the row has no ns-2.35 measurement ("" when it has one)
    ns2_missing: Callable[[str], str] = lambda rid: ""
    #: overrides under which the ns-2.35 pass runs both simulators (when the primary setting
    #: is one ns-2.35 cannot run), and what they are, for the report
    ns2_settings: dict = field(default_factory=dict)
    ns2_settings_note: str = ""
    #: items that time real traffic (the namespace testbed, real sockets): a parallel run runs
    #: them after the others, one at a time, so that no simulation competes for the CPUs
    real_time_items: tuple = field(default_factory=tuple)
    #: items run once on the scenario files' own settings instead of under each profile (items
    #: on the real kernel, whose TCP is its own whatever profile the simulator takes)
    unprofiled_items: tuple = field(default_factory=tuple)


def _clean(x):
    """Numbers as JSON can hold them (non-finite -> null, numpy scalars -> Python)."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return None if not math.isfinite(float(x)) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    return x


def _verdict_line(it) -> str:
    if it.status != "done":
        return f"{it.status}: {it.reason}"
    if it.profiles:
        return "; ".join(f"{p}: {sub.summary_verdict}" for p, sub in it.profiles.items())
    return it.summary_verdict


NS2_COLUMNS = ["ns-2.35", "ns-2.35 agrees with"]


def _ns2_cells(r) -> list:
    return [r.ns2 or "-", r.ns2_agrees or "-"] if r is not None else ["-", "-"]


def _rows_table(it) -> Table:
    """The item's rows: the paper's number, ns-2.35's when the item was measured with it, and
    one fctlab column and verdict per profile."""
    subs = it.profiles or {None: it}
    with_ns2 = any(r.ns2 for sub in subs.values() for r in sub.rows)
    if not it.profiles:
        header = ["quantity", "paper"] + (NS2_COLUMNS if with_ns2 else []) + ["fctlab", "verdict"]
        return Table(
            header,
            [[r.quantity, r.paper] + (_ns2_cells(r) if with_ns2 else []) + [r.fctlab, r.verdict] for r in it.rows],
            text=True,
        )
    names = list(it.profiles)
    by = {p: {r.quantity: r for r in sub.rows} for p, sub in it.profiles.items()}
    quantities = list(dict.fromkeys(r.quantity for sub in it.profiles.values() for r in sub.rows))
    header = ["quantity", "paper"] + (NS2_COLUMNS if with_ns2 else [])
    for p in names:
        header += [f"fctlab, {p}", f"verdict, {p}"]
    rows = []
    for q in quantities:
        first = next(by[p][q] for p in names if q in by[p])
        line = [q, first.paper]
        if with_ns2:
            line += _ns2_cells(next((by[p][q] for p in names if q in by[p] and by[p][q].ns2), None))
        for p in names:
            r = by[p].get(q)
            line += [r.fctlab, r.verdict] if r else ["-", "-"]
        rows.append(line)
    return Table(header, rows, text=True)


def ns2_pass(paper: Paper, n: int, rn: Runner, mode, it, log: Callable[[str], None], scratch: Path) -> None:
    """Item `n` measured again with ns-2.35 on the same flows (:class:`Ns2Runner`): each of
    `it`'s rows gets ns-2's value, its verdict against the paper and whom it agrees with (the
    paper, fctlab, both or neither, each by the row's own rule). Rows ns-2.35 cannot measure
    say why; without ``ns`` on the machine every row says so."""
    if find_ns() is None:
        for r in it.rows:
            r.ns2 = "not run: ns-2.35's `ns` is not installed"
        it.explanation.append("ns-2.35 was not run: its `ns` is not installed here (Debian: apt-get install ns2).")
        return
    nr = Ns2Runner(rn, paper.ns2_settings)
    log(f"    item {n}: the same runs in ns-2.35")
    t0 = time.perf_counter()
    try:
        twin = paper.items[n](nr, mode, scratch)
    except Exception as e:  # the fctlab rows stand; the ns-2 column says why it is empty
        log(traceback.format_exc().rstrip())
        for r in it.rows:
            r.ns2 = f"failed: {type(e).__name__}: {e}"
        return
    finally:
        rn.runs += nr.runs
        rn.wall_s += nr.wall_s
    by_rid = {r.rid: r for r in twin.rows if r.rid}
    by_q = {r.quantity: r for r in twin.rows}
    ex = rn.expected
    for r in it.rows:
        if r.rid and ex[r.rid].rule == "not_measured":
            r.ns2 = "-"
            continue
        why = paper.ns2_missing(r.rid) if r.rid else ""
        t = by_rid.get(r.rid) if r.rid else by_q.get(r.quantity)
        if why or t is None:
            r.ns2 = why or "not measured in ns-2.35"
            continue
        set_ns2(ex, r, t)
    it.explanation += [b for b in twin.explanation if b.startswith("ns-2.35")]
    if paper.ns2_settings_note:
        it.explanation.append("ns-2.35 column: " + paper.ns2_settings_note)
    if nr.stand_ins:
        names = sorted(p if p.endswith("scheduling") else p.upper() for p in nr.stand_ins)
        it.explanation.append(
            "ns-2.35 column: "
            + ", ".join(names)
            + (" is" if len(names) == 1 else " are")
            + " not in ns-2.35, so rows that "
            + (
                "set it beside TCP compare ns-2.35's TCP runs with fctlab's runs of it; rows about it alone say so."
                if len(names) == 1
                else "set one of them beside TCP compare ns-2.35's TCP runs with fctlab's runs of it; rows "
                "about them alone say so."
            )
        )
    it.explanation.append(
        f"ns-2.35 column: the item's runs of the protocols ns-2.35 has (TCP, and ATCP as increase_num_) made again in "
        f"ns-2.35 on the identical flow lists ({nr.runs} runs, {time.perf_counter() - t0:.0f} s; scripts and results under `ns2-runs/`). "
        "'agrees with' applies each row's own rule: the paper's number against ns-2's as against fctlab's, and ns-2's "
        "value against fctlab's within the row's tolerance widened by both 95% intervals."
    )


def _explanations(it) -> list:
    """The item's explanation bullets; with profiles, a bullet that differs between them is
    prefixed with its profile's name."""
    if not it.profiles:
        return list(it.explanation)
    subs = list(it.profiles.items())
    common = set.intersection(*(set(sub.explanation) for _, sub in subs))
    out = [b for b in subs[0][1].explanation if b in common]
    for p, sub in subs:
        out += [f"*{p}:* {b}" for b in sub.explanation if b not in common]
    return out


def merge_profiles(profiles: dict):
    """One item from its runs under several profiles (the first is the primary one)."""
    first = next(iter(profiles.values()))
    done = [sub for sub in profiles.values() if sub.status == "done"]
    merged = copy.copy(first if first.status == "done" or not done else done[0])
    merged.profiles = dict(profiles)
    merged.status = "done" if done else first.status
    merged.figures = [f for sub in profiles.values() for f in sub.figures]
    merged.wall_s = sum(sub.wall_s for sub in profiles.values())
    merged.scenario_files = sorted({f for sub in profiles.values() for f in sub.scenario_files})
    return merged


def report_blocks(intro: list, items: list, footer: list, out: Path) -> list:
    """The report as a document: intro, a summary table, one section per item, the footer."""
    blocks: list = [Paragraph(p) for p in intro]
    blocks.append(Heading("Summary"))
    summary = []
    for it in items:
        wall = f"{it.wall_s:.1f} s" if it.status == "done" else "-"
        summary.append([f"{it.number}. {it.title}", it.source, _verdict_line(it), wall])
    blocks.append(Table(["item", "paper source", "verdict", "wall time"], summary, text=True))
    for it in items:
        blocks += [
            Heading(f"Item {it.number}: {it.title}"),
            Paragraph(f"*Paper source:* {it.source}"),
            Paragraph(f"**What the paper did.** {it.paper_did}"),
            Paragraph(f"**fctlab setup.** {it.setup}"),
        ]
        if it.status != "done":
            blocks.append(
                Paragraph(f"**Status: {it.status}** ({it.reason}). No fctlab numbers are reported for this item.")
            )
            continue
        for p, sub in it.profiles.items():
            if sub.status != "done":
                blocks.append(Paragraph(f"**{p}: {sub.status}** ({sub.reason})."))
        blocks.append(_rows_table(it))
        for fname, caption in it.figures:
            blocks += [Image(fname, (out / fname).read_bytes(), caption), Paragraph(f"*{caption}*")]
        bullets = _explanations(it)
        if bullets:
            blocks += [Paragraph("**Differences and explanation.**"), Bullets(bullets)]
    return blocks + list(footer)


def _profile_figure(out: Path, fname: str, caption: str, profile: str, made_in: Optional[Path] = None) -> tuple:
    """Renames an item's figure after the profile it was made under (moving it from `made_in`,
    where the item drew it, into `out`)."""
    p = Path(fname)
    new = f"{p.stem}_{profile}{p.suffix}"
    ((made_in or out) / fname).replace(out / new)
    return new, f"{caption} ({profile} profile)"


def _profiles(paper: Paper) -> tuple:
    return paper.profiles or ((None, {}, ""),)


def _profile_numbers(paper: Paper, n: int) -> range:
    """The profiles item `n` runs under, by number (one run for an unprofiled item)."""
    return range(1 if n in paper.unprofiled_items else len(_profiles(paper)))


def _merged(paper: Paper, n: int, runs: dict):
    """Item `n` from its runs by profile name."""
    return merge_profiles(runs) if paper.profiles and n not in paper.unprofiled_items else runs[None]


def _run_item(
    paper: Paper,
    n: int,
    profile: int,
    rn: Runner,
    mode,
    out: Path,
    log: Callable[[str], None],
    scratch: Optional[Path] = None,
):
    """Item `n` under the paper's profile number `profile`: (profile name, Item). With
    `scratch`, the item draws its figures there (items running in parallel under different
    profiles name their figures alike) and they are moved into `out`."""
    name, overrides, _ = (None, {}, "") if n in paper.unprofiled_items else _profiles(paper)[profile]
    rn.overrides = dict(overrides)
    rn.label = f"[{name}] " if name else ""
    rn.profile = name
    t0 = time.perf_counter()
    rn.used = set()
    draw = scratch or out
    draw.mkdir(parents=True, exist_ok=True)
    try:
        it = paper.items[n](rn, mode, draw)
        if not it.reason:  # an item that could not run here returns a placeholder saying why
            it.status = "done"
    except Exception as e:  # an item that fails is reported, the others still run
        log(traceback.format_exc().rstrip())
        it = rn.placeholder(n, f"failed: {type(e).__name__}: {e}")
    if it.status == "done" and n in paper.ns2_items and name == paper.ns2_profile:
        twin_dir = draw / f".ns2-item{n}"
        twin_dir.mkdir(parents=True, exist_ok=True)
        ns2_pass(paper, n, rn, mode, it, log, twin_dir)
        shutil.rmtree(twin_dir, ignore_errors=True)
    it.wall_s = time.perf_counter() - t0
    it.scenario_files = sorted(rn.used)
    if name:
        it.figures = [_profile_figure(out, f, c, name, made_in=draw) for f, c in it.figures]
    elif scratch is not None:
        for f, _ in it.figures:
            (scratch / f).replace(out / f)
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)
    log(f"    item {n}{' under ' + name if name else ''}: {it.summary_verdict} ({it.wall_s:.1f} s)")
    return name, it


def _item_task(paper_name: str, n: int, profile: int, quick: bool, out: str, scenario_dir: str):
    """One (item, profile) in a worker process or on a Dask worker: (name, Item, simulations,
    their wall time)."""
    paper = importlib.import_module(f"fctlab.reproduce.{paper_name}").paper()
    rn = Runner(Path(scenario_dir), Path(out), stderr_log)
    mode = paper.quick_mode if quick else paper.full_mode
    name, it = _run_item(paper, n, profile, rn, mode, Path(out), stderr_log, scratch=Path(out) / f".item{n}-{profile}")
    return name, it, rn.runs, rn.wall_s


def run_paper(
    paper: Paper,
    items: list,
    quick: bool,
    out: Path,
    scenario_dir: Path,
    log: Callable[[str], None],
    budget_s: Optional[float] = None,
    workers: Optional[int] = None,
    cluster: Optional[str] = None,
) -> dict:
    """Runs the selected items of `paper`, writes the report and returns the results. With
    `workers` above 1 or a Dask `cluster`, the items (under each profile) run in parallel,
    each in its own process (the budget then does not apply)."""
    mode = paper.quick_mode if quick else paper.full_mode
    out.mkdir(parents=True, exist_ok=True)
    rn = Runner(scenario_dir, out, log)
    ex = rn.expected
    t_start = time.perf_counter()
    done: dict = {}
    order = [n for n in paper.order if n in items]
    log(f"fctlab reproduce {paper.name}: {mode.name} run of items {', '.join(map(str, order))} -> {out}")
    if (workers or 1) > 1 or cluster:
        done = _run_items_in_parallel(paper, order, quick, out, scenario_dir, rn, workers, cluster)
    for k, n in enumerate(order if not done else []):
        elapsed = time.perf_counter() - t_start
        if budget_s is not None and elapsed > budget_s:
            log(f"[{k + 1}/{len(order)}] item {n}: not run (time budget of {budget_s:.0f} s used up)")
            done[n] = rn.placeholder(n, f"not run: the time budget of {budget_s:.0f} s was used up before it started")
            continue
        log(f"[{k + 1}/{len(order)}] item {n}: {ex.items[n]['title']}")
        runs = dict(_run_item(paper, n, pi, rn, mode, out, log) for pi in _profile_numbers(paper, n))
        done[n] = _merged(paper, n, runs)
    for n in sorted(paper.items):
        if n not in done:
            done[n] = rn.placeholder(n, "not selected (--items)")
    total = time.perf_counter() - t_start
    ordered = [done[n] for n in sorted(paper.items)]
    result = _write_paper_report(paper, mode, quick, out, rn, ordered, total)
    log(
        f"fctlab reproduce {paper.name}: wrote {out / 'report.md'} and report.html ({total:.0f} s, {rn.runs} simulations)"
    )
    return result


def _run_items_in_parallel(
    paper: Paper,
    order: list,
    quick: bool,
    out: Path,
    scenario_dir: Path,
    rn: "Runner",
    workers: Optional[int],
    cluster: Optional[str],
) -> dict:
    """Each item under each profile in a process of its own (fresh processes, or a Dask
    cluster's workers): the items by number, their profiles merged. Counts the runs in `rn`."""
    if cluster:
        pool, client = _executor(workers, cluster)
    else:  # a pool of fresh processes, one item each
        pool, client = (
            cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), max_tasks_per_child=1),
            None,
        )
    got: dict = {n: {} for n in order}

    def submit(n: int, pi: int):
        return pool.submit(_item_task, paper.name, n, pi, quick, str(out.resolve()), str(Path(scenario_dir).resolve()))

    def collect(futs: dict) -> None:
        for f in cf.as_completed(futs):
            n, pi = futs[f]
            name, it, sims, wall = f.result()
            rn.runs += sims
            rn.wall_s += wall
            got[n][pi] = (name, it)

    try:
        collect(
            {
                submit(n, pi): (n, pi)
                for n in order
                if n not in paper.real_time_items
                for pi in _profile_numbers(paper, n)
            }
        )
        for n in (n for n in order if n in paper.real_time_items):  # alone, one after another
            for pi in _profile_numbers(paper, n):
                collect({submit(n, pi): (n, pi)})
    finally:
        if client is not None:
            client.close()
        else:
            pool.shutdown(wait=True)
    done = {}
    for n in order:
        runs = dict(got[n][pi] for pi in sorted(got[n]))
        done[n] = _merged(paper, n, runs)
    return done


def _write_paper_report(paper: Paper, mode, quick: bool, out: Path, rn: "Runner", ordered: list, total: float) -> dict:
    """report.md, report.html and results.json of a reproduction; returns the results."""
    ex = rn.expected
    title = f"Reproduction of the {ex.paper.get('title', paper.name)} paper with fctlab"
    intro = [
        f"Run: `fctlab reproduce {paper.name}{' --quick' if quick else ''}` ({mode.name} mode), fctlab "
        f"{fctlab.__version__}, {rn.runs} simulations, {total:.0f} s wall-clock time in total.",
        f"The paper: {ex.paper.get('summary', '')} Its numbers, their sources in the paper and the rules "
        f"that grade fctlab's against them are in `scenarios/papers/{paper.name}/expected.toml`.",
        "**How rows are graded.** " + RULES_TEXT + " The rules and every row's tolerance with its reason: "
        "docs/reproduce.md and the paper's expected.toml.",
    ] + list(paper.intro(mode))
    if paper.profiles:
        unprofiled = sorted(n for n in paper.unprofiled_items if n in paper.items)
        intro.append(
            "Every item "
            + (
                f"except items {', '.join(map(str, unprofiled))} (run once, on their scenario files' own settings) "
                if unprofiled
                else ""
            )
            + "runs under "
            + "; ".join(f"**{p}**: {d}" for p, _, d in paper.profiles)
            + f". The first ({paper.profiles[0][0]}) is the primary setting; each has its own fctlab and verdict columns."
        )
    blocks = report_blocks(intro, ordered, paper.footer(), out)
    (out / "report.md").write_text(render_markdown(title, blocks))
    (out / "report.html").write_text(render_html(title, blocks))
    result = {
        "paper": paper.name,
        "mode": mode.name,
        "wall_s": total,
        "simulations": rn.runs,
        "items": {str(it.number): _item_result(it) for it in ordered},
    }
    (out / "results.json").write_text(json.dumps(result, indent=1, sort_keys=True))
    return result


def _item_result(it) -> dict:
    """One item of results.json."""
    return {
        "title": it.title,
        "status": it.status,
        "reason": it.reason,
        "verdict": it.summary_verdict,
        "wall_s": it.wall_s,
        "rows": [_clean(r.__dict__) for r in it.rows],
        "numbers": _clean(it.numbers),
        "figures": [f for f, _ in it.figures],
        "scenario_files": list(it.scenario_files),
        "profiles": {
            p: {
                "status": sub.status,
                "reason": sub.reason,
                "verdict": sub.summary_verdict,
                "rows": [_clean(r.__dict__) for r in sub.rows],
                "numbers": _clean(sub.numbers),
            }
            for p, sub in it.profiles.items()
        },
    }
