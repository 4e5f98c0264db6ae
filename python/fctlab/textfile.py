"""Reading the files a user names (scenarios, sweeps, keys): regular files of at most
:data:`MAX_TEXT_BYTES`, with one-line errors. A device, a pipe that never ends or a
file of gigabytes is refused before it fills the memory."""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: The largest scenario or sweep file read (64 MiB, about 800,000 `[[flows]]` entries); a
#: longer list of flows goes in a trace file, which runs read as they go (docs/workloads.md).
MAX_TEXT_BYTES = 64 << 20


class TextFileError(Exception):
    """A file that cannot be read as a text file; the message names it."""


def read_text(path: "str | os.PathLike", what: str) -> str:
    """The text of `path`, as UTF-8 (`what`: "scenario file", "sweep file", for the messages)."""
    data = read_bytes(path, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TextFileError(f"{_shown(Path(path))}: not a text (UTF-8) file (byte {e.start})") from None


def _shown(p: Path) -> str:
    return str(p) if len(str(p)) <= 200 else str(p)[:200] + "..."


def read_bytes(path: "str | os.PathLike", what: str, limit: int = MAX_TEXT_BYTES) -> bytes:
    """The bytes of `path`, a regular file of at most `limit` bytes (`what`, e.g. "key file",
    for the messages)."""
    p = Path(path)
    shown = _shown(p)
    try:
        with open(p, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise TextFileError(f"{shown}: not a regular file, expected a {what}")
            if st.st_size > limit:
                raise TextFileError(_too_large(shown, what, st.st_size, limit))
            data = f.read(limit + 1)
    except FileNotFoundError:
        raise TextFileError(f"{shown}: no such {what}") from None
    except IsADirectoryError:
        raise TextFileError(f"{shown}: is a directory, expected a {what}") from None
    except OSError as e:
        raise TextFileError(f"{shown}: cannot read it ({e.strerror or e})") from None
    if len(data) > limit:  # it grew while being read
        raise TextFileError(_too_large(shown, what, len(data), limit))
    return data


def _too_large(shown: str, what: str, size: int, limit: int) -> str:
    if limit != MAX_TEXT_BYTES:
        return f"{shown}: {size:,} bytes, more than a {what} may hold ({limit:,} bytes)"
    return (
        f"{shown}: {size:,} bytes, more than a {what} may hold ({MAX_TEXT_BYTES >> 20} MiB); "
        "list many flows in a trace file (docs/workloads.md)"
    )
