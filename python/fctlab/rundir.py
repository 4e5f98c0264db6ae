"""Run directories: the writer and reader of ``flows.parquet``, ``links.parquet``,
``queues.parquet``, ``cwnd.parquet``, ``drops.parquet``, ``pfc.parquet``, ``summary.json`` and the packet
captures in ``pcap/``.

Every producer of a run (the simulator, the namespace testbed, the socket scheduler
``fctlab sched send``, a sweep's runs, ns-2.35 in ``fctlab crosscheck``) writes its directory
through :func:`write_run`, so that every directory has one ``summary.json`` shape: the keys
of :data:`SUMMARY_KEYS`, each of its type or null where the producer cannot measure it, plus
``schema_version`` and ``producer``. The tables keep the core's schemas (a sweep's flows add
their swept values, ``seed`` and ``run_id`` after them). :func:`read_summary` reads any
directory back, older shapes included, and :func:`check_run_dir` lists what in a directory
breaks the contract. A run's ``flows.parquet`` written while the run goes on comes from
:class:`fctlab.rowstream.RowStream`, in this module's canonical form (:func:`_canonical`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.compute as pc

from .schemas import table_schema

#: Version of the run-directory contract written into every summary.json.
SCHEMA_VERSION = 1

#: Who wrote a run directory.
PRODUCERS = ("simulator", "testbed", "sched", "ns-2.35", "htsim", "ns-3.44")

#: Every key of summary.json and its JSON type ("int", "float", "str", "bool", "list",
#: "dict"); docs/results.md documents each. A producer that cannot measure one writes null.
SUMMARY_KEYS: dict[str, str] = {
    # the contract itself
    "schema_version": "int",
    "producer": "str",
    # the scenario
    "scenario_name": "str",
    "scenario_file": "str",
    "scenario_sha256": "str",
    "overrides": "list",
    "unset": "list",
    "seed": "int",
    "version": "str",
    # time
    "sim_time_s": "float",
    "wall_time_s": "float",
    # flows
    "flows_total": "int",
    "flows_started": "int",
    "flows_completed": "int",
    "payload_bytes_delivered": "int",
    "interrupted": "bool",
    # the measurement window ([measure]); flows_measured: the flows that started in it
    "measure_from_s": "float",
    "measure_until_s": "float",
    "flows_measured": "int",
    # the network
    "drops": "int",
    "ecn_marks": "int",
    # the simulator's engine
    "events": "int",
    "events_per_s": "float",
    "data_packets_delivered": "int",
    "data_packets_delivered_per_wall_s": "float",
    "packets_created": "int",
    "packets_consumed": "int",
    "packets_in_network": "int",
    "peak_packets_in_network": "int",
    "late_packets": "int",
    "trimmed_headers_delivered": "int",
    # real hosts (the testbed, the socket scheduler)
    "kernel": "str",
    "congestion_controls": "dict",
    "atcp_params": "dict",
    "base_rtt_s": "dict",
    "emulated_delay_s": "float",
    "delay_line": "dict",
    "ecn_threshold": "str",
    "priority_bands": "int",
    "pias_tagged": "dict",
    "feedback": "dict",
    "peer": "str",
    "policy": "str",
    "mean_fct_s": "float",
    "notes": "list",
    "flow_errors": "dict",
    # a sweep's run
    "run_id": "str",
    "swept": "dict",
}

#: The tables a run directory may hold, the first required.
TABLES = ("flows", "links", "queues", "cwnd", "drops", "pfc")

TableLike = Union[pa.Table, "Any"]  # a pyarrow Table or a pandas DataFrame


class RunDirError(ValueError):
    """A summary or a run directory does not follow the contract; the message names the key
    or file."""


def _type_ok(value: Any, ty: str) -> bool:
    if value is None:
        return True
    if ty == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if ty == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if ty == "bool":
        return isinstance(value, bool)
    return isinstance(value, {"str": str, "list": (list, tuple), "dict": dict}[ty])


def make_summary(producer: str, values: dict) -> dict:
    """The summary.json object of a run by ``producer``: ``values`` checked against
    :data:`SUMMARY_KEYS` (an unknown key or a value of the wrong type is an error naming it),
    every key it lacks null, ``schema_version`` and ``producer`` set."""
    if producer not in PRODUCERS:
        raise RunDirError(f"unknown producer {producer!r} (known: {', '.join(PRODUCERS)})")
    unknown = sorted(set(values) - set(SUMMARY_KEYS))
    if unknown:
        raise RunDirError(f"summary key(s) {', '.join(unknown)} not in the run-directory schema (fctlab.rundir)")
    out: dict = {k: None for k in SUMMARY_KEYS}
    for k, v in values.items():
        if isinstance(v, float) and not math.isfinite(v):
            v = None  # JSON has no NaN: an unmeasurable figure is null
        if isinstance(v, tuple):
            v = list(v)
        if not _type_ok(v, SUMMARY_KEYS[k]):
            raise RunDirError(f"summary key {k} = {v!r}: expected {SUMMARY_KEYS[k]} or null")
        out[k] = v
    out["schema_version"] = SCHEMA_VERSION
    out["producer"] = producer
    return out


def _as_table(t: TableLike) -> pa.Table:
    if isinstance(t, pa.Table):
        return _canonical(t)
    return _canonical(pa.Table.from_pandas(t, preserve_index=False))


def _canonical(t: pa.Table) -> pa.Table:
    """`t` with each dictionary column (`tag`, `group`) in one chunk whose dictionary holds the
    values it uses in the order they first appear: the same rows give the same Parquet bytes
    however the batches that made them were cut (Parquet stores a column's dictionary as
    given, unused values and order included)."""
    dict_columns = [i for i, f in enumerate(t.schema) if pa.types.is_dictionary(f.type)]
    if not dict_columns:
        return t
    t = t.unify_dictionaries().combine_chunks()
    for i in dict_columns:
        col = t.column(i)
        arr = col.chunk(0) if col.num_chunks else pa.nulls(0, type=col.type)
        used = pc.unique(arr.indices).drop_null()
        indices = pc.index_in(arr.indices, value_set=used).cast(arr.type.index_type)
        t = t.set_column(i, t.field(i), pa.DictionaryArray.from_arrays(indices, arr.dictionary.take(used)))
    return t


def _umask() -> int:
    """The process's umask (read by setting it, then set back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: Seconds to pause after each file written (tests use it to interrupt a write midway).
_PAUSE_ENV = "FCTLAB_TEST_WRITE_PAUSE_S"


@contextlib.contextmanager
def _signals_held():
    """SIGINT and SIGTERM held back (delivered on leaving) on the main thread."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def write_run(
    out_dir: Union[str, os.PathLike],
    producer: str,
    summary: dict,
    flows: Union[TableLike, Path],
    links: Optional[TableLike] = None,
    queues: Optional[TableLike] = None,
    cwnd: Optional[TableLike] = None,
    drops: Optional[TableLike] = None,
    pcaps: Sequence[tuple[str, bytes]] = (),
    pcap_hosts: Optional[str] = None,
    pfc: Optional[TableLike] = None,
) -> Path:
    """Writes a run directory: the tables given (``flows`` may be the path of a file a
    :class:`fctlab.rowstream.RowStream` wrote, moved into place), summary.json from :func:`make_summary`, and
    each packet capture ``(name, pcap bytes)`` as ``pcap/<file name>`` (:func:`pcap_file_name`),
    with ``pcap_hosts`` (the hosts' addresses) as ``pcap/hosts``. Returns the directory.

    The files are written into a temporary directory first and moved into place at the end,
    with Ctrl-C and SIGTERM held back for the moves: an interrupted write leaves the directory
    as it was (absent, or the previous run's files), never half-written. A new directory is
    renamed into place whole; in an existing one the run's files are replaced, and run files
    of an earlier run that this one does not write (a ``queues.parquet`` it did not sample)
    are removed. Other files in the directory are left alone."""
    doc = make_summary(producer, summary)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out} exists and is not a directory")
    fresh = not out.exists()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.writing-", dir=out.parent if fresh else out))
    if fresh:  # renamed into place: as a directory made with the umask (mkdtemp makes it 0700)
        os.chmod(tmp, 0o777 & ~_umask())
    pause = float(os.environ.get(_PAUSE_ENV) or 0)
    try:
        if isinstance(flows, Path):  # written while the run went on (fctlab.rowstream.RowStream)
            os.replace(flows, tmp / "flows.parquet")
            flows = None
            time.sleep(pause)
        tables = (
            ("flows", flows),
            ("links", links),
            ("queues", queues),
            ("cwnd", cwnd),
            ("drops", drops),
            ("pfc", pfc),
        )
        for name, table in tables:
            if table is not None:
                pq.write_table(_as_table(table), tmp / f"{name}.parquet")
                time.sleep(pause)
        if pcaps:
            (tmp / "pcap").mkdir()
            for name, data in pcaps:
                f = tmp / "pcap" / pcap_file_name(name)
                k = 1
                while f.exists():  # two names alike once made file names ("a-b" and "a->b")
                    k += 1
                    f = f.with_name(f"{pcap_file_name(name)[:-5]}-{k}.pcap")
                f.write_bytes(data)
            if pcap_hosts is not None:
                (tmp / "pcap" / "hosts").write_text(pcap_hosts, encoding="utf-8")
        with open(tmp / "summary.json", "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2, sort_keys=True)
            f.write("\n")
        with _signals_held():
            if fresh:
                os.replace(tmp, out)
            else:
                written = {p.name for p in tmp.iterdir()}
                if (out / "pcap").is_dir():
                    shutil.rmtree(out / "pcap")
                if "pcap" in written:
                    os.replace(tmp / "pcap", out / "pcap")
                for name in [f"{t}.parquet" for t in TABLES] + ["summary.json"]:
                    if name in written:
                        os.replace(tmp / name, out / name)  # summary.json last
                    elif (out / name).exists():
                        (out / name).unlink()
                tmp.rmdir()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def pcap_file_name(name: str) -> str:
    """The file a capture of ``name`` (a host, or a link ``"a->b"``) is written to:
    ``h0.pcap``, ``sw1-h3.pcap``; characters other than letters, digits, ``.``, ``_`` and ``-``
    become ``_``."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in name.replace("->", "-"))
    return f"{safe}.pcap"


def upgrade_summary(raw: dict) -> dict:
    """A summary.json object of any earlier shape in the current one (a current one is only
    checked): a sweep's ``{"summary": ..., "wall_s": ...}``, the testbed's ``"mode"``,
    ns-2.35's ``"simulator"``, the socket scheduler's ``"scenario"``, ``"to"`` and
    ``"errors"``."""
    if raw.get("schema_version") == SCHEMA_VERSION:
        return make_summary(raw.get("producer", ""), {k: v for k, v in raw.items() if k not in ("producer",)})
    d = dict(raw)
    if isinstance(d.get("summary"), dict) and "wall_s" in d:
        d = dict(d["summary"])
    producer = "simulator"
    if d.pop("mode", None) == "testbed":
        producer = "testbed"
    if d.pop("simulator", None) == "ns-2.35":
        producer = "ns-2.35"
    if "to" in d and "scenario" in d:
        producer = "sched"
        d["scenario_file"] = str(d.pop("scenario"))
        d["peer"] = d.pop("to")
        d["flow_errors"] = d.pop("errors", None)
    d.pop("schema_version", None)
    return make_summary(producer, d)


def read_summary(run_dir: Union[str, os.PathLike]) -> dict:
    """summary.json of a run directory in the current shape (see :func:`upgrade_summary`)."""
    path = Path(run_dir) / "summary.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunDirError(f"cannot read {path}: {exc}") from None
    if not isinstance(raw, dict):
        raise RunDirError(f"{path} is not a JSON object")
    try:
        return upgrade_summary(raw)
    except RunDirError as e:
        raise RunDirError(f"{path}: {e}") from None


def check_run_dir(run_dir: Union[str, os.PathLike]) -> list[str]:
    """What in ``run_dir`` breaks the contract (an empty list when nothing does): summary.json
    written in the current shape with every key of its type, and each table present with the
    core's columns, in order and of their types (further columns may follow)."""

    d = Path(run_dir)
    problems = []
    try:
        raw = json.loads((d / "summary.json").read_text(encoding="utf-8"))
        if raw.get("schema_version") != SCHEMA_VERSION:
            problems.append(f"summary.json: schema_version {raw.get('schema_version')!r}, not {SCHEMA_VERSION}")
        if set(raw) != set(SUMMARY_KEYS):
            problems.append(f"summary.json: keys differ from the schema: {sorted(set(raw) ^ set(SUMMARY_KEYS))}")
        make_summary(raw.get("producer"), {k: v for k, v in raw.items() if k in SUMMARY_KEYS})
    except (OSError, ValueError, AttributeError) as e:
        problems.append(f"summary.json: {e}")
    schemas = {name: table_schema(name) for name in TABLES}
    for name, schema in schemas.items():
        f = d / f"{name}.parquet"
        if not f.is_file():
            if name == "flows":
                problems.append("flows.parquet missing")
            continue
        got = pq.read_schema(f)
        head = [(x.name, x.type) for x in got][: len(schema)]
        want = [(x.name, x.type) for x in schema]
        if head != want:
            diff = [f"{a} != {b}" for a, b in zip(head, want) if a != b] or [f"{len(head)} of {len(want)} columns"]
            problems.append(f"{name}.parquet: columns differ from the schema: {'; '.join(diff[:3])}")
    return problems
