"""The stored results of the reproductions' full runs: ``docs/results/<paper>.json``.

``fctlab reproduce PAPER --record`` merges the items it ran into the paper's file, each with
what made it (commit, command, date, fctlab's version) and the behaviour it was made under:
the hash of every golden output (tests/golden, the simulator's reference runs) and of every
scenario file the item read. The rows keep what was measured (the number, its 95%
interval, its sample count), not only how it was graded, so :func:`regrade` grades them again
under today's rules and today's ``expected.toml``; a change of the simulator's behaviour
(a golden output that changes) or of a scenario it read makes a stored item *stale*, which :func:`stale_items`
reports and the docs' check refuses.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import hashlib
import importlib
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import fctlab

from .expected import Expected, set_ns2
from .verdicts import DIRECTION, INCONCLUSIVE, MATCH, MIN_SAMPLES, NO_MATCH, NOT_GRADED, Row

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: the source tree (python/fctlab/reproduce/stored.py -> the repository's root)
ROOT = Path(__file__).resolve().parents[3]
#: scenario-directory files that are data about the paper, not inputs of the runs
NOT_INPUTS = {"expected.toml", "README.md"}


_ROW_FIELDS = {f.name for f in dataclasses.fields(Row)}
GRADED = (MATCH, DIRECTION, INCONCLUSIVE, NO_MATCH)


class StoreError(ValueError):
    """A stored-results file that cannot be read or written; names the file."""


def results_dir(root: Path = ROOT) -> Path:
    return root / "docs" / "results"


def results_path(paper: str, root: Path = ROOT) -> Path:
    return results_dir(root) / f"{paper}.json"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def scenario_inputs(paper: str, root: Path = ROOT) -> list:
    """Every scenario file of `paper` (its expected values and README excluded: data about
    the paper, graded against at render time, not inputs of the runs)."""
    scen = root / "scenarios" / "papers" / paper
    return sorted(str(f.relative_to(scen)) for f in scen.rglob("*") if f.is_file() and f.name not in NOT_INPUTS)


def behaviour(paper: str, root: Path = ROOT, files: Optional[list] = None) -> dict:
    """What a run of `paper` is made under, file by file: the simulator's golden outputs
    (tests/golden, its reference runs; the error messages' file aside) and the scenario files
    it read (`files`, names in the paper's directory; all of them when None), each with the
    hash of its contents."""
    golden = root / "tests" / "golden"
    scen = root / "scenarios" / "papers" / paper
    if not golden.is_dir() or not scen.is_dir():
        raise StoreError(f"{root}: not a source tree (no tests/golden or scenarios/papers/{paper})")
    out = {
        str(f.relative_to(root)): _digest(f.read_bytes())
        for f in sorted(golden.rglob("*"))
        if f.is_file() and f.name != "errors.txt"
    }
    for name in scenario_inputs(paper, root) if files is None else files:
        f = scen / name
        out[str(f.relative_to(root))] = _digest(f.read_bytes()) if f.is_file() else "missing"
    return out


def fingerprint(recorded: dict) -> str:
    """One digest of a :func:`behaviour`, to name it."""
    return _digest(json.dumps(recorded, sort_keys=True).encode())


@functools.lru_cache(maxsize=1)
def _registry() -> dict:
    """Every protocol name the simulator knows -> the transports it runs on."""
    out = {}
    for p in fctlab._core.protocols():
        for name in p["names"]:
            out[name] = set(p["transports"])
    return out


#: Features of a network that only some runs use, by the word that turns them on: a golden
#: output of a run with one counts only for runs that name it (see :func:`changed`).
FEATURES = ("pfc",)


def vocabulary(texts) -> set:
    """The protocols named in `texts` (as whole words), the transports they run on, and the
    :data:`FEATURES` named: what a set of runs described by these files can exercise."""
    reg = _registry()
    words = set()
    for text in texts:
        words |= set(re.findall(r"[a-z][a-z0-9_]*", text.lower()))
    found = words & set(reg)
    return found | {t for name in found for t in reg[name]} | (words & set(FEATURES))


def paper_vocabulary(paper: str, root: Path = ROOT) -> set:
    """What `paper`'s runs can exercise: the protocols its scenario files and its reproduction
    modules name, and their transports."""
    scen = root / "scenarios" / "papers" / paper
    files = [f for f in scen.rglob("*") if f.is_file() and f.name not in NOT_INPUTS]
    files += sorted(Path(__file__).parent.glob(f"{paper}*.py"))
    return vocabulary(f.read_text(encoding="utf-8", errors="replace") for f in files)


def golden_vocabulary(rel: str, root: Path = ROOT) -> Optional[set]:
    """The protocols of the flows in the golden output `rel` belongs to, their transports, and
    ``pfc`` when its scenario's network is lossless; None when its flows table or its scenario
    cannot be read."""
    name = Path(rel).name.split(".")[0]
    flows = root / "tests" / "golden" / f"{name}.flows.csv"
    scenario = root / (name.replace("__", "/") + ".toml")
    try:
        lines = flows.read_text(encoding="utf-8").splitlines()
        col = lines[0].split(",").index("protocol")
        network = tomllib.loads(scenario.read_text(encoding="utf-8")).get("network", {})
    except (OSError, ValueError, IndexError, tomllib.TOMLDecodeError):
        return None
    reg = _registry()
    names = {line.split(",")[col] for line in lines[1:] if line}
    if not names <= set(reg):
        return None
    return names | {t for n in names for t in reg[n]} | ({"pfc"} if network.get("pfc") is True else set())


def _counts_for(own: set, exercised: set) -> bool:
    """Whether a golden output that exercises `own` speaks for runs that exercise `exercised`:
    it runs one of their protocols or transports, and no feature they do not use."""
    features = set(FEATURES)
    return bool((own - features) & (exercised - features)) and (own & features) <= exercised


def changed(recorded: dict, root: Path = ROOT, exercised: Optional[set] = None) -> list:
    """The files of a recorded behaviour whose contents are not what they were (or that are
    gone). Files added since do not count: a new golden output or scenario is no change, and
    neither is a golden output that is gone under its name but present with the same contents
    under another (its scenario moved: the snapshot is named after the scenario's path).

    With `exercised` (the protocols, transports and features the recorded runs can exercise,
    see :func:`vocabulary`), a changed golden output whose flows run none of their protocols,
    or that uses a feature they do not (a lossless network), is no change either: it shows
    something else's behaviour changing, and the golden outputs of what the runs do use,
    unchanged, show that theirs did not."""
    out = []
    moved = None
    for rel, digest in sorted(recorded.items()):
        f = root / rel
        now = _digest(f.read_bytes()) if f.is_file() else "missing"
        if exercised is not None and now not in (digest, "missing") and rel.startswith("tests/golden/"):
            own = golden_vocabulary(rel, root)
            if own is not None and not _counts_for(own, exercised):
                continue
        if now == "missing" and rel.startswith("tests/golden/"):
            if moved is None:
                golden = root / "tests" / "golden"
                moved = (
                    {_digest(g.read_bytes()) for g in golden.rglob("*") if g.is_file()} if golden.is_dir() else set()
                )
            if digest in moved:
                continue
        if now != digest:
            out.append(rel)
    return out


def _git(root: Path, *args: str) -> str:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def commit(root: Path = ROOT) -> str:
    """HEAD's commit, with ``-dirty`` when tracked files differ from it ("" outside git)."""
    head = _git(root, "rev-parse", "--short=12", "HEAD")
    if head and _git(root, "status", "--porcelain", "--untracked-files=no"):
        head += "-dirty"
    return head


def load(paper: str, root: Path = ROOT) -> dict:
    """The paper's stored results ({"paper", "items": {n: item}}); empty items when none."""
    p = results_path(paper, root)
    if not p.is_file():
        return {"paper": paper, "items": {}}
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise StoreError(f"{p}: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("items"), dict):
        raise StoreError(f"{p}: expected an object with `items`")
    return data


def record(paper: str, result: dict, out: Path, command: str, root: Path = ROOT) -> list:
    """Merges the items of a full run (`result` as results.json holds it, its figures in
    `out`) into the paper's stored results, replacing those items; returns their numbers.
    Items that were not run are left as stored."""
    if result.get("mode") == "quick":
        raise StoreError("only full runs are stored (drop --quick)")
    data = load(paper, root)
    made = {
        "commit": commit(root),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d"),
        "command": command,
        "fctlab": fctlab.__version__,
    }
    figdir = results_dir(root) / paper
    kept = []
    for n, item in result["items"].items():
        if item["status"] != "done":
            continue
        figdir.mkdir(parents=True, exist_ok=True)
        for f in item.get("figures", []):
            shutil.copyfile(Path(out) / f, figdir / f)
        recorded = behaviour(paper, root, item.get("scenario_files") or None)
        data["items"][str(n)] = {
            **item,
            "made": {**made, "behaviour": recorded, "fingerprint": fingerprint(recorded)},
        }
        kept.append(int(n))
    data["paper"] = paper
    p = results_path(paper, root)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    tmp.replace(p)
    return sorted(kept)


def stale_items(paper: str, root: Path = ROOT, data: Optional[dict] = None) -> list:
    """The stored items made under another behaviour than today's: [(item, why)]. An item's
    behaviour is the golden outputs and the scenario files it read (:func:`behaviour`)."""
    data = load(paper, root) if data is None else data
    exercised = paper_vocabulary(paper, root)
    out = []
    for n, item in sorted(data["items"].items(), key=lambda kv: int(kv[0])):
        made = item.get("made", {})
        recorded = made.get("behaviour")
        if not isinstance(recorded, dict) or not recorded:
            out.append((int(n), "records no behaviour it was made under"))
            continue
        diff = changed(recorded, root, exercised)
        if diff:
            more = f" and {len(diff) - 3} more" if len(diff) > 3 else ""
            out.append((int(n), f"made at {made.get('commit') or '?'}; changed since: {', '.join(diff[:3])}{more}"))
    return out


# --------------------------------------------------------------------------- grading again


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def regrade_row(ex, stored_row: dict) -> Row:
    """A stored row as a :class:`Row`, graded again under today's rules and ``expected.toml``
    (its paper side too). Rows without a measured number (claims, lists, rows graded by an
    item's own check of a statement) keep their stored verdict."""
    d = {k: v for k, v in stored_row.items() if k in _ROW_FIELDS}
    for k in ("measured", "ns2_measured"):
        d[k] = d[k] if _finite(d.get(k)) else math.nan
    for k in ("half_width", "ns2_half_width"):
        d[k] = d[k] if _finite(d.get(k)) else 0.0
    r = Row(**d)
    if not r.rid:
        return r
    if r.rid not in ex.rows:
        raise StoreError(f"stored row {r.rid!r} is no longer in {ex.path}: run its item again")
    e = ex[r.rid]
    r.paper = e.shown
    if e.rule in ("value", "change") and math.isfinite(r.measured):
        r.verdict = _gated(e.verdict(r.measured, r.half_width), r.samples)
    if e.rule in ("value", "change") and math.isfinite(r.ns2_measured):
        twin = Row(r.quantity, r.paper, r.ns2, _gated(e.verdict(r.ns2_measured, r.ns2_half_width), r.ns2_samples))
        twin.rid, twin.measured, twin.half_width, twin.samples = r.rid, r.ns2_measured, r.ns2_half_width, r.ns2_samples
        set_ns2(ex, r, twin)
    return r


def _gated(verdict: str, samples: Optional[int]) -> str:
    if samples is not None and samples < MIN_SAMPLES and verdict in GRADED:
        return NOT_GRADED
    return verdict


def graded(paper: str, root: Path = ROOT) -> dict:
    """The stored items of `paper`, graded again: {item: {"made", "title", "status",
    "numbers", "figures", "profiles": {profile or "": [Row]}}} (one profile "" for items run
    once)."""
    ex = Expected(root / "scenarios" / "papers" / paper / "expected.toml")
    out = {}
    for n, item in load(paper, root)["items"].items():
        subs = item.get("profiles") or {"": {"rows": item.get("rows", []), "numbers": item.get("numbers", {})}}
        out[int(n)] = {
            **{k: item.get(k) for k in ("made", "title", "status", "numbers", "figures", "wall_s")},
            "profiles": {p: [regrade_row(ex, r) for r in sub.get("rows", [])] for p, sub in subs.items()},
            "profile_numbers": {p: sub.get("numbers", {}) for p, sub in subs.items()},
        }
    return out


def graded_rows(paper: str, root: Path = ROOT) -> dict:
    """Row id -> its graded measurement in the stored results: the primary profile's
    `verdict`, the simulator's figure (`fctlab`), ns-2.35's (`ns2`, or "") and the kernel
    testbed's (`kernel`: the rows of the items that run on the kernel, whose figure is the
    kernel's), every profile's under `profiles`, and the item."""
    spec = importlib.import_module(f".{paper}", __package__).paper()
    primary = spec.profiles[0][0] if spec.profiles else ""
    out: dict = {}
    for n, item in sorted(graded(paper, root).items()):
        on_kernel = n in spec.real_time_items
        # the primary profile first: the row's own verdict and figures are its
        for p, rows in sorted(item["profiles"].items(), key=lambda kv: kv[0] != primary):
            for r in rows:
                if not r.rid:
                    continue
                g = out.setdefault(
                    r.rid,
                    {
                        "item": n,
                        "verdict": r.verdict,
                        "fctlab": "" if on_kernel else r.fctlab,
                        "ns2": r.ns2,
                        "kernel": r.fctlab if on_kernel else "",
                        "profiles": {},
                    },
                )
                g["profiles"].setdefault(p, {"fctlab": r.fctlab, "verdict": r.verdict})
    return out
