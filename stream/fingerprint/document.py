"""The input document: JSON with an ``id`` and some text, validated into a ``Document``.

Accepted keys (docs/usage.md "Input documents"):
- ``id`` (required: a non-empty string of at most 1,024 bytes; integers are turned into strings)
- text in ``text``, or ``body``, or ``content`` (at most one of them); ``title``; ``url``;
  ``content_type`` (``text/html`` -> main-content extraction; HTML is also detected)
- ``fields``: a structured record (object of scalars), weighted as Li & Han weigh database fields
- side information (the MinHash term of Wang & Wang 2019): any key whose value is a list of strings
  (``tags``, ``keywords``, ``references`` ...), and ``side`` (object of lists of strings)
- ``ts``: event time, epoch seconds (number) or an ISO 8601 string, within the years 1-9999
- ``op``: ``"delete"`` removes the document with this id (no text needed)
Other keys with scalar values are metadata: carried, never fingerprinted. Anything else raises
``DocumentError`` naming the key and the problem.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from stream.errors import DocumentError

TEXT_KEYS = ("text", "body", "content")
UPSERT, DELETE = "upsert", "delete"
SCALARS = (str, int, float, bool, type(None))
# keys with a meaning of their own: never taken for side information or metadata
RESERVED_KEYS = frozenset({"id", *TEXT_KEYS, "title", "url", "content_type", "fields", "side", "ts", "op"})
MAX_ID_BYTES = 1024  # ids are Kafka keys and index keys: a bound keeps every record small
# event times between the years 1 and 9999 (Python's datetime range): anything else is a unit or
# encoding mistake, and would make the document the permanent canonical of everything it matches
TS_MIN, TS_MAX = -62_135_596_800.0, 253_402_300_799.0


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
    op: str = UPSERT  # DELETE: remove the document with this id (docs/usage.md, "Lifecycle")


def _type_name(value: Any) -> str:
    return {bool: "a boolean", float: "a number with a fraction", list: "a list", dict: "an object",
            type(None): "null"}.get(type(value), type(value).__name__)


def _parse_ts(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise DocumentError(f"'ts' must be a finite number, got {value!r}", code="bad_ts")
        if not TS_MIN <= value <= TS_MAX:
            hint = " (milliseconds? 'ts' is in seconds)" if value > TS_MAX else ""
            raise DocumentError(f"'ts' {value!r} is outside the years 1-9999 in epoch seconds{hint}",
                                code="bad_ts")
        return float(value)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise DocumentError(f"'ts' is not an ISO 8601 time: {value[:60]!r}", code="bad_ts") from None
        if parsed.tzinfo is None:  # a naive time is UTC, whatever the worker's local zone
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.timestamp()
    raise DocumentError(f"'ts' must be epoch seconds or an ISO 8601 string, got {_type_name(value)}",
                        code="bad_ts")


def _parse_id(obj: dict[str, Any]) -> str:
    if "id" not in obj or obj["id"] is None:
        raise DocumentError("missing 'id' (a non-empty string is required)", code="bad_id")
    doc_id = obj["id"]
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str):
        raise DocumentError(f"'id' must be a string (or an integer), got {_type_name(doc_id)}: "
                            f"{json.dumps(doc_id)[:40]}", code="bad_id")
    if not doc_id:
        raise DocumentError("'id' is empty (a non-empty string is required)", code="bad_id")
    size = len(doc_id.encode("utf-8", "surrogatepass"))
    if size > MAX_ID_BYTES:
        raise DocumentError(f"'id' is {size:,} bytes long; the limit is {MAX_ID_BYTES:,} bytes (UTF-8)",
                            code="bad_id")
    return doc_id


def decode_utf8(raw: bytes) -> str:
    """``raw`` as UTF-8, or ``DocumentError`` saying where it is not (JSON must be UTF-8)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"not UTF-8: byte 0x{raw[exc.start]:02x} at position {exc.start} "
                            f"({exc.reason})", code="not_utf8") from None


def _optional_str(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise DocumentError(f"'{key}' must be a string, got {type(value).__name__}", code="bad_type")
    return value


def _string_list(key: str, value: list[Any]) -> tuple[str, ...]:
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise DocumentError(f"side-information list '{key}' must hold strings; item {i} is "
                                f"{type(item).__name__}", code="bad_side")
    return tuple(value)


def _check_unicode(value: Any, where: str) -> None:
    """JSON can escape a lone surrogate ("\\ud800"): a str Python holds but no encoder accepts, so it
    would fail later (hashing, the verdict topic); say so here, naming the key. Iterative: a deeply
    nested value must not exhaust the stack."""
    stack = [(value, where)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise DocumentError(f"'{at or 'a key'}' holds invalid Unicode ({exc.reason} at position "
                                    f"{exc.start})", code="bad_unicode") from None
        elif isinstance(item, dict):
            for key, child in item.items():
                stack.append((key, at))
                stack.append((child, f"{at}.{key}" if at else str(key)))
        elif isinstance(item, list):
            stack.extend((child, f"{at}[{i}]") for i, child in enumerate(item))


_KEY_END = re.compile(r'"\s*:')  # ends every key of a JSON text (and perhaps some strings)


def _refuse_duplicate_keys(text: str, obj: Any) -> None:
    """A cheap screen first: with no more key-like ``":`` in the text than keys in ``obj`` no key can be
    there twice; only otherwise is the text parsed again, key by key."""
    if len(_KEY_END.findall(text)) > _count_keys(obj):
        json.loads(text, object_pairs_hook=_unique_keys)


def _count_keys(value: Any) -> int:
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            count += len(item)
            stack.extend(v for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, dict | list))
    return count


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object naming a key twice is ambiguous (which 'id', which 'text'?): refuse it rather than
    keep the last one silently, as ``json.loads`` would."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise DocumentError(f"the key '{twice[:60]}' appears twice in one object", code="duplicate_key")
    return obj


def parse_document(obj: Any) -> Document:
    """Validate a decoded JSON value (or raw JSON bytes/str) into a Document."""
    checked = False  # whether every string is known to be valid Unicode already
    if isinstance(obj, bytes):
        obj = decode_utf8(obj)
        # strict UTF-8 holds no surrogate: only a \uD800-\uDFFF escape can make a lone one
        checked = "\\ud" not in obj and "\\uD" not in obj
    if isinstance(obj, str):
        try:
            source_text, obj = obj, json.loads(obj)
            _refuse_duplicate_keys(source_text, obj)
        except DocumentError:
            raise
        except RecursionError:
            raise DocumentError("not valid JSON: nested too deeply", code="not_json") from None
        except ValueError as exc:
            raise DocumentError(f"not valid JSON: {exc}", code="not_json") from None
    if not isinstance(obj, dict):
        raise DocumentError(f"a document must be a JSON object, got {_type_name(obj)}", code="not_object")
    if not checked:
        _check_unicode(obj, "")
    doc_id = _parse_id(obj)
    op = obj.get("op", UPSERT)
    if op not in (UPSERT, DELETE):
        raise DocumentError(f"'op' must be \"delete\" (or absent), got {json.dumps(op)[:40]}", code="bad_op")
    if op == DELETE:
        return Document(id=doc_id, ts=_parse_ts(obj.get("ts")), op=DELETE)

    present = [k for k in TEXT_KEYS if obj.get(k) is not None]
    if len(present) > 1:
        raise DocumentError(f"give the text in one of {'/'.join(TEXT_KEYS)}, not {' and '.join(present)}",
                            code="bad_text")
    text = _optional_str(obj, present[0]) if present else ""
    title = _optional_str(obj, "title")
    fields = obj.get("fields") or {}
    if not isinstance(fields, dict):
        raise DocumentError(f"'fields' must be an object, got {type(fields).__name__}", code="bad_fields")
    for name, value in fields.items():
        if not isinstance(value, SCALARS):
            raise DocumentError(f"field '{name}' must be a string, number, boolean or null", code="bad_fields")
    if not present and title is None and not fields:
        raise DocumentError("document has no text: give 'text' (or 'body'/'content'), 'title' or 'fields'",
                            code="no_text")

    side: dict[str, tuple[str, ...]] = {}
    extra_side = obj.get("side") or {}
    if not isinstance(extra_side, dict):
        raise DocumentError("'side' must be an object of string lists", code="bad_side")
    for key, value in obj.items():
        if key in RESERVED_KEYS:
            continue
        if isinstance(value, list):
            side[key] = _string_list(key, value)
        elif isinstance(value, dict):
            raise DocumentError(f"unexpected object in '{key}': only 'fields' and 'side' may be objects",
                            code="bad_type")
    for key, value in extra_side.items():
        if not isinstance(value, list):
            raise DocumentError(f"'side.{key}' must be a list of strings", code="bad_side")
        side[key] = _string_list(f"side.{key}", value)
    return Document(id=doc_id, text=text or "", title=title, url=_optional_str(obj, "url"),
                    content_type=_optional_str(obj, "content_type"), fields=fields, side=side,
                    ts=_parse_ts(obj.get("ts")))
