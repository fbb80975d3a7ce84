"""``dedup verdicts``' pure parts: the current answer per id with deletions, filters, tables that fit."""

from __future__ import annotations

import io
import re
import time

import pytest

from stream.service.commands.verdicts import (
    DELETED,
    Column,
    VerdictFilter,
    VerdictPrinter,
    VerdictStats,
    describe,
    fit,
    tombstone,
)


def _verdict(doc: str, verdict: str, at: float, revised: bool = False, canonical: str | None = None) -> dict:
    return {"id": doc, "verdict": verdict, "canonical": canonical, "similarity": 0.9 if canonical else None,
            "distance": 3 if canonical else None, "match_count": 1 if canonical else 0, "revised": revised,
            "processed_at": at, "source": {"timestamp": at - 0.1}}


def test_the_current_answer_per_id_replaces_revisions_and_drops_deleted_ids() -> None:
    stats = VerdictStats()
    stats.add(_verdict("a", "unique", 1))
    stats.add(_verdict("b", "unique", 2))
    stats.add(_verdict("b", "near_duplicate", 3, revised=True, canonical="a"))
    stats.add(_verdict("c", "duplicate", 4, canonical="a"))
    stats.add(tombstone("c", 5))
    stats.add(tombstone("zz", 6))  # never had a verdict: nothing to remove
    assert [(v["id"], v["verdict"]) for v in stats.current()] == [("a", "unique"), ("b", "near_duplicate")]
    assert [v["id"] for v in stats.current(with_deleted=True)] == ["a", "b", "c"]
    summary = stats.summary()
    assert summary["documents"] == 2 and summary["revisions"] == 1 and summary["deleted"] == 1
    assert summary["verdicts"] == {"unique": 1, "near_duplicate": 1}
    text = describe(summary)
    assert text.startswith("2 documents: 1 unique, 1 near-duplicate; 1 deleted; 1 revisions")
    assert "{" not in text  # for a person, not JSON
    stats.add(_verdict("c", "unique", 7))  # published again after its deletion
    assert "c" in {v["id"] for v in stats.current()} and stats.summary()["deleted"] == 0


def test_filters_by_verdict_id_glob_and_time() -> None:
    rows = [_verdict("news-1", "unique", 10), _verdict("news-2", "duplicate", 20, canonical="news-1"),
            _verdict("blog-1", "near_duplicate", 30, canonical="news-1"), tombstone("news-3", 40)]
    pick = lambda f: [v["id"] for v in rows if f(v)]  # noqa: E731
    assert pick(VerdictFilter()) == ["news-1", "news-2", "blog-1", "news-3"]
    assert pick(VerdictFilter(verdicts=frozenset({"duplicate", "near_duplicate"}))) == ["news-2", "blog-1"]
    assert pick(VerdictFilter(verdicts=frozenset({DELETED}))) == ["news-3"]
    assert pick(VerdictFilter(ids=frozenset({"news-*"}))) == ["news-1", "news-2", "news-3"]
    assert pick(VerdictFilter(ids=frozenset({"blog-1"}))) == ["blog-1"]
    assert pick(VerdictFilter(since=25)) == ["blog-1", "news-3"]


def test_every_header_stays_whole_and_narrow_terminals_drop_optional_columns() -> None:
    columns = VerdictPrinter.columns
    for total in (200, 120, 100, 80, 60):
        fitted = fit(columns, total)
        assert all(width >= len(column.name) for column, width in fitted), total
        names = [c.name for c, _ in fitted]
        assert names[:5] == ["id", "verdict", "canonical", "similarity", "distance"]
        if total >= 120:
            assert len(fitted) == len(columns)
            assert sum(w for _, w in fitted) + 2 * (len(fitted) - 1) <= total
    assert "latency_ms" not in [c.name for c, _ in fit(columns, 80)]
    assert fit((Column("id", 40, flexible=True), Column("n", 3)), 200)[0][1] == 40  # no wider than needed


def test_a_terminal_table_shows_whole_headers_and_whole_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    long_id = "qts:poet.tang.22000.json:883"
    every = ("id", "verdict", "canonical", "similarity", "distance", "matches", "revised", "latency_ms")
    for width, shown in ((120, every), (80, every[:6])):
        monkeypatch.setenv("COLUMNS", str(width))
        out = Terminal()
        printer = VerdictPrinter(as_json=False, stream=out)
        printer.streaming = False
        printer.print([_verdict(long_id, "near_duplicate", time.time(), canonical="ydqts:439.json:70")])
        header = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue().splitlines()[0])
        assert header.split() == list(shown), (width, header)
        assert "…" not in header and len(header.rstrip()) <= width
        table = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())
        assert long_id in "".join(line.split()[0] if line.strip() else "" for line in table.splitlines()[1:]), table


def test_plain_text_is_told_apart_from_jsonl_with_bad_lines() -> None:
    from stream.errors import UsageError
    from stream.service.commands.publish import sniff_jsonl

    jsonl = [b"{not json\n", b"\n", b'{"id": "a", "text": "x"}\n', b'{"id": "b", "text": "y"}\n']
    assert list(sniff_jsonl(iter(jsonl), "f")) == jsonl  # a bad first line is that line's problem alone
    assert list(sniff_jsonl(iter([]), "f")) == []
    prose = [b"Dear operator,\n", b"\n", b"this is prose.\n", b"[not, json\n", b"more\n", b"and more\n", b"{}\n"]
    with pytest.raises(UsageError, match="f is not JSONL: none of its first 5 lines is JSON"):
        list(sniff_jsonl(iter(prose), "f"))
