"""A worker's data dir: checked and locked before anything is opened in it.

One clear message (``ConfigError``: exit 3) instead of a traceback for a data dir that is a file,
cannot be created, is not writable, or is in use by another worker (an exclusive ``flock`` held for the
worker's life: RocksDB's own locks would only fail later, inside Faust, after 30 s of retries).
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path
from typing import IO

from stream.errors import ConfigError

LOCK_FILE = "dedup.lock"


class DataDirLock:
    """The claim on a data dir; ``release`` (or process exit) gives it up."""

    def __init__(self, path: Path, handle: IO[str]) -> None:
        self.path, self._handle = path, handle

    def release(self) -> None:
        self._handle.close()


def claim_data_dir(path: Path) -> DataDirLock:
    """Create ``path`` if its parent exists, check it is a writable directory, and lock it."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"data dir {path} is a file, not a directory (choose another --data-dir)")
    if not path.exists():
        if not path.parent.is_dir():
            raise ConfigError(f"data dir {path} does not exist and neither does {path.parent} (create it, or "
                              "choose another --data-dir)")
        try:
            path.mkdir()
        except OSError as exc:
            raise ConfigError(f"data dir {path} cannot be created: {exc.strerror}") from None
    try:
        tempfile.TemporaryFile(dir=path).close()
    except OSError as exc:
        raise ConfigError(f"data dir {path} is not writable: {exc.strerror}") from None
    handle = open(path / LOCK_FILE, "a+", encoding="utf-8")  # noqa: SIM115 (held for the worker's life)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        owner = handle.read().strip() or "?"
        handle.close()
        raise ConfigError(f"data dir {path} is in use by another worker (pid {owner}); give each worker its "
                          "own --data-dir") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return DataDirLock(path, handle)
