"""The stored results of the reproductions' full runs: ``docs/results/<paper>.json``.

``fctlab reproduce PAPER --record`` merges the items it ran into the paper's file, each with
what made it (commit, command, date, fctlab's version) and the *fingerprint* of the behaviour
it was made under: a hash of the golden outputs (tests/golden, the simulator's reference runs)
and of the paper's scenario files. The rows keep what was measured (the number, its 95%
interval, its sample count), not only how it was graded, so :func:`regrade` grades them again
under today's rules and today's ``expected.toml``; a change of the simulator's behaviour
(a golden output) or of a scenario makes the stored items *stale*, which :func:`stale_items`
reports and the docs' check refuses.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Optional

import fctlab

#: the source tree (python/fctlab/reproduce/stored.py -> the repository's root)
ROOT = Path(__file__).resolve().parents[3]
#: scenario-directory files that are data about the paper, not inputs of the runs
NOT_INPUTS = {"expected.toml", "README.md"}


class StoreError(ValueError):
    """A stored-results file that cannot be read or written; names the file."""


def results_dir(root: Path = ROOT) -> Path:
    return root / "docs" / "results"


def results_path(paper: str, root: Path = ROOT) -> Path:
    return results_dir(root) / f"{paper}.json"


def _hash_files(h, files: list, root: Path) -> None:
    for f in sorted(files):
        h.update(str(f.relative_to(root)).encode())
        h.update(b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")


def fingerprint(paper: str, root: Path = ROOT) -> str:
    """The behaviour a run of `paper` is made under: the golden outputs and the paper's
    scenario files (its expected values excluded: they are graded against at render time)."""
    golden = root / "tests" / "golden"
    scen = root / "scenarios" / "papers" / paper
    if not golden.is_dir() or not scen.is_dir():
        raise StoreError(f"{root}: not a source tree (no tests/golden or scenarios/papers/{paper})")
    h = hashlib.sha256()
    _hash_files(h, [f for f in golden.rglob("*") if f.is_file()], root)
    _hash_files(h, [f for f in scen.rglob("*") if f.is_file() and f.name not in NOT_INPUTS], root)
    return h.hexdigest()[:16]


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
        "fingerprint": fingerprint(paper, root),
    }
    figdir = results_dir(root) / paper
    kept = []
    for n, item in result["items"].items():
        if item["status"] != "done":
            continue
        figdir.mkdir(parents=True, exist_ok=True)
        for f in item.get("figures", []):
            shutil.copyfile(Path(out) / f, figdir / f)
        data["items"][str(n)] = {**item, "made": made}
        kept.append(int(n))
    data["paper"] = paper
    p = results_path(paper, root)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    tmp.replace(p)
    return sorted(kept)


def stale_items(paper: str, root: Path = ROOT, data: Optional[dict] = None) -> list:
    """The stored items made under another behaviour than today's: [(item, why)]."""
    data = load(paper, root) if data is None else data
    now = fingerprint(paper, root)
    out = []
    for n, item in sorted(data["items"].items(), key=lambda kv: int(kv[0])):
        made = item.get("made", {})
        if made.get("fingerprint") != now:
            out.append(
                (
                    int(n),
                    f"made at {made.get('commit') or '?'} under fingerprint {made.get('fingerprint')}, "
                    f"today's is {now} (a golden output or a scenario file of {paper} changed since)",
                )
            )
    return out
