"""Worker logs: one format for every library (Faust, aiokafka, librdkafka, ours), rate-limited repeats.

While the broker is unreachable, aiokafka and librdkafka log the same few lines dozens of times a
second. ``RepeatLimit`` lets the first record of a kind through, then at most one every ``window``
seconds, carrying how many were held back. ``--log-format json`` writes one JSON object a line (time,
level, logger, message, and the partition/offset where a record has them); the text format has no
terminal escape codes.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

LIBRDKAFKA_LOGGER = "dedup.librdkafka"  # the logger stream.service.settings gives every librdkafka client
TEXT_FORMAT = "[%(asctime)s] [%(process)d] [%(levelname)s] %(name)s: %(message)s"


class RepeatLimit(logging.Filter):
    """Pass the first record of each (logger, level, message template), then at most one per
    ``window`` seconds, with the number held back since the last one appended."""

    def __init__(self, window: float = 5.0, clock: Any = time.monotonic) -> None:
        super().__init__()
        self.window, self.clock = window, clock
        self._last: dict[tuple[str, int, str], float] = {}
        self._held: dict[tuple[str, int, str], int] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, str(record.msg))
        now = self.clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.window:
                self._held[key] = self._held.get(key, 0) + 1
                return False
            self._last[key] = now
            held = self._held.pop(key, 0)
            if len(self._last) > 10_000:  # templates are few; this only bounds a pathological logger
                self._last.clear()
        if held:
            record.msg = f"{record.msg} [{held} more like this in the last {now - (last or now):.0f} s]"
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}",
            "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage(),
        }
        for name in ("topic", "partition", "offset"):
            if hasattr(record, name):
                entry[name] = getattr(record, name)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure(root: logging.Logger, log_format: str, window: float = 5.0) -> None:
    """Give every handler of ``root`` our formatter and the repeat limit (called once Faust has set
    up its handlers)."""
    formatter: logging.Formatter = JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    limit = RepeatLimit(window)
    for handler in root.handlers:
        handler.setFormatter(formatter)
        handler.addFilter(limit)
    # the command line keeps librdkafka's lines off stderr (quiet_librdkafka); in the worker's log they
    # count, rate-limited like the rest
    logging.getLogger(LIBRDKAFKA_LOGGER).propagate = True


def quiet_librdkafka(debug: bool) -> None:
    """librdkafka's own lines (one per failed connection attempt) reach stderr only with ``--debug``:
    a command reports an unreachable broker in one line of its own."""
    logger = logging.getLogger(LIBRDKAFKA_LOGGER)
    logger.propagate = False
    logger.handlers.clear()
    if debug:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("librdkafka: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    else:
        logger.addHandler(logging.NullHandler())
