"""Where peers are built."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Where peers are built: ``$FCTLAB_CACHE/peers``, else ``~/.cache/fctlab/peers``."""
    root = os.environ.get("FCTLAB_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "fctlab") / "peers"
