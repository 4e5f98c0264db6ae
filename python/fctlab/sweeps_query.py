"""`fctlab query DIR "SQL"`: SQL (DuckDB) over a sweep's store (docs/sweeps.md).

A module of its own, which imports only DuckDB: the command starts in well under a second
(no pandas, no pyarrow), and ``fctlab.query``, the function, is not shadowed. The Python API,
:func:`fctlab.sweeps.query`, opens the store the same way and returns a DataFrame.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from ._extras import extra
from .sweepstore import check_store, refusal

#: The store's tables besides ``runs``: each run's files under ``flows/run_id=<id>/``.
TABLES = ("flows", "links", "queues", "cwnd", "drops", "pfc")


class QueryError(ValueError):
    """A query that cannot run; the message says why in one line."""


def _literal(path: Path) -> str:
    # a path is data, not SQL: quoted as a string literal, quotes doubled
    return "'" + path.as_posix().replace("'", "''") + "'"


def execute(directory: "str | os.PathLike", sql: str):
    """Runs `sql` over the store in `directory`: returns (connection, result) of DuckDB."""
    if not isinstance(sql, str) or not sql.strip():
        raise QueryError('query: no SQL given (e.g. "SELECT count(*) FROM flows")')
    con, finished = connect(directory)
    if not finished and re.search(r"\bflows\b", sql, re.IGNORECASE):
        d = Path(directory)
        n = con.execute("SELECT count(*) FROM runs").fetchone()[0]
        raise QueryError(
            f"{d}: the store has no finished runs yet (runs.parquet lists {n}"
            + ("; failed.json says why they failed)" if (d / "failed.json").is_file() else ")")
        )
    with extra("query"):
        import duckdb  # lazy: loaded by connect already

    try:
        result = con.execute(sql)
    except duckdb.Error as e:
        raise QueryError(f"query: {str(e).splitlines()[0]}") from None
    if result.description is None:  # a statement that returns no table
        raise QueryError("query: the SQL returns no table (use a SELECT)")
    return con, result


def connect(directory: "str | os.PathLike"):
    """A DuckDB connection with the store's tables as views, once the store verifies: returns
    (connection, whether any run finished)."""
    with extra("query"):
        import duckdb  # lazy: duckdb costs 130 ms of start-up
    d = Path(directory)
    if not (d / "runs.parquet").is_file():
        raise QueryError(f"{d}: not a sweep directory (no runs.parquet)")
    problems, runs = check_store(d)
    if problems:
        raise QueryError(refusal(d, problems))
    # runs, and the runs' tables (flows and links; queues, cwnd and drops when sampled): the
    # files of the runs the store's manifest lists, each checked
    views = {"runs": [d / "runs.parquet"]}
    for table in TABLES:
        files = [
            d / "flows" / f"run_id={r}" / f"{table}.parquet" for r, names in runs.items() if f"{table}.parquet" in names
        ]
        if files:
            views[table] = files
    con = duckdb.connect()
    for table, files in views.items():
        listed = "[" + ", ".join(_literal(f) for f in files) + "]"
        try:
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet({listed}, union_by_name = true)")
        except duckdb.Error as e:  # a file DuckDB cannot read: named, in one line
            where = next((f for f in files if str(f) in str(e)), files[0] if len(files) == 1 else table)
            raise QueryError(f"{where}: cannot read it: {str(e).splitlines()[0]}") from None
    return con, bool(runs)


def _cell(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, float):
        return "NaN" if v != v else f"{v:.6g}"
    return str(v)


def format_table(columns: list, rows: list) -> str:
    """Rows as an aligned text table (numbers to the right), as `fctlab query` prints them."""
    cells = [[_cell(v) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    numeric = [all(isinstance(r[i], (int, float)) or r[i] is None for r in rows) for i in range(len(columns))]
    line = lambda vals: " ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(vals, widths, numeric))  # noqa: E731
    return "\n".join([line(columns).rstrip()] + [line(r).rstrip() for r in cells])


def configure(p) -> None:
    p.description = "Run SQL (DuckDB) over a sweep directory: tables runs, flows, links (and queues, cwnd)."
    p.add_argument("directory", help="a directory written by fctlab sweep")
    p.add_argument("sql", help='the query, e.g. "SELECT protocol, count(*) FROM flows GROUP BY 1"')
    p.add_argument("--out", default=None, help="write the result to a .csv or .parquet file instead of printing it")


def run(args) -> int:
    try:
        con, result = execute(args.directory, args.sql)
        columns = [c[0] for c in result.description]
        rows = result.fetchall()
    except QueryError as e:
        print(f"fctlab query: error: {e}", file=sys.stderr)
        return 2
    if args.out:
        out = Path(args.out)
        if not out.parent.is_dir():
            print(f"fctlab query: error: cannot write {args.out}: no such directory {out.parent}", file=sys.stderr)
            return 2
        fmt = "PARQUET" if args.out.endswith(".parquet") else "CSV, HEADER"
        try:
            con.execute(f"COPY ({args.sql.strip().rstrip(';')}) TO {_literal(out)} (FORMAT {fmt})")
        except Exception as e:  # noqa: BLE001 - DuckDB's IO errors: one line
            print(f"fctlab query: error: cannot write {args.out}: {str(e).splitlines()[0]}", file=sys.stderr)
            return 2
        print(f"wrote {len(rows)} rows to {args.out}")
    else:
        print(format_table(columns, rows))
    return 0
