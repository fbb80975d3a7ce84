"""Per-code-point tables built from this Python's ``unicodedata``, kept on disk between processes.

Building them takes 50-150 ms of every start (a pass over 0x110000 code points); loading the saved
arrays takes ~1 ms. They are stored beside numba's cache (``__pycache__`` of this package, or
``$NUMBA_CACHE_DIR``), named by the Unicode version and the table's format, written atomically;
where nothing can be written they are built in memory, as before.
"""

from __future__ import annotations

import os
import tempfile
import unicodedata
from collections.abc import Callable
from pathlib import Path

import numpy as np


def _cache_dir() -> Path:
    root = os.environ.get("NUMBA_CACHE_DIR")
    return Path(root) / "stream-text" if root else Path(__file__).parent / "__pycache__"


def cached_arrays(name: str, build: Callable[[], tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """``build()``'s arrays, loaded (read-only) from the cache when saved by an earlier process.
    ``name`` must change whenever what ``build`` computes does (the Unicode version is added here)."""
    stem = f"{name}-unicode{unicodedata.unidata_version}"
    folder = _cache_dir()
    try:
        count = int((folder / f"{stem}.count").read_text())
        # memory-mapped, read-only: a start reads only the pages its documents touch (the
        # dictionary's arrays are ~26 MB)
        return tuple(np.load(folder / f"{stem}.{i}.npy", mmap_mode="r") for i in range(count))
    except (OSError, ValueError):
        pass
    arrays = build()
    for array in arrays:  # read-only like the loaded ones: one numba signature, compiled once, not twice
        array.setflags(write=False)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for i, array in enumerate(arrays):
            _write(folder / f"{stem}.{i}.npy", array)
        _write_text(folder / f"{stem}.count", str(len(arrays)))  # last: marks the set complete
    except OSError:
        pass  # a read-only install: build again next time
    return arrays


def _write(path: Path, array: np.ndarray) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as handle:
        np.save(handle, array)
    os.replace(tmp, path)


def _write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)
