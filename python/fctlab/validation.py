"""The validation matrix: every protocol fctlab ships, against every reference it is held to
(docs/validation.md).

    fctlab validation --record OUT --against TARGET   store a finished crosscheck suite's outcome
    fctlab validation --docs [--check]                render docs/validation.md

A crosscheck suite is the set-ups of ``scenarios/crosscheck/<target>/`` run by ``fctlab
crosscheck scenarios/crosscheck/<target> --against <target> --out OUT``. ``--record OUT``
stores its outcome in ``docs/results/validation/<target>.json``: per set-up the scenario file
and its hash, the protocols its flows run, the seeds, every graded figure with its ratio and
verdict, the worst ratio and the notes; and what made it (commit, date, the crosscheck's
command, the other simulator's name, the hash of every golden output of fctlab).

``--docs`` renders docs/validation.md from those records, from the papers' stored results
(docs/results/<paper>.json, graded again as the reproduction docs are) and from the analytic
models' stored items: one row per protocol of ``fctlab._core.protocols()``. ``--check``
renders without writing and fails when the doc differs from its rendering or a recorded suite
is stale: one of its scenario files, or a golden output, changed since it was recorded, or a
set-up of the suite's directory is not in it.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import json
import math
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Optional

import fctlab

from . import _core, crosscheck
from .numfmt import seconds
from .reproduce import PAPERS, stored
from .reproduce.verdicts import DIRECTION, INCONCLUSIVE, MATCH, NO_MATCH

ROOT = stored.ROOT
DOC = "docs/validation.md"

#: The columns held against another simulator or the kernel, in the matrix's order: the
#: crosscheck target (the suite's directory under scenarios/crosscheck) and the heading.
SUITE_COLUMNS = (("ns2", "ns-2.35"), ("htsim", "htsim"), ("ns3", "ns-3"), ("testbed", "kernel (testbed)"))
MODEL, PAPER = "model", "paper"

#: Protocols as papers name them (for the reasons below).
_NAMES = {
    "tcp": "TCP",
    "cubic": "CUBIC",
    "dctcp": "DCTCP",
    "d2tcp": "D2TCP",
    "atcp": "ATCP",
    "rcp": "RCP",
    "racs": "RACS",
    "d3": "D3",
    "sdc": "SDC",
    "pfabric": "pFabric",
    "pias": "PIAS",
    "homa": "Homa",
    "roce": "RoCE",
    "dcqcn": "DCQCN",
    "timely": "TIMELY",
    "hpcc": "HPCC",
    "swift": "Swift",
    "ndp": "NDP",
    "eqds": "EQDS",
    "nscc": "NSCC",
}

#: Why a cell holds no result: (column, protocol) -> the reason, in a few words. The column is
#: a crosscheck target, MODEL or PAPER; the fallbacks below apply to every other empty cell.
REASONS = {
    ("ns2", "cubic"): "not translated (ns-2.35 has CUBIC in TCP-Linux)",
    ("ns2", "dctcp"): "ns-2.35 has no DCTCP",
    ("ns2", "d2tcp"): "ns-2.35 has no D2TCP",
    ("ns2", "rcp"): "ns-2.35 has no RCP",
    ("ns2", "racs"): "ns-2.35 has no RACS",
    ("ns2", "d3"): "ns-2.35 has no D3",
    ("ns2", "sdc"): "ns-2.35 has no SDC",
    ("ns2", "pfabric"): "ns-2.35 has no pFabric",
    ("ns2", "pias"): "ns-2.35 has no PIAS",
    ("ns2", "homa"): "ns-2.35 has no Homa",
    **{
        ("ns2", p): f"ns-2.35 has no {_NAMES[p]}"
        for p in ("roce", "dcqcn", "timely", "hpcc", "swift", "ndp", "eqds", "nscc")
    },
    **{
        ("htsim", p): f"htsim has no {name}"
        for p, name in _NAMES.items()
        if p not in ("tcp", "dctcp", "roce", "hpcc", "swift", "ndp", "eqds", "nscc")
    },
    ("htsim", "dcqcn"): "refused: uet-htsim's DCQCNSrc multiplies its own events, so no run ends",
    ("htsim", "timely"): "htsim has no TIMELY (neither csg-htsim nor uet-htsim)",
    **{("ns3", p): f"ns-3.44 has no {name}" for p, name in _NAMES.items() if p not in ("tcp", "cubic", "dctcp")},
    ("testbed", "d2tcp"): "not built for the kernel (no BPF D2TCP)",
    ("testbed", "d3"): "not built for the kernel (D3's switch rate allocation has no BPF port program)",
    ("testbed", "pfabric"): "no Linux qdisc sends the least-remaining packet first",
    ("testbed", "homa"): "the kernel here has no Homa transport",
    ("testbed", "ndp"): "the kernel here has no NDP transport",
    ("testbed", "eqds"): "the kernel here has no EQDS transport",
    ("testbed", "nscc"): "the kernel here has no Ultra Ethernet transport",
    **{
        ("testbed", p): "the testbed runs TCP; no RDMA NIC or soft-RoCE here"
        for p in ("roce", "dcqcn", "timely", "hpcc", "swift")
    },
    (MODEL, "homa"): "fctlab.models.homa sets priorities; it predicts no FCT",
    (MODEL, "pias"): "fctlab.models.pias derives demotion thresholds; it predicts no FCT",
}
#: A suite target without a record in docs/results/validation.
NOT_RUN = "not run yet"
#: A recorded suite none of whose set-ups runs the protocol.
NO_SETUP = "no set-up runs it yet"
#: A protocol outside a target's PROTOCOLS that REASONS does not name (a protocol added since).
UNSUPPORTED = "{producer}: not translated"
#: A protocol without an analytic model held against stored runs.
NO_MODEL = "no analytic model in fctlab.models"
#: A protocol no stored paper row measures.
NO_PAPER_ROW = "no paper reproduction runs it"

#: The analytic models of fctlab.models and the stored reproduction items that hold the
#: simulator against them: protocol -> (model, what it predicts, [(paper, item)], tests).
MODELS = {
    "atcp": (
        "fctlab.models.atcp",
        "Theorem 1's window and throughput ratios of weighted flows; Theorem 2's completion times",
        [("atcp", 1), ("atcp", 2), ("atcp", 17)],
        ["tests/python/test_models.py"],
    ),
    "sdc": (
        "fctlab.models.aimd",
        "the AIMD model's throughput per class (eq. 3.12) and application throughput (eq. 3.15)",
        [("thesis", 14), ("thesis", 15)],
        ["tests/python/test_models_aimd.py"],
    ),
    "tcp": (
        "fctlab.models.sched",
        "the fluid PS, SRPT, LAS and FSP orderings of flow scheduling over TCP",
        [("schedtcp", 5)],
        ["tests/python/test_models_sched.py"],
    ),
}

#: Phrases the papers' rows use for a protocol besides its names (matched before the names, so
#: that "weighted TCP" counts for ATCP and not for TCP).
PHRASES = {"atcp": ("weighted tcp", "w_h")}
#: The protocols a paper is about, for its rows and items that name none.
PAPER_PROTOCOLS = {
    "atcp": ("atcp",),
    "thesis": ("sdc", "racs", "rcp"),
    "schedtcp": ("tcp",),
    "pfabric": ("pfabric",),
    "pias": ("pias",),
    "homa": ("homa",),
    "d3": ("d3",),
    "d2tcp": ("d2tcp",),
    "hpcc": ("hpcc",),
    "ndp": ("ndp",),
}
GRADED = (MATCH, DIRECTION, INCONCLUSIVE, NO_MATCH)


class ValidationError(ValueError):
    """A suite output or record that cannot be read or written; names the file."""


# --------------------------------------------------------------------------- recording


def record_path(target: str, root: Path = ROOT) -> Path:
    return stored.results_dir(root) / "validation" / f"{target}.json"


def suite_dir(target: str, root: Path = ROOT) -> Path:
    return root / "scenarios" / "crosscheck" / target


def golden_behaviour(root: Path = ROOT) -> dict:
    """The hash of every golden output of fctlab (tests/golden, the error messages aside)."""
    golden = root / "tests" / "golden"
    return {
        str(f.relative_to(root)): stored._digest(f.read_bytes())
        for f in sorted(golden.rglob("*"))
        if f.is_file() and f.name != "errors.txt"
    }


def _read_json(p: Path) -> dict:
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ValidationError(f"{p}: {e}") from None


def _protocols(setup_out: Path, seeds: list) -> list:
    """The protocols of the flows fctlab ran, over every seed (the flows tables' column)."""
    import pyarrow.parquet as pq  # lazy: pyarrow costs 80 ms of start-up

    found = set()
    for s in seeds:
        f = setup_out / f"seed-{s}" / "fctlab" / "flows.parquet"
        if not f.is_file():
            raise ValidationError(f"{f}: missing (the suite's runs are incomplete)")
        found.update(pq.read_table(f, columns=["protocol"]).column("protocol").to_pylist())
    return sorted(p for p in found if p)


def worst_ratio(figures: list) -> Optional[float]:
    """The graded ratio furthest from 1 (either way), None without graded figures."""
    rs = [f["ratio"] for f in figures if f.get("ratio") is not None]
    if not rs:
        return None
    return max(rs, key=lambda r: math.inf if r <= 0 or math.isinf(r) else abs(math.log(r)))


def _setup(setup_out: Path, target: str, root: Path) -> tuple:
    """(name, record, producer) of one set-up's crosscheck output."""
    stats = _read_json(setup_out / "crosscheck.json")
    if stats.get("against") != target:
        raise ValidationError(f"{setup_out}: a crosscheck against {stats.get('against')!r}, not {target!r}")
    scen = Path(stats["scenario"])
    scen = (scen if scen.is_absolute() else Path.cwd() / scen).resolve()
    try:
        rel = scen.relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ValidationError(f"{setup_out}: its scenario {scen} is not in the source tree {root}") from None
    if not scen.is_file():
        raise ValidationError(f"{setup_out}: its scenario {rel} is gone")
    if Path(rel).parent.as_posix() != f"scenarios/crosscheck/{target}":
        raise ValidationError(f"{setup_out}: {rel} is not a set-up of scenarios/crosscheck/{target}")
    seeds = list(stats["seeds"])
    figures = [
        {
            "what": c["what"],
            "fctlab": c["fctlab"],
            "other": c["other"],
            "ratio": None if math.isinf(c["ratio"]) else c["ratio"],
            "tolerance": c["tolerance"],
            "unit": c["unit"],
            "verdict": "agrees" if c["ok"] else "differs",
        }
        for c in stats["checks"]
    ]
    summary = _read_json(setup_out / f"seed-{seeds[0]}" / target / "summary.json")
    producer = " ".join(str(x) for x in (summary.get("producer"), summary.get("version")) if x)
    rec = {
        "scenario": rel,
        "digest": stored._digest(scen.read_bytes()),  # SHA-256, its first 16 hex digits
        "protocols": _protocols(setup_out, seeds),
        "seeds": seeds,
        "figures": figures,
        "graded": len(figures),
        "agree": sum(f["verdict"] == "agrees" for f in figures),
        "worst_ratio": worst_ratio(figures),
        "goodput": [
            {"flow_id": g["flow_id"], "fctlab": g["fctlab"][0], "other": g["other"][0]} for g in stats["goodput"]
        ],
        "notes": list(stats.get("notes") or []),
        "wall_s": {k: v[0] for k, v in stats.get("wall_s", {}).items()},
    }
    return scen.stem, rec, producer


def record(out, target: str, command: str, root: Path = ROOT) -> dict:
    """Stores the outcome of the finished suite in `out` (``out/<set-up>/crosscheck.json``
    from ``fctlab crosscheck scenarios/crosscheck/<target> --against <target> --out OUT``) in
    ``docs/results/validation/<target>.json``, replacing what was stored; returns the record."""
    out = Path(out)
    dirs = sorted(d for d in out.iterdir() if (d / "crosscheck.json").is_file()) if out.is_dir() else []
    if not dirs:
        raise ValidationError(f"{out}: no crosscheck output (<set-up>/crosscheck.json) in this directory")
    setups, producers = {}, set()
    for d in dirs:
        name, rec, producer = _setup(d, target, root)
        setups[name] = rec
        producers.add(producer)
    suite_md = out / "suite.md"
    made_by = ""
    if suite_md.is_file():
        m = re.search(r"Regenerate: `([^`]*)`", suite_md.read_text(encoding="utf-8"))
        made_by = m.group(1) if m else ""
    behaviour = golden_behaviour(root)
    data = {
        "target": target,
        "made": {
            "commit": stored.commit(root),
            "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d"),
            "command": made_by or f"fctlab crosscheck scenarios/crosscheck/{target} --against {target} --out {out}",
            "recorded_by": command,
            "fctlab": fctlab.__version__,
            "producer": ", ".join(sorted(producers)),
            "behaviour": behaviour,
            "fingerprint": stored.fingerprint(behaviour),
        },
        "setups": setups,
    }
    p = record_path(target, root)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(p)
    return data


def load(target: str, root: Path = ROOT) -> Optional[dict]:
    """The recorded suite of `target`, None when there is none."""
    p = record_path(target, root)
    return _read_json(p) if p.is_file() else None


def stale(target: str, root: Path = ROOT, data: Optional[dict] = None) -> list:
    """Why the recorded suite of `target` no longer stands for today's tree: set-ups whose
    scenario file changed or is gone, set-ups of the suite's directory it does not hold, and
    golden outputs of fctlab that changed since it was made. Empty when current (or none)."""
    data = load(target, root) if data is None else data
    if data is None:
        return []
    out = []
    for name, s in sorted(data["setups"].items()):
        f = root / s["scenario"]
        now = stored._digest(f.read_bytes()) if f.is_file() else "missing"
        if now != s["digest"]:
            out.append(f"set-up {name}: {s['scenario']} {'is gone' if now == 'missing' else 'changed'}")
    recorded = {s["scenario"] for s in data["setups"].values()}
    for f in sorted(suite_dir(target, root).glob("*.toml")):
        if f.relative_to(root).as_posix() not in recorded:
            out.append(f"set-up {f.stem}: {f.relative_to(root).as_posix()} is not in the recorded suite")
    # what the suite's set-ups run: a golden output of other protocols that changed is no change
    texts = [
        (root / s["scenario"]).read_text(encoding="utf-8")
        for s in data["setups"].values()
        if (root / s["scenario"]).is_file()
    ]
    diff = stored.changed(data["made"].get("behaviour") or {}, root, stored.vocabulary(texts))
    if diff:
        more = f" and {len(diff) - 3} more" if len(diff) > 3 else ""
        out.append(f"fctlab's golden outputs changed since: {', '.join(diff[:3])}{more}")
    return out


# --------------------------------------------------------------------------- the matrix


def protocols() -> list:
    """(name, aliases, transports) of every protocol fctlab ships."""
    return [(p["names"][0], list(p["names"][1:]), list(p["transports"])) for p in _core.protocols()]


def reason(column: str, protocol: str, fallback: str) -> str:
    return REASONS.get((column, protocol), fallback)


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return "#" + re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def suite_heading(title: str) -> str:
    return f"Set-ups run beside {title}"


def _ratio(r: Optional[float]) -> str:
    return "inf" if r is None else f"{r:.2f}x"


def suite_cell(target: str, title: str, protocol: str, data: Optional[dict]) -> str:
    module = crosscheck.TARGETS.get(target)
    runs_it = getattr(module, "PROTOCOLS", None)
    if runs_it is not None and protocol not in runs_it:
        return reason(target, protocol, UNSUPPORTED.format(producer=getattr(module, "PRODUCER", title)))
    if data is None:
        return reason(target, protocol, NOT_RUN)
    runs = [s for s in data["setups"].values() if protocol in s["protocols"]]
    if not runs:
        return reason(target, protocol, NO_SETUP)
    figs = [f for s in runs for f in s["figures"]]
    link = f"[{len(runs)} set-up{'s' if len(runs) != 1 else ''}]({anchor(suite_heading(title))})"
    if not figs:
        return f"no graded figure ({link})"
    agree = sum(f["verdict"] == "agrees" for f in figs)
    return f"{agree}/{len(figs)} agree, worst {_ratio(worst_ratio(figs))} ({link})"


def _names_in(text: str, names: dict) -> set:
    """The protocols `text` names: phrases first (blanked once matched), then names as words."""
    text = text.lower()
    found = set()
    for proto, words in sorted(names.items(), key=lambda kv: -max(len(w) for w in kv[1])):
        for w in sorted(words, key=len, reverse=True):
            pat = re.compile(r"(?<![\w-])" + re.escape(w) + r"(?![\w-])")
            if pat.search(text):
                found.add(proto)
                text = pat.sub(" ", text)
    return found


def _name_table() -> dict:
    """protocol -> the words that name it (its names, and PHRASES)."""
    out = {}
    for name, aliases, _ in protocols():
        out[name] = tuple([name, *aliases, *PHRASES.get(name, ())])
    return out


def _scenario_protocols(paper: str, files: list, root: Path, names: dict) -> set:
    found = set()
    for f in files or []:
        p = root / "scenarios" / "papers" / paper / f
        if p.is_file():
            for m in re.finditer(r'^\s*protocol\s*=\s*"([\w-]+)"', p.read_text(encoding="utf-8"), re.M):
                found |= {k for k, ws in names.items() if m.group(1) in ws}
    return found


def _primary_rows(spec, item: dict) -> list:
    """An item's rows under its paper's primary profile (the one the reproduction docs show)."""
    subs = item["profiles"]
    primary = spec.profiles[0][0] if spec.profiles else ""
    return subs.get("") or subs.get(primary) or next(iter(subs.values()), [])


def paper_rows(root: Path = ROOT) -> dict:
    """protocol -> [(paper, item, verdict)] of every graded row of the stored paper results,
    graded again as the reproduction docs are. Items measured on the kernel testbed are left
    out (their figure is the kernel's, not fctlab's). A row counts for the protocols its
    quantity names; a row that names none, for those its item's title, number keys or
    scenario files name, and else for the protocols its paper is about."""
    names = _name_table()
    out: dict = {}
    for paper in PAPERS:
        spec = importlib.import_module(f"fctlab.reproduce.{paper}").paper()
        raw = stored.load(paper, root)["items"]
        for n, item in sorted(stored.graded(paper, root).items()):
            if n in spec.real_time_items:
                continue
            keys = " ".join(str(k).replace("_", " ") for k in (item.get("numbers") or {}))
            own = _names_in(f"{item.get('title') or ''} {keys}", names)
            own |= _scenario_protocols(paper, raw[str(n)].get("scenario_files"), root, names)
            own = own or set(PAPER_PROTOCOLS.get(paper, ()))
            for r in _primary_rows(spec, item):
                if r.verdict not in GRADED:
                    continue
                for proto in _names_in(r.quantity, names) or own:
                    out.setdefault(proto, []).append((paper, n, r.verdict))
    return out


def _counts(rows: list) -> str:
    c = Counter(v for *_, v in rows)
    parts = [f"{c[MATCH]}/{len(rows)} match"]
    if c[DIRECTION]:
        parts.append(f"{c[DIRECTION]} direction only")
    if c[NO_MATCH]:
        parts.append(f"{c[NO_MATCH]} no match")
    if c[INCONCLUSIVE]:
        parts.append(f"{c[INCONCLUSIVE]} inconclusive")
    return ", ".join(parts)


def paper_cell(protocol: str, rows: dict) -> str:
    mine = rows.get(protocol)
    if not mine:
        return reason(PAPER, protocol, NO_PAPER_ROW)
    papers = sorted({p for p, _, _ in mine}, key=PAPERS.index)
    links = ", ".join(f"[{p}](reproduce_{p}.md)" for p in papers)
    return f"{_counts(mine)} ({links})"


def model_rows(root: Path = ROOT) -> dict:
    """protocol -> [(paper, item, verdict)] of the graded rows of the items of MODELS."""
    out = {}
    for proto, (_, _, items, _) in MODELS.items():
        rows = []
        for paper, n in items:
            item = stored.graded(paper, root).get(n)
            if item is None:
                continue
            spec = importlib.import_module(f"fctlab.reproduce.{paper}").paper()
            rows += [(paper, n, r.verdict) for r in _primary_rows(spec, item) if r.verdict in GRADED]
        out[proto] = rows
    return out


def model_cell(protocol: str, rows: dict) -> str:
    if protocol not in MODELS:
        return reason(MODEL, protocol, NO_MODEL)
    mine = rows.get(protocol) or []
    if not mine:
        return "its items are not stored yet"
    return f"{_counts(mine)} ([{MODELS[protocol][0].rsplit('.', 1)[-1]}](#analytic-models))"


# --------------------------------------------------------------------------- the doc

#: Where each target's misses and their mechanisms are written down.
MISSES_EXPLAINED = {
    "ns2": "[crosscheck.md](crosscheck.md#differences-that-remain)",
    "htsim": "[crosscheck_htsim.md](crosscheck_htsim.md#the-misses-and-their-mechanisms)",
    "testbed": "[crosscheck.md](crosscheck.md#why-they-differ)",
    "ns3": "[crosscheck_ns3.md](crosscheck_ns3.md)",
}

GENERATED = (
    "<!-- Generated by `make docs` (fctlab validation --docs) from docs/results/validation/*.json and "
    "docs/results/<paper>.json: run the suites and record them, do not edit this file. -->\n"
)


def _suite_section(target: str, title: str, data: dict) -> list:
    m = data["made"]
    lines = [
        f"## {suite_heading(title)}",
        "",
        f"`{m['command']}` (the other simulator: {m['producer'] or title}), recorded by `{m['recorded_by']}` "
        f"at commit `{m['commit']}` on {m['date']} in `docs/results/validation/{target}.json`. The ratio is "
        "fctlab / " + title + " (means over the seeds); the tolerances are those of "
        "[crosscheck.md](crosscheck.md#statistics-and-tolerances), and what is known of the figures that "
        f"differ is in {MISSES_EXPLAINED.get(target, 'its report (report.md of each set-up)')}.",
        "",
        "| set-up | protocols | seeds | figures that agree | worst ratio | figures that differ |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in sorted(data["setups"].items()):
        differ = "; ".join(f"{f['what']} {_ratio(f['ratio'])}" for f in s["figures"] if f["verdict"] != "agrees")
        seeds = s["seeds"]
        span = f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])
        worst = _ratio(s["worst_ratio"]) if s["figures"] else "-"
        lines.append(
            f"| [{name}](../{s['scenario']}) | {', '.join(s['protocols'])} | {span} | "
            f"{s['agree']}/{s['graded']} | {worst} | {differ or '-'} |"
        )
    wall = {
        k: sum(s["wall_s"].get(k, 0.0) * len(s["seeds"]) for s in data["setups"].values())
        for k in ("fctlab", "other", "own")
    }
    lines += [
        "",
        f"Wall time of the suite's runs: fctlab {seconds(wall['fctlab'])}, {title} {seconds(wall['other'])}, "
        f"the crosscheck's own work (translation, writing both runs) {seconds(wall['own'])}.",
    ]
    notes = sorted({n for s in data["setups"].values() for n in s["notes"]})
    if notes:
        lines += ["", "Where the runs differ in set-up (from the set-ups' reports):", ""]
        lines += [f"- {n}" for n in notes]
    return lines + [""]


def _models_section(rows: dict) -> list:
    lines = [
        "## Analytic models",
        "",
        "The models of `python/fctlab/models`, and the stored reproduction items whose rows hold the "
        "simulator against them (their rows' verdicts fill the column; the tests named run in `make test`).",
        "",
        "| protocol | model | what it predicts | stored items | rows | tests |",
        "|---|---|---|---|---|---|",
    ]
    for proto, (model, what, items, tests) in MODELS.items():
        its = ", ".join(f"[{p} {n}](reproduce_{p}.md)" for p, n in items)
        t = ", ".join(f"`{x}`" for x in tests)
        lines.append(f"| {proto} | `{model}` | {what} | {its} | {_counts(rows.get(proto) or []) or '-'} | {t} |")
    return lines + [""]


def render(root: Path = ROOT) -> str:
    suites = {t: load(t, root) for t, _ in SUITE_COLUMNS}
    prows, mrows = paper_rows(root), model_rows(root)
    head = ["protocol", *(title for _, title in SUITE_COLUMNS), "analytic model", "paper"]
    lines = [
        "# Validation matrix",
        "",
        "Every protocol fctlab ships (one row each, from `fctlab._core.protocols()`), against what it is "
        "held to: the crosscheck suites run beside another simulator or the kernel "
        "([crosscheck.md](crosscheck.md)), the analytic models of `fctlab.models`, and the papers' numbers "
        "([reproduce.md](reproduce.md)). Every number comes from a stored run; a cell that holds none says why.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for name, aliases, transports in protocols():
        label = f"`{name}`" + (f" ({', '.join(aliases)})" if aliases else "")
        if transports != ["tcp"]:
            label += f", transport {', '.join(transports)}"
        cells = [suite_cell(t, title, name, suites[t]) for t, title in SUITE_COLUMNS]
        cells += [model_cell(name, mrows), paper_cell(name, prows)]
        lines.append("| " + " | ".join([label, *cells]) + " |")
    lines += [
        "",
        "How the cells are filled:",
        "",
        "- **A simulator or the kernel**: the figures of the suite's set-ups whose flows run the protocol "
        "(median and mean FCT per size bucket, drops, ECN marks, timeouts) within their tolerance, and the graded "
        "ratio furthest from 1, from `docs/results/validation/<target>.json`.",
        "- **Analytic model**: the graded rows of the stored items listed under [Analytic models](#analytic-models).",
        "- **Paper**: the graded rows of the stored paper reproductions (`docs/results/<paper>.json`, graded "
        "again under today's rules): matches, matches in direction only, no match, inconclusive. A row counts "
        'for the protocols its quantity names (the ATCP papers\' "weighted TCP" is ATCP); a row that names '
        "none, for those its item's title, its numbers or its scenario files name, and else for the protocols "
        "its paper is about. A row that compares two protocols counts for both. Items measured on the kernel "
        "testbed are left out (their figure is the kernel's).",
        "",
    ]
    for t, title in SUITE_COLUMNS:
        if suites[t] is not None:
            lines += _suite_section(t, title, suites[t])
    lines += _models_section(mrows)
    lines += [
        "## Regenerating",
        "",
        "```sh",
        "fctlab crosscheck scenarios/crosscheck/ns2 --against ns2 --out out/xc-ns2 --seeds 5   # a suite",
        "fctlab validation --record out/xc-ns2 --against ns2   # stores it in docs/results/validation/ns2.json",
        "fctlab validation --docs                              # this file (make docs); --check: is it current",
        "```",
        "",
        "`make test` fails when this file is not its rendering, or when a recorded suite is stale: a "
        "scenario file of it changed, a set-up was added to its directory, or a golden output of fctlab changed.",
        "",
    ]
    return GENERATED + "\n".join(lines)


def check(root: Path = ROOT) -> list:
    """The problems `--check` reports: the doc is not its rendering; a recorded suite is stale."""
    problems = []
    text = render(root)
    doc = root / DOC
    if not doc.is_file() or doc.read_text(encoding="utf-8") != text:
        problems.append(f"{DOC}: differs from what `fctlab validation --docs` renders")
    for t, _ in SUITE_COLUMNS:
        for why in stale(t, root):
            problems.append(f"docs/results/validation/{t}.json is stale: {why}; run the suite again and record it")
    return problems


# --------------------------------------------------------------------------- the command


def configure(parser) -> None:
    parser.description = (
        "The validation matrix (docs/validation.md): record a finished crosscheck suite, render the doc."
    )
    g = parser.add_mutually_exclusive_group(required=True)
    g.add_argument("--record", metavar="OUT", help="store the suite run into OUT (fctlab crosscheck ... --out OUT)")
    g.add_argument("--docs", action="store_true", help="render docs/validation.md")
    parser.add_argument("--against", help="with --record: the suite's target (ns2, ...)")
    parser.add_argument("--check", action="store_true", help="with --docs: write nothing, exit 1 when not current")


def run(args) -> int:
    try:
        if args.record:
            if not args.against:
                print("fctlab validation: error: --record needs --against TARGET", file=sys.stderr)
                return 2
            cmd = f"fctlab validation --record {args.record} --against {args.against}"
            data = record(args.record, args.against, cmd)
            n = sum(s["graded"] for s in data["setups"].values())
            agree = sum(s["agree"] for s in data["setups"].values())
            print(f"{record_path(args.against)}: {len(data['setups'])} set-ups, {agree}/{n} figures agree")
            return 0
        if args.check:
            problems = check()
            for p in problems:
                print(p, file=sys.stderr)
            return 1 if problems else 0
        (ROOT / DOC).write_text(render(), encoding="utf-8")
        print(DOC)
        for t, _ in SUITE_COLUMNS:
            for why in stale(t):
                print(f"docs/results/validation/{t}.json is stale: {why}", file=sys.stderr)
        return 0
    except (ValidationError, stored.StoreError, OSError) as e:
        print(f"fctlab validation: error: {e}", file=sys.stderr)
        return 2
