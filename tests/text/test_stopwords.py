"""Stop word lists shipped as package data."""

import unicodedata

from stream.text.stopwords import STOPWORDS_EN, STOPWORDS_ZH, is_stopword
from stream.text.weights import MARKER_WORDS


def test_lists_load_from_package_data() -> None:
    assert len(STOPWORDS_ZH) >= 300
    assert 150 <= len(STOPWORDS_EN) <= 250
    assert not any(w.startswith("#") for w in STOPWORDS_ZH | STOPWORDS_EN)


def test_common_function_words_are_stop_words() -> None:
    for word in ("的", "了", "我们", "因为", "這個", "the", "and", "don", "t"):
        assert is_stopword(word), word


def test_content_words_are_not_stop_words() -> None:
    for word in ("地震", "垃圾", "分类", "python", "cable", "library"):
        assert not is_stopword(word), word


def test_lists_are_in_normalized_form() -> None:
    for word in STOPWORDS_ZH | STOPWORDS_EN:
        assert unicodedata.normalize("NFKC", word).casefold() == word
        assert word.strip() == word and " " not in word


def test_pos_weighted_summary_markers_are_not_stop_words() -> None:
    assert not {"综上所述", "总之", "但是"} & STOPWORDS_ZH
    # conjunctions that are both (所以, 因而) are exempted by weigh("pos_weighted"); tested there
    assert {"所以", "因而"} <= MARKER_WORDS & STOPWORDS_ZH
