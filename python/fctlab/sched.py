"""SCHED_TCP over real sockets: ``fctlab sched send|recv`` and the Python API.

The Rust library ``fctlab-sched-tokio`` sends each message over a pool of plain TCP
connections (one per message, as TCP would have) and lets a policy (``tcp``, ``srpt``,
``las``, ``fair``, ``priority``) choose which message fills each chunk; the receiver
reassembles and answers each completed message, so the sender measures its transfer time.
A workload comes from a scenario file, the same one the simulator runs: its flows (all
between one pair of hosts) give the sizes, start times and tags. Results are written in the
simulator's flows-table format (``docs/results.md``); see ``docs/schedtcp.md``.

    fctlab sched recv --listen 10.0.0.2:5000 --key-file KEY [--expect N] [--timeout S] [--out DIR]   (any number of senders)
    fctlab sched send SCENARIO --to 10.0.0.2:5000 --key-file KEY [--policy srpt] [--set KEY=VALUE ...] --out DIR

The key (``--key-file PATH``, else the environment variable ``FCTLAB_SCHED_KEY``; at least 16
bytes) authenticates every session's open and every connection's join; without one, ``recv``
listens on loopback addresses only.

Exit status: 0 when every message was delivered, 1 when some failed (each one's error is in
the output), 2 for bad arguments or an unreachable address, 130 when ``recv`` was stopped by
Ctrl-C or SIGTERM (it writes what it received first).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd
import pyarrow as pa

from . import _core
from .api import FLOW_SCHEMA, ScenarioError, _source
from .plan import load, rows_for
from .rundir import write_run
from .textfile import TextFileError, read_bytes

POLICIES = ("tcp", "srpt", "las", "fair", "priority")

__all__ = ["send", "recv", "loopback", "workload", "load_key", "POLICIES"]

#: The environment variable holding the pre-shared key when no ``--key-file`` is given.
KEY_ENV = "FCTLAB_SCHED_KEY"
#: The fewest bytes a key may have, and the most a key file is read for.
KEY_MIN_BYTES = 16
KEY_MAX_BYTES = 4096


def write_sent(out: Path, df: pd.DataFrame, *, scenario: str, peer: str) -> dict:
    """Writes the run directory of a :func:`send` (its flows, an ``error`` column aside) and
    returns its summary."""
    errors = df[df["error"].notna()]
    done = df[df["completed"]]
    summary = {
        "scenario_file": scenario,
        "peer": peer,
        "policy": str(df["scheduler"].iloc[0]) if len(df) else None,
        "flows_total": len(df),
        "flows_started": int(df["start_s"].notna().sum()),
        "flows_completed": len(done),
        "mean_fct_s": float(done["fct_s"].mean()) if len(done) else None,
        "flow_errors": {str(k): e for k, e in zip(errors["flow_id"], errors["error"])},
    }
    flows = pa.Table.from_pandas(df.drop(columns=["error"]), schema=FLOW_SCHEMA, preserve_index=False)
    write_run(out, "sched", summary, flows)
    return summary


class SchedError(ValueError):
    """A workload or argument the scheduling layer cannot use; the message names it."""


def load_key(key_file=None, *, environ=None) -> Optional[bytes]:
    """The pre-shared key: the contents of `key_file` when given, else the environment
    variable ``FCTLAB_SCHED_KEY``, else None. Surrounding whitespace (a file's last newline) is
    not part of it. A file that cannot be read, or a key shorter than 16 bytes, is a
    :class:`SchedError` naming where it came from."""
    environ = os.environ if environ is None else environ
    if key_file is not None:
        where = f"--key-file {key_file}"
        try:
            secret = read_bytes(key_file, "key file", limit=KEY_MAX_BYTES)
        except TextFileError as e:
            raise SchedError(f"--key-file {e}") from None
    elif environ.get(KEY_ENV) is not None:
        where, secret = KEY_ENV, os.fsencode(environ[KEY_ENV])
    else:
        return None
    secret = secret.strip()
    if not secret:
        raise SchedError(f"{where}: empty (a key has at least {KEY_MIN_BYTES} bytes)")
    if len(secret) < KEY_MIN_BYTES:
        raise SchedError(f"{where}: {len(secret)} bytes, a key has at least {KEY_MIN_BYTES}")
    return secret


def workload(scenario, *, set: Sequence[str] = ()) -> dict:
    """The flows of `scenario` as a workload: sizes, start times (s), tags, the one host pair
    they share, and the scenario's ``[transport]`` scheduler settings."""
    _, name, _ = _source(scenario)
    try:
        plan = load(scenario, list(set))
    except ScenarioError as e:
        raise SchedError(str(e)) from None
    flows, sched = plan.flows, plan.scheduler
    if not flows:
        raise SchedError(f"{name}: no flows")
    pairs = sorted({(f.src, f.dst) for f in flows})
    if len(pairs) != 1:
        raise SchedError(
            f"{name}: the flows go between {len(pairs)} host pairs ({', '.join(f'{a}->{b}' for a, b in pairs[:4])}"
            f"{', ...' if len(pairs) > 4 else ''}); `fctlab sched send` carries one pair's flows"
        )
    longs = [f.flow_id for f in flows if f.size_bytes is None]
    if longs:
        raise SchedError(f"{name}: flows {longs[:5]} are long-lived; a scheduled workload needs sizes")
    afters = [f.flow_id for f in flows if f.after]
    if afters:
        raise SchedError(
            f"{name}: flows {afters[:5]} wait for a group; `fctlab sched send` starts flows at fixed times"
        )
    return {
        "sizes": [int(f.size_bytes) for f in flows],
        "starts_s": [float(f.start_s) for f in flows],
        "tags": [f.tag for f in flows],
        "src": pairs[0][0],
        "dst": pairs[0][1],
        "scheduler": sched["policy"] if sched else "tcp",
    }


def classes(tags: Sequence[str], priority_tags: Sequence[str]) -> list:
    """Each tag's class under ``priority``: its place in `priority_tags`, unlisted tags last
    (as the simulator's ``[transport] priority_tags``)."""
    order = {t: i for i, t in enumerate(priority_tags)}
    return [order.get(t, len(priority_tags)) for t in tags]


def _flows_table(
    reports: list, sizes: Sequence[int], tags: Sequence[str], src: str, dst: str, policy: str
) -> pd.DataFrame:
    """Sender reports as rows of the flows table (times from the first start)."""
    t0 = min((r["start_unix_s"] for r in reports), default=0.0)
    rows = []
    for r in reports:
        k = r["index"]
        ok = r["error"] is None
        start = r["start_unix_s"] - t0
        # What the library measures; the other columns of the flows table are null (rows_for).
        measured = {
            "flow_id": k,
            "src": src,
            "dst": dst,
            "size_bytes": sizes[k],
            "bytes_delivered": sizes[k] if ok else None,
            "start_s": start,
            "finish_s": start + r["transfer_s"] if ok else None,
            "fct_s": r["transfer_s"] if ok else None,
            "completed": ok,
            "protocol": "tcp",
            "tag": tags[k],
            "group": "",
            "scheduler": policy,
        }
        row = rows_for(FLOW_SCHEMA, [measured], where="fctlab sched flows")[0]
        row["error"] = r["error"]
        rows.append(row)
    return pd.DataFrame(rows, columns=[*FLOW_SCHEMA.names, "error"])


def loopback(
    sizes: Sequence[int],
    starts_s: Sequence[float],
    *,
    policy: str = "srpt",
    tags: Optional[Sequence[str]] = None,
    priority_tags: Sequence[str] = (),
    priority_then: str = "las",
    chunk_bytes: int = 16384,
    send_buffer_bytes: Optional[int] = None,
    timeout_s: float = 60.0,
) -> pd.DataFrame:
    """Runs a workload over loopback in this process (a receiver and a sender) and returns
    one row per message in the flows-table format, plus an ``error`` column (None when the
    message arrived byte-identical)."""
    tags = list(tags) if tags is not None else [""] * len(sizes)
    sent, got = _core.sched_loopback(
        [int(s) for s in sizes],
        [float(t) for t in starts_s],
        classes(tags, priority_tags),
        policy,
        priority_then,
        int(chunk_bytes),
        send_buffer_bytes,
        float(timeout_s),
    )
    df = _flows_table(sent, sizes, tags, "127.0.0.1", "127.0.0.1", policy)
    bad = {
        k: d["error"]
        for d in got["rows"]
        if d["error"] and d["kind"] != "refused"
        for k in range(d["message"], d["last_message"] + 1)
    }
    if bad:
        df["error"] = [bad.get(k) or e for k, e in zip(df["flow_id"], df["error"])]
        df["completed"] = df["error"].isna()
    return df


def send(
    to: str,
    scenario,
    *,
    set: Sequence[str] = (),
    policy: Optional[str] = None,
    chunk_bytes: int = 16384,
    send_buffer_bytes: Optional[int] = None,
    timeout_s: float = 30.0,
    key: Optional[bytes] = None,
) -> pd.DataFrame:
    """Sends the flows of `scenario` to the receiver at `to` ("HOST:PORT") under `policy`
    (default: the scenario's ``[transport] scheduler``, else tcp), authenticated with the
    pre-shared `key` (see :func:`load_key`; None: the receiver must not require one)."""
    w = workload(scenario, set=set)
    policy = policy or w["scheduler"]
    if policy not in POLICIES:
        raise SchedError(f"--policy: unknown policy {policy!r} (known: {', '.join(POLICIES)})")
    try:
        reports = _core.sched_send(
            to,
            w["sizes"],
            w["starts_s"],
            [0] * len(w["sizes"]),
            policy,
            "las",
            int(chunk_bytes),
            send_buffer_bytes,
            float(timeout_s),
            key,
        )
    except ValueError as e:
        raise SchedError(str(e)) from None
    return _flows_table(reports, w["sizes"], w["tags"], w["src"], w["dst"], policy)


#: Columns of what :func:`recv` returns.
RECEIVED_COLUMNS = ["kind", "session", "message", "last_message", "size_bytes", "completed_unix_s", "error"]


def recv(
    listen: str,
    *,
    expect: Optional[int] = None,
    timeout_s: Optional[float] = None,
    verify: bool = True,
    read_timeout_s: float = 10.0,
    max_connections: int = 1024,
    max_buffered_bytes: int = 64 << 20,
    max_total_buffered_bytes: int = 512 << 20,
    max_sessions: int = 8,
    key: Optional[bytes] = None,
) -> pd.DataFrame:
    """Receives on `listen` ("HOST:PORT") from any number of senders (one session each)
    until `expect` announced messages were delivered or failed, `timeout_s` passed (None: no
    limit), or Ctrl-C / SIGTERM (with the handler :func:`run` installs). With the pre-shared
    `key` (see :func:`load_key`) every open and join must prove it; without one, `listen` must
    be a loopback address. One row per delivered, failed or refused message or frame
    (``kind``, ``session``, ``message``, ``last_message``, ``size_bytes``,
    ``completed_unix_s``, ``error``), where a failed row covers messages ``message`` to
    ``last_message``: a run of 16 or more none of whose bytes came when their session ended;
    ``df.attrs`` holds ``sessions`` (one dict each), ``counters``, ``interrupted`` and
    ``peak_rss_bytes`` (this process's peak resident memory, from /proc/self/status)."""
    try:
        got = _core.sched_recv(
            listen,
            expect,
            None if timeout_s is None else float(timeout_s),
            bool(verify),
            float(read_timeout_s),
            int(max_buffered_bytes),
            int(max_connections),
            key,
            int(max_total_buffered_bytes),
            int(max_sessions),
        )
    except ValueError as e:
        raise SchedError(str(e)) from None
    df = pd.DataFrame(got["rows"], columns=RECEIVED_COLUMNS)
    df["message"] = df["message"].astype("Int64")
    df["last_message"] = df["last_message"].astype("Int64")
    df.attrs.update(
        sessions=got["sessions"], counters=got["counters"], interrupted=got["interrupted"], peak_rss_bytes=_peak_rss()
    )
    return df


def _peak_rss() -> Optional[int]:
    """This process's peak resident memory (VmHWM), bytes; None where /proc is not there."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def write_received(out: Path, df: pd.DataFrame) -> None:
    """``received.parquet`` (the rows) and ``receiver.json`` (sessions and counters) in `out`,
    each written whole or not at all."""
    out.mkdir(parents=True, exist_ok=True)
    for name, write in (
        ("received.parquet", lambda p: df.to_parquet(p, index=False)),
        (
            "receiver.json",
            lambda p: p.write_text(
                json.dumps(
                    {k: df.attrs.get(k) for k in ("sessions", "counters", "interrupted", "peak_rss_bytes")}, indent=2
                )
            ),
        ),
    ):
        tmp = out / f".{name}.tmp"
        write(tmp)
        os.replace(tmp, out / name)


# --------------------------------------------------------------------------- CLI


def configure(p) -> None:
    p.description = "SCHED_TCP over real sockets: schedule a workload's messages over a pool of TCP connections."
    sub = p.add_subparsers(dest="sched_command", metavar="send|recv")
    r = sub.add_parser("recv", help="receive messages from any number of senders and report each one")
    r.add_argument("--listen", required=True, metavar="HOST:PORT", help="address to listen on")
    r.add_argument(
        "--expect", type=int, default=None, help="stop after this many announced messages (delivered or failed)"
    )
    r.add_argument(
        "--timeout", type=float, default=None, metavar="S", help="stop after this many seconds (default: no limit)"
    )
    r.add_argument(
        "--read-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="longest silence of a connection inside a frame or of a session's heartbeats (default 10)",
    )
    r.add_argument(
        "--max-connections", type=int, default=1024, metavar="N", help="connections held at once (default 1024)"
    )
    r.add_argument(
        "--max-buffered",
        type=int,
        default=64 << 20,
        metavar="BYTES",
        help="bytes of incomplete messages one session may hold (default 64 MiB; a message may have half)",
    )
    r.add_argument(
        "--max-total-buffered",
        type=int,
        default=512 << 20,
        metavar="BYTES",
        help="bytes of incomplete messages all sessions may hold (default 512 MiB)",
    )
    r.add_argument("--max-sessions", type=int, default=8, metavar="N", help="sessions open at once (default 8)")
    _key_argument(r)
    r.add_argument("--out", default=None, metavar="DIR", help="write received.parquet and receiver.json here")
    s = sub.add_parser("send", help="send a scenario's flows as messages")
    s.add_argument("scenario", help="scenario file whose flows (one host pair) make the workload")
    s.add_argument("--to", required=True, metavar="HOST:PORT", help="the receiver's address")
    s.add_argument(
        "--policy",
        default=None,
        choices=POLICIES,
        help="scheduling policy (default: the scenario's [transport] scheduler, else tcp)",
    )
    s.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario key (repeatable)")
    s.add_argument("--chunk", type=int, default=16384, metavar="BYTES", help="payload bytes per chunk (default 16384)")
    s.add_argument(
        "--send-buffer",
        type=int,
        default=None,
        metavar="BYTES",
        help="each socket's send buffer (default: the kernel's)",
    )
    s.add_argument(
        "--timeout", type=float, default=30.0, metavar="S", help="longest wait for a connection, a write or the notices"
    )
    _key_argument(s)
    s.add_argument("--out", required=True, metavar="DIR", help="write flows.parquet and summary.json here")


def _key_argument(p) -> None:
    p.add_argument(
        "--key-file",
        default=None,
        metavar="PATH",
        help=f"file holding the pre-shared key (default: the environment variable {KEY_ENV}; "
        "without a key, recv listens on loopback only)",
    )


def _run_recv(args) -> int:
    """``fctlab sched recv``: serves until --expect, --timeout or Ctrl-C (SIGINT) / SIGTERM,
    then writes what it received (exit 130 when interrupted). Both signals get this handler,
    SIGINT too: a process started in the background by a shell has it ignored, and then
    `kill -INT` would not stop it as documented."""

    def stop(signum, frame):
        raise KeyboardInterrupt

    key = load_key(args.key_file)
    before = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        df = recv(
            args.listen,
            expect=args.expect,
            timeout_s=args.timeout,
            read_timeout_s=args.read_timeout,
            max_connections=args.max_connections,
            max_buffered_bytes=args.max_buffered,
            max_total_buffered_bytes=args.max_total_buffered,
            max_sessions=args.max_sessions,
            key=key,
        )
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    kinds = df["kind"].value_counts()
    delivered = int(kinds.get("delivered", 0))
    fails = df[df["kind"] == "failed"]
    failed = int((fails["last_message"] - fails["message"] + 1).sum())
    bad = int(df.loc[df["kind"] == "delivered", "error"].notna().sum())
    counters, sessions = df.attrs["counters"], df.attrs["sessions"]
    print(
        f"received {delivered - bad} messages in {len(sessions)} session{'s' * (len(sessions) != 1)}, "
        f"{failed + bad} errors; "
        f"{counters['refused']} frames or connections refused ({counters['forged_opens']} forged opens, "
        f"{counters['forged_joins']} forged joins, {counters['replayed_joins']} replayed joins), "
        f"{counters['evicted']} connections and {counters['sessions_evicted']} idle sessions closed to make room"
    )
    for e in df.loc[df["kind"] != "refused", "error"].dropna()[:10]:
        print(f"  error: {e}")
    for e in df.loc[df["kind"] == "refused", "error"][:5]:
        print(f"  refused: {e}")
    if args.out:
        write_received(Path(args.out), df)
        print(f"wrote {args.out}/received.parquet")
    if df.attrs["interrupted"]:
        print("fctlab sched recv: interrupted; open sessions abandoned", file=sys.stderr)
        return 130
    return 1 if failed + bad else 0


def run(args) -> int:
    if args.sched_command is None:
        print("fctlab sched: error: expected `send` or `recv`", file=sys.stderr)
        return 2
    try:
        if args.sched_command == "recv":
            return _run_recv(args)
        df = send(
            args.to,
            args.scenario,
            set=list(args.set or []),
            policy=args.policy,
            chunk_bytes=args.chunk,
            send_buffer_bytes=args.send_buffer,
            timeout_s=args.timeout,
            key=load_key(args.key_file),
        )
    except (SchedError, OSError) as e:
        print(f"fctlab sched {args.sched_command}: error: {e}", file=sys.stderr)
        return 2
    out = Path(args.out)
    summary = write_sent(out, df, scenario=str(args.scenario), peer=args.to)
    errors, done = df[df["error"].notna()], df[df["completed"]]
    print(
        f"sent {len(df)} messages under {summary['policy']}: {len(done)} completed"
        + (f", mean transfer time {summary['mean_fct_s']:.3f} s" if len(done) else "")
        + f"; wrote {out}/flows.parquet"
    )
    for k, e in list(summary["flow_errors"].items())[:10]:
        print(f"  message {k}: {e}")
    return 1 if len(errors) else 0
