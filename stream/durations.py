"""Durations as operators write them: ``30d``, ``12h``, ``15m``, ``900s`` or plain seconds."""

from __future__ import annotations

import re

from stream.errors import ConfigError

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


def parse_duration(text: str | float | int, name: str = "duration") -> float:
    """Seconds in ``text`` (a number, or a number with one of s, m, h, d, w); ``ConfigError`` otherwise."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        seconds = float(text)
    else:
        match = _DURATION.match(str(text))
        if match is None:
            raise ConfigError(f"{name} must be a duration such as 30d, 12h, 15m or 900s, got {text!r}")
        seconds = float(match.group(1)) * _UNITS[match.group(2) or "s"]
    if seconds <= 0:
        raise ConfigError(f"{name} must be positive, got {text!r}")
    return seconds
