"""The checksums of a sweep's store (docs/sweeps.md).

Each stored run's ``flows/run_id=<id>/manifest.json``, written last, lists every file of the
run with its size and SHA-256. The store's own ``manifest.json``, written after
``runs.parquet``, lists ``runs.parquet`` and ``failed.json`` the same way, each stored run with
the SHA-256 of its manifest, and the sweep file. :func:`check_store` checks a store against
them: ``fctlab sweep verify`` prints what it finds, and ``fctlab query`` and ``fctlab report``
refuse a store that fails it. Every file is hashed on every check (no cache): a changed byte
is found whatever the file's size and modification time say.

The standard library only: ``fctlab query`` checks a store without loading pandas or pyarrow.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
from pathlib import Path
from typing import Callable, Union

#: The manifest of a run directory, and of the store.
MANIFEST = "manifest.json"
#: The store's files besides the runs' (each rewritten by every sweep into the store).
STORE_FILES = ("runs.parquet", "failed.json")
#: A write failing so is the store's, not the run's: no retry can succeed, the sweep stops.
WRITE_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT})


def sha256_file(path: Union[str, os.PathLike]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fsync(path: Union[str, os.PathLike]) -> None:
    """Flushes a file, or a directory's entries, to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, write: Callable[[Path], None]) -> None:
    """Writes `path` whole or not at all: ``write(tmp)`` writes a temporary file beside it,
    which is flushed to the disk and then renamed over `path`."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        write(tmp)
        fsync(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync(path.parent)


def _entry(path: Path) -> dict:
    return {"bytes": path.stat().st_size, "sha256": sha256_file(path)}


def _write_json(path: Path, doc: dict) -> None:
    write_atomic(path, lambda p: p.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8"))


def _files_under(d: Path) -> list:
    """The files of a run directory but its manifest, by their names relative to it."""
    return sorted(p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file() and p != d / MANIFEST)


def seal_run(run_dir: Path) -> None:
    """Writes a run directory's manifest, once every file in it is on the disk."""
    names = _files_under(run_dir)
    for n in names:
        fsync(run_dir / n)
    for sub in {(run_dir / n).parent for n in names}:
        fsync(sub)
    _write_json(run_dir / MANIFEST, {"files": {n: _entry(run_dir / n) for n in names}})


def seal_store(out: Path, sweep_file: Path, run_ids: list) -> None:
    """Writes the store's manifest: its files (:data:`STORE_FILES`, written already), the sweep
    file, and the runs stored (each sealed already) with the SHA-256 of their manifests."""
    runs = {r: sha256_file(out / "flows" / f"run_id={r}" / MANIFEST) for r in run_ids}
    files = {n: _entry(out / n) for n in STORE_FILES}
    _write_json(out / MANIFEST, {"sweep_file": str(sweep_file), "files": files, "runs": runs})


def _read_manifest(path: Path, store: bool = False) -> dict:
    """A manifest, its shape checked; ValueError says what is wrong with it."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict) or not all(
        isinstance(e, dict) and isinstance(e.get("bytes"), int) and isinstance(e.get("sha256"), str)
        for e in files.values()
    ):
        raise ValueError("no list of files with their sizes and checksums")
    if any(n.startswith("/") or ".." in n.split("/") for n in files):
        raise ValueError("a file named outside its directory")
    if store and not (isinstance(doc.get("runs"), dict) and isinstance(doc.get("sweep_file"), str)):
        raise ValueError("no list of runs or no sweep file")
    return doc


def _compare(d: Path, listed: dict, present: list) -> list:
    """(file name, what is wrong) for each file of `listed` that `d` lacks or holds otherwise,
    and each of `present` that `listed` lacks."""
    out = []
    for name, want in sorted(listed.items()):
        p = d / name
        if not p.is_file():
            out.append((name, "missing"))
        elif p.stat().st_size != want["bytes"]:
            out.append((name, f"{p.stat().st_size} bytes where its manifest says {want['bytes']}"))
        elif sha256_file(p) != want["sha256"]:
            out.append((name, "changed (its SHA-256 is not the one its manifest lists)"))
    out += [(name, "not in the manifest") for name in present if name not in listed]
    return out


def check_run(run_dir: Path) -> list:
    """What in a stored run differs from its manifest: (file name, what) pairs, none when the
    run is whole."""
    try:
        listed = _read_manifest(run_dir / MANIFEST)["files"]
    except FileNotFoundError:
        return [(MANIFEST, "missing: the run did not finish")]
    except (OSError, ValueError) as e:
        return [(MANIFEST, f"unreadable ({str(e).splitlines()[0]})")]
    return _compare(run_dir, listed, _files_under(run_dir))


def check_store(directory: Union[str, os.PathLike]) -> tuple:
    """Checks a sweep's store against its checksums: returns (problems, runs), the problems one
    line each, naming the file (and so the run) and the command that writes it again, and the
    stored runs (run id -> the names of its files)."""
    d = Path(directory)
    again = f"fctlab sweep SWEEP.toml --out {d}"
    try:
        doc = _read_manifest(d / MANIFEST, store=True)
    except FileNotFoundError:
        return [
            f"{d / MANIFEST}: missing: the sweep has not finished writing its store (or wrote it before stores "
            f"had checksums); finish it: {again}"
        ], {}
    except (OSError, ValueError) as e:
        return [f"{d / MANIFEST}: unreadable ({str(e).splitlines()[0]}); write it again: {again}"], {}
    again = f"fctlab sweep {doc['sweep_file']} --out {d}"
    problems = [f"{d / n}: {what}; write it again: {again}" for n, what in _compare(d, doc["files"], [])]
    runs = {}
    for rid, sha in sorted(doc["runs"].items()):
        rd = d / "flows" / f"run_id={rid}"
        if not (rd / MANIFEST).is_file():
            bad = [(MANIFEST, "missing")]
        elif sha256_file(rd / MANIFEST) != sha:
            bad = [(MANIFEST, "changed (its SHA-256 is not the one the store's manifest lists)")]
        else:
            bad = check_run(rd)
        problems += [f"{rd / n}: {what}; run it again: {again}" for n, what in bad]
        if not bad:
            runs[rid] = sorted(_read_manifest(rd / MANIFEST)["files"])
    return problems, runs


def refusal(directory: Union[str, os.PathLike], problems: list) -> str:
    """One line for a command that will not read a store that fails its check."""
    if len(problems) == 1:
        return problems[0]
    return f"{problems[0]} (and {len(problems) - 1} more problems: fctlab sweep verify {directory} lists them)"
