"""The Python API: run or validate a scenario, get DataFrames back, write result files."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence, Union

from . import _core
from .numfmt import count, seconds
from .schemas import table_schema as _schema
from .rowstream import RowStream
from .textfile import TextFileError, read_text

if TYPE_CHECKING:  # annotations only
    import pyarrow as pa

# pyarrow (and pandas, for DataFrames) load on first use, so that `fctlab validate` and
# `import fctlab` stay fast.

ScenarioError = _core.ScenarioError

ScenarioLike = Union[str, os.PathLike, Mapping[str, Any]]


#: The result tables' schemas (columns documented in docs/results.md), from the core:
#: ``FLOW_SCHEMA``, ``LINK_SCHEMA``, ``QUEUE_SCHEMA``, ``CWND_SCHEMA``, ``DROP_SCHEMA``,
#: ``PFC_SCHEMA`` (built on first use).
_SCHEMA_NAMES = {
    "FLOW_SCHEMA": "flows",
    "LINK_SCHEMA": "links",
    "QUEUE_SCHEMA": "queues",
    "CWND_SCHEMA": "cwnd",
    "DROP_SCHEMA": "drops",
    "PFC_SCHEMA": "pfc",
}


def __getattr__(name: str):
    if name in _SCHEMA_NAMES:
        schema = _schema(_SCHEMA_NAMES[name])
        globals()[name] = schema
        return schema
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _table(columns: Optional[list], schema):
    """A table from the core's columns: per column its Arrow buffers (length, null count,
    validity bitmap, offsets, values, and a label column's strings), wrapped without copying
    into pyarrow arrays."""
    if columns is None:
        return None
    import pyarrow as pa  # lazy: pyarrow costs 80 ms of start-up (`import fctlab`, `fctlab validate`)

    def array(type_, length, nulls, validity, offsets, data, dictionary):
        if length == 0:
            # (not `pa.array([])`: converting a Python list imports pandas, 130 ms)
            return pa.nulls(0, type=type_)
        buffers = [pa.py_buffer(validity) if validity is not None else None]
        if offsets is not None:
            buffers.append(pa.py_buffer(offsets))
        buffers.append(pa.py_buffer(data))
        if dictionary is None:
            return pa.Array.from_buffers(type_, length, buffers, null_count=nulls)
        indices = pa.Array.from_buffers(type_.index_type, length, buffers, null_count=nulls)
        return pa.DictionaryArray.from_arrays(indices, array(type_.value_type, *dictionary))

    arrays = [array(field_.type, *column) for field_, column in zip(schema, columns)]
    return pa.Table.from_arrays(arrays, schema=schema)


def _flows_table(batches: list, rest: list):
    """The flows table from the rows handed out during the run (`batches`, in the order the
    flows finished) and the rest, in the order of the scenario (by `flow_id`)."""
    schema = _schema("flows")
    table = _table(rest, schema)
    if not batches:
        return table
    import pyarrow as pa  # lazy: pyarrow costs 80 ms of start-up (`import fctlab`, `fctlab validate`)

    tables = [_table(b, schema) for b in batches]
    batches.clear()
    return pa.concat_tables([*tables, table]).sort_by("flow_id")


@dataclass(frozen=True)
class PcapCapture:
    """One packet capture of a run (``[monitor] pcap``): the host or link it captured, the
    classic pcap file's bytes, the packets in it, and the packets in its time window that
    ``pcap_max_packets`` left out."""

    name: str
    data: bytes = field(repr=False)
    packets: int
    missed: int

    @property
    def file_name(self) -> str:
        """The file's name in a run directory's ``pcap/`` folder."""
        from .rundir import pcap_file_name  # lazy: fctlab.rundir loads pyarrow (80 ms of start-up)

        return pcap_file_name(self.name)


@dataclass
class RunResult:
    """The outcome of one run.

    Attributes
    ----------
    flows : pandas.DataFrame
        One row per flow (columns as in ``flows.parquet``, see ``docs/results.md``).
    links : pandas.DataFrame
        One row per directional link.
    queues : pandas.DataFrame or None
        Queue-length samples, when the scenario asked for them (``[monitor]``).
    cwnd : pandas.DataFrame or None
        Congestion-window traces, when the scenario asked for them (``[monitor]``).
    drops : pandas.DataFrame or None
        Every dropped packet, when the scenario asked for them (``[monitor] drops``).
    pfc : pandas.DataFrame or None
        Every pause and resume of priority flow control, when the network is lossless
        (``[network] pfc = true``, docs/lossless.md).
    pcaps : list of PcapCapture
        Packet captures (``[monitor] pcap``): name, pcap file bytes, packets, missed.
    pcap_hosts : str or None
        With captures: every host's IPv4 address in them, as a hosts file (``10.0.0.3 s0``).
    summary : dict
        Whole-run figures (``summary.json``).
    flows_file : pathlib.Path or None
        ``flows.parquet``, when the run wrote its flows there as they finished (``fctlab run``);
        ``flows_table`` is then None and ``flows`` reads the file.
    """

    flows_table: "pa.Table"
    links_table: "pa.Table"
    queues_table: "Optional[pa.Table]"
    summary: dict
    cwnd_table: "Optional[pa.Table]" = None
    drops_table: "Optional[pa.Table]" = None
    pfc_table: "Optional[pa.Table]" = None
    pcaps: list = field(default_factory=list)
    pcap_hosts: Optional[str] = None
    #: Who produced the run (``fctlab.rundir.PRODUCERS``): the simulator, or ns-2.35 for a
    #: crosscheck's other side.
    producer: str = "simulator"
    #: ``flows.parquet`` when the run wrote its flows there as it went (``fctlab run``), and
    #: ``flows_table`` is None: the table is read from the file when asked for.
    flows_file: Optional[Path] = None
    _cache: dict = field(default_factory=dict, repr=False)

    def _frame(self, name: str):
        """Table `name` (``flows_table``, ...) as a DataFrame, converted once; None when the
        run has no such table."""
        table = getattr(self, f"{name}_table")
        if table is None and name == "flows" and self.flows_file is not None:
            table = self.flows_columns()
        if table is None:
            return None
        if name not in self._cache:
            self._cache[name] = table.to_pandas()
        return self._cache[name]

    @property
    def flows(self):
        return self._frame("flows")

    def flows_columns(self, columns: Optional[Sequence[str]] = None) -> "pa.Table":
        """The flows table (or the ``columns`` given) as an Arrow table, in ``flow_id`` order.

        Read from ``flows_file`` when the run wrote its flows there (``fctlab run``)."""
        if self.flows_table is not None:
            return self.flows_table if columns is None else self.flows_table.select(list(columns))
        import pyarrow.parquet as pq  # lazy: pyarrow costs 80 ms of start-up (`import fctlab`, `fctlab validate`)

        cols = None if columns is None else list(dict.fromkeys(["flow_id", *columns]))
        # (ParquetFile.read, not read_table, which loads pandas.)
        t = pq.ParquetFile(self.flows_file).read(columns=cols).sort_by("flow_id")
        return t if columns is None else t.select(list(columns))

    def flows_batches(self, columns: Optional[Sequence[str]] = None, batch_rows: int = 65_536):
        """The flows table (or the ``columns`` given) as Arrow record batches of at most
        ``batch_rows`` rows, in the order the rows were written (see docs/results.md, "Row
        order"): a pass over every flow that holds one batch at a time."""
        cols = None if columns is None else list(columns)
        if self.flows_table is not None:
            t = self.flows_table if cols is None else self.flows_table.select(cols)
            return iter(t.to_batches(max_chunksize=batch_rows))
        import pyarrow.parquet as pq  # lazy: pyarrow costs 80 ms of start-up (`import fctlab`, `fctlab validate`)

        # (Without pre-buffering: a pre-buffering reader keeps every row group it has read
        # until it is closed.)
        return pq.ParquetFile(self.flows_file, pre_buffer=False).iter_batches(batch_size=batch_rows, columns=cols)

    @property
    def measured(self):
        """The flows the run measures (those that started in its ``[measure]`` window; every
        flow when it has none), as a DataFrame."""
        from .metrics import measured  # lazy: fctlab.metrics loads pandas (250 ms of start-up)

        return measured(self.flows, self.summary)

    @property
    def links(self):
        return self._frame("links")

    @property
    def queues(self):
        return self._frame("queues")

    @property
    def cwnd(self):
        return self._frame("cwnd")

    @property
    def drops(self):
        return self._frame("drops")

    @property
    def pfc(self):
        return self._frame("pfc")

    def figures(self):
        """The run's headline figures (count, FCT mean, median, p99, slowdown) over its measured
        flows, as ``fctlab run``, ``fctlab report`` and ``fctlab compare`` show them: a
        ``fctlab.flowstats.FctSummary`` whose ``label`` says which flows ("measured flows
        (window START–END)" or "all flows") and ``headline()`` puts them in one line."""
        if "figures" not in self._cache:
            from .flowstats import COLUMNS, run_figures  # lazy: fctlab.flowstats loads pyarrow (80 ms of start-up)

            self._cache["figures"] = run_figures(lambda: self.flows_batches(COLUMNS), self.summary)
        return self._cache["figures"]

    def _headline(self) -> list:
        """(label, value) pairs of what a reader looks at first."""
        s = self.summary
        rows = [
            ("scenario", s.get("scenario_name") or s.get("scenario_file") or "?"),
            ("producer", self.producer),
            ("seed", s.get("seed")),
            ("simulated", seconds(s["sim_time_s"]) if s.get("sim_time_s") is not None else "?"),
            ("flows", f"{count(s.get('flows_completed', 0))} of {count(s.get('flows_total', '?'))} completed"),
        ]
        rows.append(("figures", self.figures().headline()))
        rows.append(("drops, ECN marks", f"{count(s.get('drops', 0))}, {count(s.get('ecn_marks', 0))}"))
        if s.get("wall_time_s") is not None:
            rows.append(("wall time", seconds(s["wall_time_s"])))
        tables = ["flows", "links"] + [
            n
            for n, v in (
                ("queues", self.queues_table),
                ("cwnd", self.cwnd_table),
                ("drops", self.drops_table),
                ("pfc", self.pfc_table),
            )
            if v is not None
        ]
        rows.append(("tables", ", ".join(tables)))
        if self.pcaps:
            rows.append(("captures", ", ".join(f"{c.name} ({count(c.packets)} packets)" for c in self.pcaps)))
        return rows

    def __repr__(self) -> str:
        head = dict(self._headline())
        return f"<RunResult {head['scenario']}: {head['figures']}; tables {head['tables']}>"

    def _repr_html_(self) -> str:
        import html  # lazy: html.entities costs 1.5 ms of every `import fctlab`; only notebooks call this

        cells = "".join(
            f"<tr><th style='text-align:left'>{html.escape(str(k))}</th><td style='text-align:left'>{html.escape(str(v))}</td></tr>"
            for k, v in self._headline()
        )
        return f"<table><caption style='text-align:left'><b>fctlab RunResult</b></caption>{cells}</table>"

    def write(self, out_dir: Union[str, os.PathLike]) -> Path:
        """Writes ``flows.parquet``, ``links.parquet``, ``summary.json`` (and ``queues.parquet``,
        ``cwnd.parquet``, ``drops.parquet``, ``pfc.parquet`` and ``pcap/*.pcap`` when the run has them) into
        ``out_dir``, creating it if needed. Returns the directory."""
        from .rundir import write_run  # lazy: fctlab.rundir loads pyarrow (80 ms of start-up)

        out = write_run(
            out_dir,
            self.producer,
            self.summary,
            self.flows_table if self.flows_table is not None else self.flows_file,
            self.links_table,
            self.queues_table,
            self.cwnd_table,
            drops=self.drops_table,
            pfc=self.pfc_table,
            pcaps=[(c.name, c.data) for c in self.pcaps],
            pcap_hosts=self.pcap_hosts,
        )
        if self.flows_table is None and self.flows_file is not None:
            self.flows_file = out / "flows.parquet"  # moved there
        return out


def _format_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_format_value(x) for x in v) + "]"
    raise TypeError(f"cannot use {type(v).__name__} as a scenario override value")


def router_assisted_protocols() -> set:
    """Every name of the protocols whose switches take part (``Protocol::ROUTER_ASSISTED``)."""
    return {n for r in _core.protocols() if r.get("router_assisted") for n in r["names"]}


def overrides_from_kwargs(kwargs: Mapping[str, Any]) -> list[str]:
    """``network__link_rate="10Gbps"`` becomes ``network.link_rate="10Gbps"``."""
    return [f"{k.replace('__', '.')}={_format_value(v)}" for k, v in kwargs.items()]


#: The largest whole number a scenario holds (TOML's integers are signed 64-bit).
_MAX_INT = 2**63 - 1


def _check_plain(value: Any, key: str) -> None:
    """A scenario given as a dict holds only what a scenario file can: names, numbers that are
    finite and whole numbers within TOML's range, booleans, lists and tables; anything else is
    an error naming its key (`flows[0].size`)."""
    where = key or "the scenario"
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ScenarioError(f"<dict>: {where}: keys must be strings, got {k!r}")
            _check_plain(v, f"{key}.{k}" if key else k)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_plain(v, f"{key}[{i}]")
    elif value is None:
        raise ScenarioError(f"<dict>: {where}: None is not a value (leave the key out for its default)")
    elif isinstance(value, bool) or isinstance(value, str):
        return
    elif isinstance(value, int):
        if not -_MAX_INT - 1 <= value <= _MAX_INT:
            raise ScenarioError(
                f"<dict>: {where}: {value} is beyond the largest whole number a scenario holds ({_MAX_INT})"
            )
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ScenarioError(f"<dict>: {where}: {value} is not a finite number")
    else:
        raise ScenarioError(f"<dict>: {where}: a {type(value).__name__} is not a scenario value")


def _source(scenario: ScenarioLike) -> tuple[str, str, str]:
    """Returns (text, display name, format)."""
    if isinstance(scenario, Mapping):
        _check_plain(scenario, "")
        return json.dumps(scenario), "<dict>", "json"
    if not isinstance(scenario, (str, os.PathLike)):
        raise ScenarioError(f"expected a scenario file path or a dict, got {type(scenario).__name__}")
    if isinstance(scenario, str) and "\n" in scenario:
        raise ScenarioError(
            "expected a scenario file path or a dict, got a string of several lines (scenario text?): "
            "write it to a file, or pass tomllib.loads(text)"
        )
    path = Path(scenario)
    try:
        text = read_text(path, "scenario file")
    except TextFileError as e:
        raise ScenarioError(str(e)) from None
    fmt = "json" if path.suffix == ".json" else "toml"
    return text, str(path), fmt


def run(
    scenario: ScenarioLike,
    *,
    set: Sequence[str] = (),
    progress: Optional[Callable[[float, int, int], None]] = None,
    progress_interval_s: float = 0.5,
    unset: Sequence[str] = (),
    **overrides: Any,
) -> RunResult:
    """Runs a scenario and returns its results.

    Parameters
    ----------
    scenario : path or dict
        A scenario file (TOML, or JSON by its ``.json`` suffix) or a dict of the same shape.
    set : sequence of str
        Overrides as ``"key=value"`` strings, exactly as ``fctlab run --set``.
    progress : callable, optional
        Called as ``progress(sim_time_s, flows_completed, flows_total)`` about every
        ``progress_interval_s`` wall seconds (default 0.5).
    progress_interval_s : float
        The reporting interval of ``progress``, wall seconds.
    unset : sequence of str
        Dotted keys to remove after the overrides, exactly as ``fctlab run --unset``
        (``unset=["network.ecn_threshold"]``); a key that is not there is an error.
    **overrides
        Overrides as keywords; ``__`` separates table and key: ``seed=2``,
        ``network__link_rate="10Gbps"``, ``transport__min_rto="10ms"``.

    Returns
    -------
    RunResult

    Raises
    ------
    ScenarioError
        When the scenario is invalid; the message names the file, the key and what was expected.
    """
    return _run(scenario, list(set) + overrides_from_kwargs(overrides), progress, progress_interval_s, list(unset))


def _flows_stream(out_dir: Union[str, os.PathLike]):
    """A :class:`fctlab.rowstream.RowStream` beside ``out_dir`` that turns the core's batches of
    flow rows into tables, for :func:`_run` (``fctlab run --out``, ``fctlab bench``). Its
    thread loads pyarrow while the run goes on."""
    return RowStream(out_dir, lambda cols: _table(cols, _schema("flows")))


def _run(
    scenario: ScenarioLike,
    ov: list,
    progress: Optional[Callable[[float, int, int], None]],
    progress_interval_s: float,
    unset: list,
    flows_stream=None,
) -> RunResult:
    """:func:`run` with its overrides as strings; with ``flows_stream`` (a
    :class:`fctlab.rowstream.RowStream`), the flows go to its file as they finish instead of
    into memory."""
    text, name, fmt = _source(scenario)
    # The rows of flows that finish come out while the run goes on (`list.append` and
    # `SimpleQueue.put`, C calls, cannot be interrupted half-way by Ctrl-C); the core keeps
    # only the others.
    batches: list = []
    on_flows = batches.append if flows_stream is None else flows_stream.put
    raw = _core.run(text, name, fmt, ov, progress, progress_interval_s, unset, on_flows)
    flows_file = None
    if flows_stream is None:
        flows = _flows_table(batches, raw["flows"])
    else:
        flows, flows_file = None, flows_stream.finish(_table(raw["flows"], _schema("flows")))
    links = _table(raw["links"], _schema("links"))
    queues, cwnd = _table(raw["queues"], _schema("queues")), _table(raw["cwnd"], _schema("cwnd"))
    drops = _table(raw["drops"], _schema("drops"))
    pfc = _table(raw["pfc"], _schema("pfc"))
    summary = dict(raw["summary"])
    summary["scenario_file"] = name
    summary["overrides"] = ov
    summary["unset"] = list(unset)
    pcaps = [PcapCapture(n, data, packets, missed) for n, data, packets, missed in raw["pcaps"]]
    return RunResult(
        flows,
        links,
        queues,
        summary,
        cwnd_table=cwnd,
        drops_table=drops,
        pfc_table=pfc,
        pcaps=pcaps,
        pcap_hosts=raw["pcap_hosts"],
        flows_file=flows_file,
    )


def validate(scenario: ScenarioLike, *, set: Sequence[str] = (), unset: Sequence[str] = (), **overrides: Any) -> dict:
    """Checks a scenario without running it; returns a description (hosts, links, flows, the
    resolved TCP settings). ``set`` and ``unset`` as for :func:`run`.

    Raises ``ScenarioError`` with a message naming the file and key on any problem."""
    text, name, fmt = _source(scenario)
    ov = list(set) + overrides_from_kwargs(overrides)
    return _core.validate(text, name, fmt, ov, list(unset))
