"""The input document: JSON with an ``id`` and some text, validated into a ``Document``.

Accepted keys (README "Input documents"):
- ``id`` (required, non-empty string; integers are accepted and turned into strings)
- text in ``text``, or ``body``, or ``content`` (at most one of them); ``title``; ``url``;
  ``content_type`` (``text/html`` -> main-content extraction; HTML is also detected)
- ``fields``: a structured record (object of scalars), weighted per seed 003
- side information (seed 002's MinHash): any key whose value is a list of strings
  (``tags``, ``keywords``, ``references`` ...), and ``side`` (object of lists of strings)
- ``ts``: event time, epoch seconds (number) or an ISO 8601 string
Other keys with scalar values are metadata: carried, never fingerprinted. Anything else raises
``DocumentError`` naming the key and the problem.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from stream.errors import DocumentError

TEXT_KEYS = ("text", "body", "content")
SCALARS = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class Document:
    id: str
    text: str = ""
    title: str | None = None
    url: str | None = None
    content_type: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    side: dict[str, tuple[str, ...]] = field(default_factory=dict)
    ts: float | None = None


def _parse_ts(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise DocumentError("'ts' must be epoch seconds or an ISO 8601 string, not a boolean")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise DocumentError(f"'ts' must be a finite number, got {value!r}")
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise DocumentError(f"'ts' is not an ISO 8601 time: {value!r}") from None
    raise DocumentError(f"'ts' must be epoch seconds or an ISO 8601 string, got {type(value).__name__}")


def _optional_str(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise DocumentError(f"'{key}' must be a string, got {type(value).__name__}")
    return value


def _string_list(key: str, value: list[Any]) -> tuple[str, ...]:
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise DocumentError(f"side-information list '{key}' must hold strings; item {i} is "
                                f"{type(item).__name__}")
    return tuple(value)


def _check_unicode(value: Any, where: str) -> None:
    # JSON can escape a lone surrogate ("\\ud800"): a str Python holds but no encoder accepts, so it
    # would fail later (hashing, the verdict topic); say so here, naming the key.
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise DocumentError(f"'{where}' holds invalid Unicode ({exc.reason} at position {exc.start})") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_unicode(key, f"{where}.{key}" if where else "a key")
            _check_unicode(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_unicode(item, f"{where}[{i}]")


def parse_document(obj: Any) -> Document:
    """Validate a decoded JSON value (or raw JSON bytes/str) into a Document."""
    if isinstance(obj, bytes | str):
        try:
            obj = json.loads(obj)
        except (ValueError, UnicodeDecodeError) as exc:
            raise DocumentError(f"not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise DocumentError(f"a document must be a JSON object, got {type(obj).__name__}")
    _check_unicode(obj, "")

    doc_id = obj.get("id")
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id:
        raise DocumentError("missing or empty 'id' (a non-empty string is required)")

    present = [k for k in TEXT_KEYS if obj.get(k) is not None]
    if len(present) > 1:
        raise DocumentError(f"give the text in one of {'/'.join(TEXT_KEYS)}, not {' and '.join(present)}")
    text = _optional_str(obj, present[0]) if present else ""
    title = _optional_str(obj, "title")
    fields = obj.get("fields") or {}
    if not isinstance(fields, dict):
        raise DocumentError(f"'fields' must be an object, got {type(fields).__name__}")
    for name, value in fields.items():
        if not isinstance(value, SCALARS):
            raise DocumentError(f"field '{name}' must be a string, number, boolean or null")
    if not present and title is None and not fields:
        raise DocumentError("document has no text: give 'text' (or 'body'/'content'), 'title' or 'fields'")

    side: dict[str, tuple[str, ...]] = {}
    extra_side = obj.get("side") or {}
    if not isinstance(extra_side, dict):
        raise DocumentError("'side' must be an object of string lists")
    for key, value in obj.items():
        if key in ("fields", "side"):
            continue
        if isinstance(value, list):
            side[key] = _string_list(key, value)
        elif isinstance(value, dict):
            raise DocumentError(f"unexpected object in '{key}': only 'fields' and 'side' may be objects")
    for key, value in extra_side.items():
        if not isinstance(value, list):
            raise DocumentError(f"'side.{key}' must be a list of strings")
        side[key] = _string_list(f"side.{key}", value)
    return Document(id=doc_id, text=text or "", title=title, url=_optional_str(obj, "url"),
                    content_type=_optional_str(obj, "content_type"), fields=fields, side=side,
                    ts=_parse_ts(obj.get("ts")))
