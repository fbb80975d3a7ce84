"""Detector: probe, verify against stored records, insert; the decoded-record cache never goes stale."""

from __future__ import annotations

from stream.detect import Detector
from stream.fingerprint import FingerprintConfig, Fingerprinter, parse_document
from stream.index import BlockIndex

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
