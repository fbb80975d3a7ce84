"""Detector: probe, verify against stored records, insert; the decoded-record cache never goes stale."""

from __future__ import annotations

import random
from importlib.resources import files

from stream.detect import Detector
from stream.fingerprint import FingerprintConfig, Fingerprinter, parse_document
from stream.index import BlockIndex
from tests.reference.probe_loop import probe_one

POEM = "床前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。白日依山盡，黃河入海流。欲窮千里目，更上一層樓。"
OTHER = "春眠不覺曉，處處聞啼鳥。夜來風雨聲，花落知多少。千山鳥飛絕，萬徑人蹤滅。孤舟蓑笠翁，獨釣寒江雪。"


def test_a_replaced_record_is_verified_with_its_new_content() -> None:
    fingerprinter = Fingerprinter(FingerprintConfig(segmenter="jieba"))
    detector = Detector(BlockIndex(None, k=3, bands=fingerprinter.config.band_tables))

    def probe(doc_id: str, text: str, ts: float) -> list[str]:
        fp = fingerprinter.fingerprint(parse_document({"id": doc_id, "text": text}))
        return [m.id for m in detector.probe(fp, (ts, doc_id))]

    assert probe("a", POEM, 1.0) == []
    assert probe("b", POEM, 2.0) == ["a"]  # decodes a's record (now cached)
    assert probe("a", OTHER, 3.0) == []  # a is replaced by another text: its record bytes change
    # the same text as a's FIRST version must no longer match a: the cached decode of the old
    # record is never served for the new one (b still matches)
    assert probe("c", POEM, 4.0) == ["b"]
    assert probe("d", OTHER, 5.0) == ["a"]


def test_fingerprints_are_stored_without_bands_and_known_again_by_their_bytes() -> None:
    fingerprinter = Fingerprinter(FingerprintConfig(segmenter="jieba"))
    detector = Detector(BlockIndex(None, k=3, bands=fingerprinter.config.band_tables))
    poem, other = (fingerprinter.fingerprint(parse_document({"id": "a", "text": t})) for t in (POEM, OTHER))
    detector.probe_many([poem], [(1.0, "a")])
    stored = detector.index.document("a")
    assert stored is not None and len(stored.payload) == len(poem.to_bytes()) - 16 * len(poem.bands)
    assert detector.indexed_order("a", poem.to_bytes()) == (1.0, "a")
    assert detector.indexed_order("a", other.to_bytes()) is None
    assert detector.indexed_order("b", poem.to_bytes()) is None
    detector.index.insert(poem.simhash, "old", 2.0, tuple(poem.bands), payload=poem.to_bytes())  # the whole bytes
    assert detector.indexed_order("old", poem.to_bytes()) == (2.0, "old")


def test_retention_matches_only_event_times_within_the_window_whatever_the_arrival_order() -> None:
    from stream.detect import MatchSettings

    fingerprinter = Fingerprinter(FingerprintConfig(segmenter="jieba"))
    matching = MatchSettings(retention=100.0)

    def pairs(arrival: list[tuple[str, float]]) -> set[frozenset[str]]:
        detector = matching.detector(BlockIndex(None, k=3, bands=fingerprinter.config.band_tables))
        found = set()
        for doc_id, ts in arrival:
            fp = fingerprinter.fingerprint(parse_document({"id": doc_id, "text": POEM}))
            found |= {frozenset((doc_id, m.id)) for m in detector.probe(fp, (ts, doc_id))}
        return found

    docs = [("a", 0.0), ("b", 100.0), ("c", 100.5), ("d", 200.5)]
    expected = {frozenset("ab"), frozenset("bc"), frozenset("cd")}  # 100 apart at most; a-c and b-d: 100.5
    assert pairs(docs) == expected
    assert pairs(list(reversed(docs))) == expected


def test_expire_deletes_only_entries_too_old_to_match_anything() -> None:
    from stream.detect import MatchSettings

    fingerprinter = Fingerprinter(FingerprintConfig(segmenter="jieba"))
    index = BlockIndex(None, k=3, bands=fingerprinter.config.band_tables)
    detector = MatchSettings(retention=100.0).detector(index)
    for doc_id, ts, text in (("old", 0.0, OTHER), ("edge", 50.0, OTHER), ("new", 200.0, POEM)):
        detector.insert(fingerprinter.fingerprint(parse_document({"id": doc_id, "text": text})), (ts, doc_id))
    assert detector.expire(newest_ts=200.0, allowance=50.0) == 1  # before 200 - 100 - 50 = 50: "old" only
    late = fingerprinter.fingerprint(parse_document({"id": "late", "text": OTHER}))
    assert [m.id for m in detector.probe(late, (60.0, "late"))] == ["edge"]  # 10 s late, within the allowance
    assert not detector.forget("old") and detector.forget("edge")


def test_probe_many_equals_the_probe_loop() -> None:
    """Real fingerprints (the bundled Tang sample, with its near-duplicate pairs, plus exact copies,
    an empty document and redeliveries inside one batch): ``probe_many`` in chunks gives the matches
    of the one-document loop (tests/reference/probe_loop.py), with all tables and with each
    document's tables cut into two groups (the service's partitions, ``once``), and leaves an index
    that answers the same."""
    fingerprinter = Fingerprinter(FingerprintConfig(segmenter="jieba"))
    lines = (files("stream") / "data" / "demo" / "tang_demo.jsonl").read_text(encoding="utf-8").splitlines()
    fps = [fingerprinter.fingerprint(parse_document(line)) for line in lines[:240]]
    fps += [fingerprinter.fingerprint(parse_document({"id": f"copy{i}", "text": lines[i]})) for i in range(0, 60, 7)]
    fps.append(fingerprinter.fingerprint(parse_document({"id": "empty", "text": "  "})))
    fps += fps[10:14]  # redeliveries
    random.Random(4).shuffle(fps)
    bands = fingerprinter.config.band_tables
    for groups in (None, [range(0, 3 + bands, 2), range(1, 4 + bands, 2)]):
        loop = Detector(BlockIndex(None, k=3, bands=bands), once=groups is not None)
        batch = Detector(BlockIndex(None, k=3, bands=bands), once=groups is not None)
        for start in range(0, len(fps), 64):
            chunk = fps[start : start + 64]
            orders = [(float(start + i), fp.doc_id) for i, fp in enumerate(chunk)]
            for tables in groups or [None]:
                expected = [probe_one(loop, fp, order, tables) for fp, order in zip(chunk, orders, strict=True)]
                got = batch.probe_many(chunk, orders, None if tables is None else [tables] * len(chunk))
                assert got == expected
        assert (batch.candidates, batch.verified) == (loop.candidates, loop.verified) and loop.verified > 20
        for fp in fps[:50]:
            order = (0.0, fp.doc_id)
            assert batch.probe(fp, order, insert=False) == probe_one(loop, fp, order, insert=False)


def test_the_settings_anchor_cap_is_the_index_default() -> None:
    from stream.detect import MatchSettings
    from stream.detect.match_settings import ANCHOR_CAP
    from stream.index import DEFAULT_ANCHOR_CAP

    assert ANCHOR_CAP == DEFAULT_ANCHOR_CAP == MatchSettings().anchor_cap
    assert "anchor_cap" not in MatchSettings().describe()  # as every state written before the setting
    assert MatchSettings(anchor_cap=0).describe()["anchor_cap"] == 0
