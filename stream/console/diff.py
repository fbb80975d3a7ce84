"""Two texts -> the passages they share and the ones that differ, for a person to read side by side.

difflib's ``SequenceMatcher`` over tokens: each Han character alone (Chinese has no spaces, and a
copy differs by a character as often as by a word), other words, runs of spaces and single marks.
Passages shorter than ``MIN_SHARED`` tokens inside a difference are not called shared (a comma in
common does not make two rewritten sentences the same)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|\w+|\s+|[^\w\s]", re.UNICODE)
MIN_SHARED = 3
# SequenceMatcher is quadratic at worst: longer texts are compared on their first MAX_TOKENS tokens
MAX_TOKENS = 20_000
EQUAL, DELETE, INSERT, REPLACE = "equal", "delete", "insert", "replace"


@dataclass(frozen=True)
class Segment:
    op: str  # EQUAL: in both; DELETE: only in a; INSERT: only in b; REPLACE: a's text became b's
    a: str
    b: str

    def to_json(self) -> list[str]:
        return [self.op, self.a, self.b]


@dataclass(frozen=True)
class TextDiff:
    segments: tuple[Segment, ...]
    shared: float  # share of the two texts' characters in shared passages (0..1)
    truncated: bool = False  # a text was longer than MAX_TOKENS tokens: its rest is not compared

    def to_json(self) -> dict[str, Any]:
        return {"segments": [s.to_json() for s in self.segments], "shared": round(self.shared, 4),
                "truncated": self.truncated}


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def _merge(segments: list[Segment]) -> list[Segment]:
    """Short shared runs between differences become part of them; then neighbours of one kind join."""
    out: list[Segment] = []
    for i, seg in enumerate(segments):
        inside = 0 < i < len(segments) - 1
        if seg.op == EQUAL and inside and len(tokens(seg.a)) < MIN_SHARED:
            seg = Segment(REPLACE, seg.a, seg.b)
        if out and out[-1].op != EQUAL and seg.op != EQUAL:
            prev = out.pop()
            a, b = prev.a + seg.a, prev.b + seg.b
            seg = Segment(REPLACE if a and b else DELETE if a else INSERT, a, b)
        elif out and out[-1].op == EQUAL and seg.op == EQUAL:
            prev = out.pop()
            seg = Segment(EQUAL, prev.a + seg.a, prev.b + seg.b)
        out.append(seg)
    return out


def diff_texts(a: str, b: str) -> TextDiff:
    """The passages of ``a`` and ``b`` in order: shared (``EQUAL``) or not (the others)."""
    ta, tb = tokens(a), tokens(b)
    truncated = len(ta) > MAX_TOKENS or len(tb) > MAX_TOKENS
    ta, tb = ta[:MAX_TOKENS], tb[:MAX_TOKENS]
    matcher = SequenceMatcher(None, ta, tb, autojunk=False)
    raw = [Segment(op, "".join(ta[i1:i2]), "".join(tb[j1:j2])) for op, i1, i2, j1, j2 in matcher.get_opcodes()]
    segments = _merge(raw)
    total = sum(len(s.a) + len(s.b) for s in segments)
    shared = sum(len(s.a) + len(s.b) for s in segments if s.op == EQUAL)
    return TextDiff(tuple(segments), shared / total if total else 1.0, truncated)
