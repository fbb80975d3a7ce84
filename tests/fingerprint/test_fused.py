"""The fused kernels equal the separate functions they replace in the Fingerprinter."""

import mmh3
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from stream.fingerprint.bands import lsh_bands
from stream.fingerprint.features import count_and_vote, count_runs, count_simhash, word_features
from stream.fingerprint.fused import content_hash, prefix_bands, shingle_parts, unique_hashes
from stream.fingerprint.shingles import shingle_hashes
from stream.fingerprint.simhash import simhash
from stream.fingerprint.sketch import NO_SAMPLE, SampleSpec, SketchSpec, make_sketch
from stream.text.segment import code_points, is_space
from tests.reference.exact_form import exact_form

# CJK, Latin words, digits, punctuation and every kind of whitespace, so both shingle units,
# the exact and the b-bit sketch, and the space removal are exercised; "_", "²", "٣", "ß" and "é" are
# re's \w (str.isalnum or "_"), a combining accent is not
_ALPHABET = "天地玄黃宇宙洪荒日月盈昃辰宿列張寒來暑往秋收冬藏abcxyz019,.!  \t\n\u3000\u00a0\u2028\x1c_²٣ßé\u0301"
_SPECS = (SketchSpec(), SketchSpec(64, 2), SketchSpec(16, 8))
# none; every hash of a set of 20 or more, at most 8 of them (the bound lowered); half of them
_SAMPLES = (NO_SAMPLE, SampleSpec(20, 1, 8), SampleSpec(1, 2, 1000))


@njit
def _spaces(codes: np.ndarray) -> np.ndarray:
    out = np.empty(len(codes), dtype=np.bool_)
    for i in range(len(codes)):
        out[i] = is_space(codes[i])
    return out


def test_is_space_is_str_isspace_on_every_code_point() -> None:
    codes = np.arange(0x110000, dtype=np.uint32)
    expected = np.array([chr(c).isspace() for c in range(0x110000)])
    assert np.array_equal(_spaces(codes), expected)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=300), st.integers(0, 2**64 - 1))
def test_unique_is_the_set_of_values(small: list[int], big: int) -> None:
    # small values collide in the hash table's slots; duplicates and 0 must survive as in np.unique
    values = np.array([*small, big, big], dtype=np.uint64)
    got = unique_hashes(values)
    assert len(got) == len(set(values.tolist()))
    assert np.array_equal(np.sort(got), np.unique(values))


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=400), st.sampled_from(_SPECS), st.sampled_from([(16, 5), (3, 2), (0, 5)]),
       st.sampled_from([0.05, 0.0, 0.3, 0.6, 1.0]), st.sampled_from([0, 20, 512]), st.sampled_from(_SAMPLES))
def test_shingle_parts_equal_the_separate_functions(text: str, spec: SketchSpec, shape: tuple[int, int],
                                                    share: float, exact_shingles: int, sample: SampleSpec) -> None:
    bands, rows = shape
    shingles = shingle_hashes(text, share=share)
    parts = shingle_parts(text, spec, share=share, exact_shingles=exact_shingles, bands=bands, rows=rows, vote=True,
                          sample=sample)
    sketch = make_sketch(shingles, spec, exact_shingles, sample)
    assert (parts.sketch.sample is None) is (sketch.sample is None)
    assert parts.sketch.sample_below == sketch.sample_below
    assert parts.size == len(shingles)
    assert (parts.sketch.kind, parts.sketch.size) == (sketch.kind, sketch.size)
    assert parts.sketch.data.dtype == sketch.data.dtype
    assert np.array_equal(parts.sketch.data, sketch.data)
    assert parts.sketch.to_bytes(spec) == sketch.to_bytes(spec)
    assert parts.bands == lsh_bands(shingles, bands, rows)
    assert parts.simhash == simhash(shingles)


def test_shingle_parts_on_long_texts_of_both_units() -> None:
    rng = np.random.default_rng(7)
    han = np.array(list("天地玄黃宇宙洪荒日月盈昃辰宿列張寒來暑往秋收冬藏閏餘成歲律呂調陽雲騰致雨露結為霜"))
    words = np.array(["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "near", "a", "river", "bank"])
    texts = ["".join(rng.choice(han, 2000)), " ".join(rng.choice(words, 600))]
    for text in texts:
        shingles = shingle_hashes(text)
        assert len(shingles) * 4 > 512  # a b-bit sketch
        parts = shingle_parts(text, SketchSpec(), vote=True)
        assert np.array_equal(parts.sketch.data, make_sketch(shingles, SketchSpec()).data)
        assert parts.bands == lsh_bands(shingles, 16, 5)
        assert parts.simhash == simhash(shingles)
    # without the vote the SimHash is left at 0
    assert shingle_parts(texts[0], SketchSpec()).simhash == 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([0, 1, 2**63, 2**64 - 1, 0xDEADBEEF, 12345678901234567]) | st.integers(0, 2**64 - 1),
                max_size=80), st.booleans())
def test_count_vote_equals_count_then_simhash(values: list[int], binary: bool) -> None:
    s = np.sort(np.array(values, dtype=np.uint64))
    keys, counts = count_runs(s, binary)
    n, sim = count_and_vote(s, binary)
    assert n == len(keys)
    assert sim == simhash(keys, counts)


def test_count_simhash_equals_word_features() -> None:
    tokens = ["我们", "学习", "机器", "学习", "的", "，", "python3.11", "学习", "我们", "数据", "模型", "!"] * 3
    for scheme in ("tf", "binary"):
        hashes, weights = word_features(tokens, scheme)
        assert count_simhash(tokens, scheme) == (len(hashes), simhash(hashes, weights))
    assert count_simhash([], "tf") == (0, 0)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab1 中文字 .,é\u00df\u2e80\u2e7f\x00\n_²")), max_size=500))
def test_content_hash_and_prefix_bands_equal_the_separate_functions(text: str) -> None:
    codes = code_points(text)
    assert content_hash(codes) == mmh3.hash_bytes(exact_form(text).encode())  # the rule written out
    assert prefix_bands(codes[:400]) == lsh_bands(shingle_hashes(text[:400]), 8, 5)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab1 中文字的了 .,é\n_")), min_size=1, max_size=600),
       st.sampled_from([None, "tf", "binary"]), st.booleans(), st.sampled_from([0, 512]))
def test_document_parts_equal_the_separate_calls(text: str, words: str | None, vote: bool, exact: int) -> None:
    from stream.fingerprint.fused import document_parts
    from stream.fingerprint.words import compiled_word_simhash

    codes = code_points(text)
    found = document_parts(codes, SketchSpec(), exact_shingles=exact, vote=vote, words=words)
    alone = shingle_parts(text, SketchSpec(), exact_shingles=exact, vote=vote)
    assert found.shingles.bands == alone.bands
    assert (found.shingles.size, found.shingles.simhash) == (alone.size, alone.simhash)
    assert np.array_equal(found.shingles.sketch.data, alone.sketch.data)
    assert found.content_hash == content_hash(codes)
    # the prefix's bands, whichever unit the prefix is shingled by (a mixed text's prefix may differ from it)
    expected_prefix = lsh_bands(shingle_hashes(text[:400]), 8, 5) if alone.bands else None
    assert found.prefix == expected_prefix
    assert found.words == (compiled_word_simhash(codes, words) if words else None)
