"""Golden fingerprints, pinned per schema id: the same text must give the same fingerprint in every
process and on every machine. A change of settings changes the schema id; a change of code that
moves fingerprints WITHOUT changing the schema id fails here (bump SCHEMA_VERSION, add new goldens)."""

import json
from pathlib import Path

import pytest

from stream.fingerprint import Document, FingerprintConfig, Fingerprinter

GOLDEN = json.loads((Path(__file__).parents[1] / "fixtures" / "golden_fingerprints.json").read_text(encoding="utf-8"))
DOCS = {
    "zh": Document("zh", "人工智能技术正在改变我们的生活方式，从智能手机到自动驾驶汽车，从医疗诊断到金融分析。"
                   "研究人员认为，未来十年内机器学习将在更多领域得到应用。", title="人工智能"),
    "en": Document("en", "Near-duplicate detection finds documents that are almost the same: reposts, mirrors and "
                   "lightly edited copies of one article."),
    "mixed": Document("mixed", "Python 3.11 发布了，性能提升了 25%，新的错误信息更友好。"),
    # 8% CJK: character shingles from schema version 2 on
    "code": Document("code", "运行 `tar --create --gzip --file backup.tar.gz /etc/nginx/sites-available` 备份配置"),
}
CONFIGS = {"default": FingerprintConfig(), "shingles": FingerprintConfig(simhash_features="shingles")}


@pytest.mark.parametrize("config_name", list(CONFIGS))
def test_golden_fingerprints(config_name: str) -> None:
    fingerprinter = Fingerprinter(CONFIGS[config_name])
    pinned = GOLDEN[config_name]
    assert fingerprinter.schema == pinned["schema"], "settings changed: pin goldens for the new schema"
    for doc_id, doc in DOCS.items():
        fp = fingerprinter.fingerprint(doc)
        assert [fp.hex, fp.content_hash.hex(), f"{fp.bands[0][0]:016x}"] == pinned["docs"][doc_id], doc_id


@pytest.mark.parametrize("weighting", ["tf", "binary", "tfidf", "tfidf_len", "pos_weighted"])
def test_fast_backend_gives_the_same_fingerprints(weighting: str) -> None:
    # rjieba takes other code paths (joined Han runs, an unordered token bag, the memoized count
    # features); the schema says its tokens equal jieba's, so every fingerprint must too
    pytest.importorskip("rjieba")
    config = FingerprintConfig(weighting=weighting)
    slow, fast = Fingerprinter(config), Fingerprinter(config.with_(segmenter="rjieba"))
    assert slow.schema == fast.schema
    for doc in DOCS.values():
        assert fast.fingerprint(doc).to_bytes() == slow.fingerprint(doc).to_bytes(), doc.id
