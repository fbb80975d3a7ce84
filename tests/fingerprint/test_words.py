"""The compiled word SimHash is bit for bit count_simhash over the segmenter's tokens."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.fingerprint.features import count_simhash
from stream.fingerprint.words import compiled_word_simhash
from stream.text.normal_form import normalize
from stream.text.segment import code_points, get_segmenter

FIXTURES = Path(__file__).parent.parent / "fixtures"
MIXED = [
    "Python 3.11 发布了，新版本v2.0.1比旧版本快25%，GDP增长6.1%。的的的 the the and",
    "こんにちは naïve café — don't stop 𠀀中国𠀁人民㐀文",
    "我们在北京大学学习机器学习和自然语言处理。但是，总之，综上所述。" * 3,
    "",
    "!!! ... ???",
]


@pytest.fixture(scope="module")
def seg():
    return get_segmenter("jieba")


def check(seg, text: str) -> None:
    text = normalize(text)
    for scheme in ("tf", "binary"):
        assert compiled_word_simhash(code_points(text), scheme) == count_simhash(seg.token_bag(text), scheme)


def test_mixed_texts(seg) -> None:
    for text in MIXED:
        check(seg, text)


def test_fixture_documents(seg) -> None:
    for line in (FIXTURES / "tang_small.jsonl").read_text(encoding="utf-8").splitlines():
        check(seg, json.loads(line)["text"])


ALPHABET = list("北京大学的了是和在 abc ABC 123 .,，。𠀀ß\u0130\u00e9\u0301\n")


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(ALPHABET), max_size=60))
def test_random_texts(seg, text: str) -> None:
    check(seg, text)
