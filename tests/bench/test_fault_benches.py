"""The reliability and retention benchmarks' own premises: every generated bad message is one the
worker must reject, the retention stream puts its near copies where it says, and the checks compare
what they claim to."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from benchmarks.poison import KINDS, bad_messages, kind_of
from benchmarks.reliability_backlog import rss_by_share
from benchmarks.retention import copies_found, retention_stream, rule_check
from benchmarks.tang import cipher_stream
from stream.errors import DocumentError
from stream.fingerprint import parse_document
from tests.harness import compare, demo_docs


def test_every_generated_bad_message_is_rejected_with_a_code() -> None:
    messages = bad_messages(1_300)
    kinds = Counter(kind for kind, _, _ in messages)
    assert set(kinds) == {*KINDS, "no_key_no_value"} and len(messages) == 1_300
    for kind, key, value in messages:
        assert kind_of(key.decode() if key else None) == kind
        if value is None:
            continue
        with pytest.raises(DocumentError) as caught:
            parse_document(value)
        assert caught.value.code, (kind, value[:80])


def test_the_retention_stream_places_copies_within_and_beyond_the_window() -> None:
    window, step = 600.0, 60.0
    docs, copies = retention_stream(demo_docs(), 400, step, window, every=10)
    by_id = {d["id"]: d for d in docs}
    assert len(by_id) == len(docs) == 400 + len(copies)
    assert [d["ts"] for d in docs] == sorted(d["ts"] for d in docs)
    inside = [c for c in copies if c[2] <= window]
    beyond = [c for c in copies if c[2] > window]
    assert inside and beyond
    assert all(by_id[c]["ts"] - by_id[o]["ts"] == gap for c, o, gap in copies)
    assert all(gap > 1.2 * window for _, _, gap in beyond)


def _verdict(doc_id: str, *matches: str) -> dict[str, object]:
    return {"id": doc_id, "verdict": "near_duplicate" if matches else "unique",
            "canonical": matches[0] if matches else None, "match_count": len(matches),
            "matches": [{"id": m} for m in matches]}


def test_the_rule_check_keeps_only_matches_within_the_window() -> None:
    ts = {"a": 0.0, "b": 50.0, "c": 200.0}
    without = {"a": _verdict("a"), "b": _verdict("b", "a"), "c": _verdict("c", "a", "b")}
    right = {"a": _verdict("a"), "b": _verdict("b", "a"), "c": _verdict("c", "b")}
    assert rule_check(right, without, ts, 160.0)["equal"] == 3
    wrong = {**right, "c": _verdict("c", "a", "b")}  # a is 200 s before c: outside a 160 s window
    assert rule_check(wrong, without, ts, 160.0)["equal"] == 2
    found = copies_found([("c", "a", 200.0), ("b", "a", 50.0)], right, 160.0)
    assert found == {"within_window": 1, "found_within": 1, "beyond_window": 1, "found_beyond": 0}


def test_compare_names_missing_and_differing_ids() -> None:
    table = {"a": _verdict("a"), "b": _verdict("b")}
    expected = {"a": ("unique", None, ()), "b": ("near_duplicate", "a", ("a",)), "c": ("unique", None, ())}
    result = compare(table, expected)
    assert not result["equal"] and result["missing"] == 1 and result["differing"] == 1


def _grams(text: str) -> set[str]:
    compact = "".join(text.split())
    return {compact[i:i + 5] for i in range(len(compact) - 4)}


def test_the_backlog_stream_repeats_the_corpus_under_a_substitution_of_each_round_its_own() -> None:
    poems = demo_docs()
    docs = cipher_stream(poems, 3 * len(poems))
    assert docs[:len(poems)] == [{**p, "ts": float(i)} for i, p in enumerate(poems)]
    assert len({d["id"] for d in docs}) == len(docs) and docs[-1]["id"] == f"{poems[-1]['id']}~2"
    for r in (1, 2):  # one bijection a round, punctuation and whitespace kept: the corpus's near-duplicates too
        mapping: dict[str, str] = {}
        for poem, doc in zip(poems, docs[r * len(poems):(r + 1) * len(poems)], strict=True):
            assert len(doc["text"]) == len(poem["text"])
            for a, b in zip(poem["text"], doc["text"], strict=True):
                assert mapping.setdefault(a, b) == b and (a.isalnum() or a == b)
        assert len(set(mapping.values())) == len(mapping)
        assert sum(a != b for a, b in mapping.items()) > 0.9 * len(mapping)
    # no document close (5-gram Jaccard >= 0.3) to one of an earlier round, but by chance: its band
    # collisions, and the worker's work per document, do not grow with the stream
    index: defaultdict[str, list[int]] = defaultdict(list)
    sets: list[set[str]] = []
    close = 0
    for i, doc in enumerate(docs):
        grams = _grams(doc["text"])
        shared = Counter(j for g in grams for j in index[g] if j // len(poems) < i // len(poems))
        close += any(c / len(grams | sets[j]) >= 0.3 for j, c in shared.items())
        for g in grams:
            index[g].append(i)
        sets.append(grams)
    assert close <= 0.01 * 2 * len(poems), close


def test_the_backlog_reports_rss_by_share_and_over_its_last_100k_documents() -> None:
    # (seconds, ids judged, RSS, CPU) every 10,000 ids to 500,000: RSS climbs by 1 MiB per 10,000 ids
    # to 300,000, then stays, with one 50 MiB spike at 450,000 (a memtable before its flush)
    mib = 1 << 20
    samples = [(float(i), 10_000 * i, (100 + min(i, 30) + (50 if i == 45 else 0)) * mib, float(i))
               for i in range(51)]
    figures = rss_by_share(samples)
    assert figures["rss_by_share"] == {"20%": 110 * mib, "40%": 120 * mib, "60%": 130 * mib,
                                       "80%": 130 * mib, "100%": 130 * mib}
    assert figures["rss_growth_last_100k"] == 0.0  # 130 MiB at 400,000 and at the end
    assert figures["rss_peak_growth_last_100k"] == round(180 / 130 - 1, 3)  # the spike after 400,000
    assert rss_by_share(samples[:8])["rss_growth_last_100k"] is None  # 70,000 judged: no 100,000 to compare
