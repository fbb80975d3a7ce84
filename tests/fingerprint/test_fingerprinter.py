"""Fingerprinter: determinism, edit sensitivity, short texts, side information, serialization."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.fingerprint import Document, Fingerprint, FingerprintConfig, Fingerprinter, similarity, without_bands

ALPHABET = "天地玄黃宇宙洪荒日月盈昃辰宿列張寒來暑往秋收冬藏閏餘成歲律呂調陽雲騰致雨露結為霜金生麗水玉出崑岡"
BASE = ("人工智能技术正在改变我们的生活方式，从智能手机到自动驾驶汽车，从医疗诊断到金融分析。"
        "研究人员认为，未来十年内机器学习将在更多领域得到应用，同时也带来新的伦理问题。")


@pytest.fixture(scope="module")
def fingerprinter() -> Fingerprinter:
    return Fingerprinter()


def edit(text: str, n: int, rng: random.Random) -> str:
    chars = list(text)
    for _ in range(n):
        chars[rng.randrange(len(chars))] = rng.choice(ALPHABET)
    return "".join(chars)


@settings(max_examples=15, deadline=None)
@given(st.text(alphabet=ALPHABET + "，。", min_size=60, max_size=300))
def test_same_text_same_fingerprint(text: str) -> None:
    a = Fingerprinter().fingerprint(Document("a", text))
    b = Fingerprinter().fingerprint(Document("b", text))
    assert (a.simhash, a.content_hash, a.bands) == (b.simhash, b.content_hash, b.bands)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10**6))
def test_hamming_distance_grows_with_edits(seed: int) -> None:
    fpr = Fingerprinter(FingerprintConfig(simhash_features="shingles"))
    rng = random.Random(seed)
    base = fpr.fingerprint(Document("a", BASE)).simhash

    def mean_distance(edits: int) -> float:
        runs = [fpr.fingerprint(Document("b", edit(BASE, edits, rng))).simhash for _ in range(6)]
        return sum((base ^ r).bit_count() for r in runs) / len(runs)

    few, many = mean_distance(1), mean_distance(25)
    assert few < many


def test_near_duplicate_scores_high_and_different_text_low(fingerprinter: Fingerprinter) -> None:
    a = fingerprinter.fingerprint(Document("a", BASE))
    b = fingerprinter.fingerprint(Document("b", BASE.replace("十年", "二十年")))
    other = "今天天气很好，我们去公园散步，看到很多人在放风筝，孩子们玩得非常开心。"
    c = fingerprinter.fingerprint(Document("c", other))
    assert similarity(a, b) >= 0.8
    assert similarity(a, c) < 0.2


SHORT = "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。床前明月光，疑是地上霜。"


def test_short_text_one_changed_character_with_safeguard() -> None:
    # ~36 characters: one changed character leaves 5-gram Jaccard at ~0.73 (a "different" text by the
    # 5-gram measure); the opt-in 3-gram verification keeps it a near-duplicate.
    fpr = Fingerprinter(FingerprintConfig(short_text_chars=40))
    a, b = fpr.fingerprint(Document("a", SHORT)), fpr.fingerprint(Document("b", SHORT.replace("啼", "鸣")))
    assert a.sketch.kind == 0 and a.short_grams is not None
    assert similarity(a, b) >= 0.8
    plain = Fingerprinter()
    edited = plain.fingerprint(Document("b", SHORT.replace("啼", "鸣")))
    assert similarity(plain.fingerprint(Document("a", SHORT)), edited) < 0.8


def test_short_text_fingerprints_stay_close(fingerprinter: Fingerprinter) -> None:
    a = fingerprinter.fingerprint(Document("a", SHORT)).simhash
    b = fingerprinter.fingerprint(Document("b", SHORT.replace("啼", "鸣"))).simhash
    other = fingerprinter.fingerprint(Document("c", "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。")).simhash
    assert (a ^ b).bit_count() < (a ^ other).bit_count()


def test_normalization_makes_exact_duplicates(fingerprinter: Fingerprinter) -> None:
    a = fingerprinter.fingerprint(Document("a", "Hello  World，ＡＢＣ"))
    b = fingerprinter.fingerprint(Document("b", "hello world,abc"))
    assert a.content_hash == b.content_hash and a.simhash == b.simhash


def test_empty_document(fingerprinter: Fingerprinter) -> None:
    fp = fingerprinter.fingerprint(Document("e", "   "))
    assert fp.empty and fp.bands == []


def test_side_information_moves_the_score(fingerprinter: Fingerprinter) -> None:
    text = BASE
    same = [fingerprinter.fingerprint(Document(i, text, side={"tags": ("ai", "ml")})) for i in "ab"]
    other = fingerprinter.fingerprint(Document("c", text, side={"tags": ("sports",)}))
    assert similarity(*same) == pytest.approx(1.0)
    assert similarity(same[0], other) == pytest.approx(0.9)  # mu * 1 + (1 - mu) * 0


def test_roundtrip_bytes(fingerprinter: Fingerprinter) -> None:
    fp = fingerprinter.fingerprint(Document("文档-1", BASE * 20, side={"k": ("x",)}))
    back = Fingerprint.from_bytes(fp.to_bytes())
    assert (back.doc_id, back.simhash, back.content_hash, back.bands, back.schema) == (
        fp.doc_id, fp.simhash, fp.content_hash, fp.bands, fp.schema)
    assert similarity(back, fp) == 1.0


def test_without_bands_keeps_everything_verification_reads(fingerprinter: Fingerprinter) -> None:
    fp = fingerprinter.fingerprint(Document("文档-2", BASE * 20, side={"k": ("x",)}))
    raw = fp.to_bytes()
    stored = without_bands(raw)
    assert len(raw) - len(stored) == 16 * len(fp.bands) > 0
    back = Fingerprint.from_bytes(stored)
    assert back.bands == [] and without_bands(stored) is stored
    assert (back.doc_id, back.simhash, back.content_hash, back.schema) == (fp.doc_id, fp.simhash, fp.content_hash,
                                                                           fp.schema)
    assert similarity(back, fp) == 1.0


def test_schema_changes_with_settings() -> None:
    assert Fingerprinter().schema != Fingerprinter(FingerprintConfig(bands=8)).schema
    assert Fingerprinter().schema == Fingerprinter(FingerprintConfig()).schema


def test_describe_needs_no_segmenter_and_names_every_backends_tokens() -> None:
    from stream.text import get_segmenter

    fp = Fingerprinter(FingerprintConfig())
    described = fp.describe()
    assert fp._segmenter is None  # the state's description loaded no backend (rjieba's import is ~0.17 s)
    for backend in ("jieba", "rjieba"):
        assert described == fp.config.describe(get_segmenter(backend).settings)
