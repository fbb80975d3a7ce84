"""Bad messages for the reliability benchmark: every kind of input a worker must dead-letter (README,
"Input documents"), generated from a seed. Each is (kind, key, value); keys are ``bad-<kind>-<n>``
(the dead letter and any verdict name their kind), ids inside the JSON too, so that no bad message can
touch a good document's verdict.

Deletes are not among them: a Kafka tombstone with a key, or ``"op": "delete"``, is a valid delete
(its outcome is a tombstone on the verdict topic, not an accounted verdict)."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable

Message = tuple[str, bytes | None, bytes | None]
POEM = "床前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。"


def _dump(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False, allow_nan=True).encode("utf-8", "surrogatepass")


def not_json(rng: random.Random, doc_id: str) -> bytes:
    good = _dump({"id": doc_id, "text": POEM, "ts": 1.0})
    return rng.choice([
        good[: rng.randrange(1, len(good) - 1)],  # cut short
        good.replace(b'"id"', b"'id'"),
        good[:-1] + b",}",
        b"{" + b"not json " * rng.randrange(1, 200),
        bytes(rng.choice(b"abcxyz{}[]:,\"' \n0123") for _ in range(rng.randrange(1, 300))),
        b"", b"   ", b"nan", b"{\"id\": \"" + doc_id.encode() + b"\", \"text\": \"unterminated",
    ])


def not_utf8(rng: random.Random, doc_id: str) -> bytes:
    doc = {"id": doc_id, "text": POEM, "ts": 1.0}
    good = _dump(doc)
    at = rng.randrange(len(good))
    return rng.choice([
        json.dumps(doc, ensure_ascii=False).encode("gb18030"),  # a producer in the wrong encoding
        json.dumps(doc, ensure_ascii=False).encode("big5"),
        good[:at] + bytes([rng.randrange(0x80, 0x100)]) + good[at:],
        good.replace(b'"text"', b'"t\xc0\xafxt"'),  # an overlong encoding
        good.replace(POEM.encode()[:3], b"\xed\xa0\x80"),  # an encoded surrogate
    ])


def binary(rng: random.Random, doc_id: str) -> bytes:
    return rng.randbytes(rng.randrange(1, 512))


def not_object(rng: random.Random, doc_id: str) -> bytes:
    return _dump(rng.choice([[doc_id, POEM], 42, -1.5, "a string", None, True, [], [[{"id": doc_id}]]]))


def wrong_type(rng: random.Random, doc_id: str) -> bytes:
    base: dict[str, object] = {"id": doc_id, "text": POEM, "ts": 1.0}
    change: dict[str, object] = rng.choice([
        {"id": 1.5}, {"id": True}, {"id": [doc_id]}, {"id": {"v": doc_id}}, {"id": ""},
        {"text": 42}, {"text": [POEM]}, {"text": {"zh": POEM}}, {"text": False}, {"title": 7},
        {"url": ["http://x"]}, {"fields": [1, 2]}, {"fields": "a=b"}, {"fields": {"a": {"b": 1}}},
        {"side": ["x"]}, {"side": {"tags": "x"}}, {"tags": [1, 2]}, {"meta": {"x": 1}}, {"op": "remove"},
        {"body": POEM}, {"content_type": 3},
    ])
    return _dump({**base, **change})


def deep(rng: random.Random, doc_id: str) -> bytes:
    depth = int(10 ** rng.uniform(1, 5))
    shape = rng.randrange(3)
    if shape == 0:
        return b"[" * depth + b"]" * depth
    if shape == 1:
        return _dump({"id": doc_id, "text": POEM})[:-1] + b', "tags": ' + b"[" * depth + b"]" * depth + b"}"
    return _dump({"id": doc_id, "text": POEM})[:-1] + b', "fields": ' + b'{"a":' * depth + b"1" + b"}" * depth + b"}"


def huge(rng: random.Random, doc_id: str) -> bytes:
    size = rng.randrange(1_100_000, 3_000_000)
    if rng.random() < 0.5:
        return b"{" + b"not json " * (size // 9)  # the dead letter must still fit in a message
    return _dump({"id": doc_id, "text": POEM, "fields": {"blob": "x" * size}, "ts": 1.0})[:-2]  # cut: invalid


def nulls(rng: random.Random, doc_id: str) -> bytes:
    return _dump(rng.choice([
        {"id": None, "text": POEM}, {"id": doc_id}, {"id": doc_id, "text": None, "title": None},
        {"id": doc_id, "text": POEM, "side": {"a": None}}, {"id": doc_id, "text": POEM, "tags": [None]},
        {"id": doc_id, "text": POEM, "side": None, "tags": [POEM, None]}, {"text": POEM},
    ]))


def nan(rng: random.Random, doc_id: str) -> bytes:
    return _dump(rng.choice([
        {"id": doc_id, "text": POEM, "ts": math.nan}, {"id": doc_id, "text": POEM, "ts": math.inf},
        {"id": doc_id, "text": POEM, "ts": -math.inf}, {"id": math.nan, "text": POEM},
        {"id": doc_id, "text": math.nan}, {"id": doc_id, "text": POEM, "fields": {"x": [math.nan]}},
    ]))


def bad_ts(rng: random.Random, doc_id: str) -> bytes:
    ts = rng.choice([1e300, -1e12, 1.7e12, 1.7e15, "yesterday", "2024-13-45", "", [1, 2], {"t": 1}, True,
                     "1700000000", "2024-02-30T10:00:00"])
    return _dump({"id": doc_id, "text": POEM, "ts": ts})


def long_id(rng: random.Random, doc_id: str) -> bytes:
    long = rng.choice([doc_id + "x" * 1025, "x" * 70_000, doc_id + "字" * 342, "y" * rng.randrange(1025, 20_000)])
    return _dump({"id": long, "text": POEM, "ts": 1.0})


def bad_unicode(rng: random.Random, doc_id: str) -> bytes:
    where = rng.choice([f'"text": "\\ud800 {POEM}"', '"title": "a\\udfff"', '"\\ud83d": "x", "text": "t"',
                        '"text": "t", "tags": ["\\udc00"]', '"text": "t", "fields": {"k": "\\ud800"}'])
    return f'{{"id": "{doc_id}", {where}}}'.encode()


KINDS: dict[str, Callable[[random.Random, str], bytes]] = {
    "not_json": not_json, "not_utf8": not_utf8, "binary": binary, "not_object": not_object,
    "wrong_type": wrong_type, "deep": deep, "huge": huge, "nulls": nulls, "nan": nan, "bad_ts": bad_ts,
    "long_id": long_id, "bad_unicode": bad_unicode,
}


def bad_messages(n: int, seed: int = 17) -> list[Message]:
    """``n`` bad messages: one in 500 (at most 20) of 1-3 MB, five records with neither key nor value,
    the rest spread evenly over the other kinds; in a seeded random order."""
    rng = random.Random(seed)
    others = [k for k in KINDS if k != "huge"]
    kinds = ["huge"] * min(20, max(1, n // 500)) + ["no_key_no_value"] * min(5, n // 10)
    kinds += [others[i % len(others)] for i in range(n - len(kinds))]
    rng.shuffle(kinds)
    out: list[Message] = []
    for i, kind in enumerate(kinds):
        if kind == "no_key_no_value":
            out.append((kind, None, None))
            continue
        doc_id = f"bad-{kind}-{i}"
        out.append((kind, doc_id.encode(), KINDS[kind](rng, doc_id)))
    return out


def kind_of(key: str | None) -> str:
    """The kind a bad message's key (or id) names."""
    if key is None:
        return "no_key_no_value"
    parts = key.split("-")
    return parts[1] if len(parts) >= 3 and parts[0] == "bad" else "good"
