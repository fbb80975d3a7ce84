"""The TF-IDF row memo + kernel path equals ``weigh``'s dicts exactly (same features, order, floats)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.fingerprint import Document, FingerprintConfig, Fingerprinter
from stream.fingerprint import features as features_module
from stream.fingerprint import fingerprinter as fingerprinter_module
from stream.fingerprint.features import IDF_WEIGHTINGS, has_idf_path, idf_features, idf_simhash
from stream.fingerprint.hashing import token_hashes
from stream.fingerprint.simhash import simhash
from stream.text.idf import StreamingIdf, jieba_idf
from stream.text.weights import weigh

# words the table knows (lengths 1-6, so pos_weighted's length span varies), marker words (one a stop
# word spared only by pos_weighted), stop words, punctuation, unknown words, English, mixed case
_VOCAB = ["地震", "部门", "表示", "自然语言处理", "中华人民共和国", "北京", "学习", "机器", "数据", "模型",
          "山", "水", "综上所述", "但是", "所以", "总之", "的", "了", "我们", "，", "。", "...", "zzqqxx",
          "未登录词汇", "python", "the", "Data", "3.11", "\n", "歸根結底", "可見"]
_TOKENS = st.lists(st.one_of(st.sampled_from(_VOCAB), st.text(min_size=1, max_size=4)), max_size=60)


def _reference(tokens: list[str], scheme: str, title: list[str]) -> tuple[np.ndarray, np.ndarray]:
    w = weigh(tokens, scheme, idf=jieba_idf(), title_tokens=title)
    return token_hashes(list(w)), np.fromiter(w.values(), dtype=np.float64, count=len(w))


def _assert_same(tokens: list[str], scheme: str, title: list[str]) -> None:
    ref_h, ref_w = _reference(tokens, scheme, title)
    h, w = idf_features(tokens, scheme, jieba_idf(), title)
    assert h.tolist() == ref_h.tolist()  # same features in the same (first occurrence) order
    assert w.tobytes() == ref_w.tobytes()  # bit-identical weights
    n, sim = idf_simhash(tokens, scheme, jieba_idf(), title)
    assert n == len(ref_h)
    assert sim == (simhash(ref_h, ref_w) if len(ref_h) else 0)


@settings(max_examples=300, deadline=None)
@given(_TOKENS, st.lists(st.sampled_from(_VOCAB), max_size=6), st.sampled_from(IDF_WEIGHTINGS))
def test_idf_path_equals_weigh(tokens: list[str], title: list[str], scheme: str) -> None:
    _assert_same(tokens, scheme, title)


def test_idf_path_many_distinct_tokens_grows_and_resets_its_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    words = sorted(jieba_idf()._table)[::40][:6000]  # more rows than the first allocation (4,096)
    tokens = words + words[:500] + ["的", "但是", "，"]
    for scheme in IDF_WEIGHTINGS:
        _assert_same(tokens, scheme, words[:3])
    monkeypatch.setattr(features_module, "MEMO_LIMIT", 50)  # every call now starts from empty rows
    for scheme in IDF_WEIGHTINGS:
        _assert_same(tokens[:40] * 2, scheme, words[:3])
        _assert_same(["地震", "部门", "地震"], scheme, [])


def test_idf_path_only_for_a_fixed_table_without_pos() -> None:
    assert has_idf_path("tfidf", jieba_idf())
    assert not has_idf_path("tfidf", StreamingIdf())  # changes with every document
    assert not has_idf_path("pos_weighted", jieba_idf(), pos=["n"])  # POS tags: weigh()
    assert not has_idf_path("tf", jieba_idf())


_TEXT = st.text(alphabet="地震部门表示北京学习机器数据模型山水但是所以总之的了我们，。 abc.3", max_size=200)


@settings(max_examples=60, deadline=None)
@given(_TEXT, _TEXT, st.sampled_from(IDF_WEIGHTINGS))
def test_fingerprinter_idf_path_equals_weigh_path(text: str, title: str, scheme: str) -> None:
    doc = Document(id="d", text=text, title=title)
    fast = Fingerprinter(FingerprintConfig(segmenter="jieba", weighting=scheme)).fingerprint(doc)
    with pytest.MonkeyPatch.context() as mp:  # the Fingerprinter and word_features both on weigh()
        mp.setattr(fingerprinter_module, "has_idf_path", lambda *a: False)
        mp.setattr(features_module, "has_idf_path", lambda *a: False)
        slow = Fingerprinter(FingerprintConfig(segmenter="jieba", weighting=scheme)).fingerprint(doc)
    assert fast.to_bytes() == slow.to_bytes()
