"""The Python API: run or validate a scenario, get DataFrames back, write result files."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import pyarrow as pa
import pyarrow.parquet as pq

from . import _core

ScenarioError = _core.ScenarioError

ScenarioLike = Union[str, os.PathLike, Mapping[str, Any]]

FLOW_SCHEMA = pa.schema(
    [
        ("flow_id", pa.int64()),
        ("src", pa.string()),
        ("dst", pa.string()),
        ("size_bytes", pa.int64()),
        ("bytes_delivered", pa.int64()),
        ("start_s", pa.float64()),
        ("finish_s", pa.float64()),
        ("fct_s", pa.float64()),
        ("ideal_fct_s", pa.float64()),
        ("slowdown", pa.float64()),
        ("completed", pa.bool_()),
        ("protocol", pa.string()),
        ("retransmits", pa.int64()),
        ("timeouts", pa.int64()),
        ("deadline_s", pa.float64()),
        ("tag", pa.string()),
        ("group", pa.string()),
        ("packets_sent", pa.int64()),
    ]
)

LINK_SCHEMA = pa.schema(
    [
        ("link_id", pa.int64()),
        ("src", pa.string()),
        ("dst", pa.string()),
        ("level", pa.string()),
        ("rate_bps", pa.float64()),
        ("delay_s", pa.float64()),
        ("buffer_pkts", pa.int64()),
        ("buffer_bytes", pa.int64()),
        ("tx_packets", pa.int64()),
        ("tx_bytes", pa.int64()),
        ("drops", pa.int64()),
        ("ecn_marks", pa.int64()),
        ("utilization", pa.float64()),
        ("max_queue_pkts", pa.int64()),
        ("max_queue_bytes", pa.int64()),
        ("mean_queue_pkts", pa.float64()),
    ]
)

QUEUE_SCHEMA = pa.schema(
    [
        ("time_s", pa.float64()),
        ("link_id", pa.int64()),
        ("link", pa.string()),
        ("queue_pkts", pa.int64()),
        ("queue_bytes", pa.int64()),
    ]
)

CWND_SCHEMA = pa.schema(
    [
        ("time_s", pa.float64()),
        ("flow_id", pa.int64()),
        ("cwnd_bytes", pa.int64()),
        ("ssthresh_bytes", pa.int64()),
        ("rate_bps", pa.float64()),
        ("weight", pa.float64()),
    ]
)


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
    summary : dict
        Whole-run figures (``summary.json``).
    """

    flows_table: pa.Table
    links_table: pa.Table
    queues_table: Optional[pa.Table]
    summary: dict
    cwnd_table: Optional[pa.Table] = None
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def flows(self):
        if "flows" not in self._cache:
            self._cache["flows"] = self.flows_table.to_pandas()
        return self._cache["flows"]

    @property
    def links(self):
        if "links" not in self._cache:
            self._cache["links"] = self.links_table.to_pandas()
        return self._cache["links"]

    @property
    def queues(self):
        if self.queues_table is None:
            return None
        if "queues" not in self._cache:
            self._cache["queues"] = self.queues_table.to_pandas()
        return self._cache["queues"]

    @property
    def cwnd(self):
        if self.cwnd_table is None:
            return None
        if "cwnd" not in self._cache:
            self._cache["cwnd"] = self.cwnd_table.to_pandas()
        return self._cache["cwnd"]

    def write(self, out_dir: Union[str, os.PathLike]) -> Path:
        """Writes ``flows.parquet``, ``links.parquet``, ``summary.json`` (and ``queues.parquet``
        and ``cwnd.parquet`` when sampled) into ``out_dir``, creating it if needed. Returns the
        directory."""
        out = Path(out_dir)
        if out.exists() and not out.is_dir():
            raise NotADirectoryError(f"{out} exists and is not a directory")
        out.mkdir(parents=True, exist_ok=True)
        pq.write_table(self.flows_table, out / "flows.parquet")
        pq.write_table(self.links_table, out / "links.parquet")
        if self.queues_table is not None:
            pq.write_table(self.queues_table, out / "queues.parquet")
        if self.cwnd_table is not None:
            pq.write_table(self.cwnd_table, out / "cwnd.parquet")
        with open(out / "summary.json", "w", encoding="utf-8") as f:
            json.dump(self.summary, f, indent=2, sort_keys=True)
            f.write("\n")
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


def overrides_from_kwargs(kwargs: Mapping[str, Any]) -> list[str]:
    """``network__link_rate="10Gbps"`` becomes ``network.link_rate="10Gbps"``."""
    return [f"{k.replace('__', '.')}={_format_value(v)}" for k, v in kwargs.items()]


def _source(scenario: ScenarioLike) -> tuple[str, str, str]:
    """Returns (text, display name, format)."""
    if isinstance(scenario, Mapping):
        return json.dumps(scenario), "<dict>", "json"
    path = Path(scenario)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario file") from None
    except IsADirectoryError:
        raise ScenarioError(f"{path}: is a directory, expected a scenario file") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{path}: not a text (UTF-8) file") from None
    fmt = "json" if path.suffix == ".json" else "toml"
    return text, str(path), fmt


def _to_tables(raw: dict) -> tuple[pa.Table, pa.Table, Optional[pa.Table]]:
    flows = pa.Table.from_pydict(raw["flows"], schema=FLOW_SCHEMA)
    links = pa.Table.from_pydict(raw["links"], schema=LINK_SCHEMA)
    queues = pa.Table.from_pydict(raw["queues"], schema=QUEUE_SCHEMA) if raw["queues"] is not None else None
    return flows, links, queues


def run(
    scenario: ScenarioLike,
    *,
    set: Sequence[str] = (),
    progress: Optional[Callable[[float, int, int], None]] = None,
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
        Called as ``progress(sim_time_s, flows_completed, flows_total)`` about twice a second.
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
    text, name, fmt = _source(scenario)
    ov = list(set) + overrides_from_kwargs(overrides)
    raw = _core.run(text, name, fmt, ov, progress)
    flows, links, queues = _to_tables(raw)
    cwnd = pa.Table.from_pydict(raw["cwnd"], schema=CWND_SCHEMA) if raw.get("cwnd") is not None else None
    summary = dict(raw["summary"])
    summary["scenario_file"] = name
    summary["overrides"] = ov
    return RunResult(flows, links, queues, summary, cwnd_table=cwnd)


def validate(scenario: ScenarioLike, *, set: Sequence[str] = (), **overrides: Any) -> dict:
    """Checks a scenario without running it; returns a description (hosts, links, flows).

    Raises ``ScenarioError`` with a message naming the file and key on any problem."""
    text, name, fmt = _source(scenario)
    ov = list(set) + overrides_from_kwargs(overrides)
    return _core.validate(text, name, fmt, ov)
