"""Each weighting rule, on small token lists with a fixed IDF table."""

import math

import pytest

from stream.text.weights import (
    MARKER_FACTOR,
    TITLE_FACTOR,
    WEIGHTINGS,
    length_relevance,
    pos_weight,
    weigh,
)


class TableIdf:
    def __init__(self, table: dict[str, float]) -> None:
        self.table = table

    def idf(self, term: str) -> float | None:
        return self.table.get(term)


IDF = TableIdf({"地震": 8.0, "部门": 4.0, "表示": 2.0, "综上所述": 9.0, "自然语言处理": 10.0, "所以": 3.0})


def test_weightings_tuple_is_the_contract() -> None:
    assert WEIGHTINGS == ("binary", "tf", "tfidf", "tfidf_len", "pos_weighted")


def test_binary_weights_each_distinct_token_once() -> None:
    assert weigh(["地震", "地震", "部门"], "binary") == {"地震": 1.0, "部门": 1.0}


def test_tf_counts_occurrences() -> None:
    assert weigh(["地震", "地震", "部门"], "tf") == {"地震": 2.0, "部门": 1.0}


def test_stop_words_and_punctuation_are_dropped_unless_asked() -> None:
    tokens = ["地震", "的", "，", "...", "the", "3.11"]
    assert weigh(tokens, "tf") == {"地震": 1.0, "3.11": 1.0}
    kept = weigh(tokens, "tf", drop_stopwords=False)
    assert set(kept) == {"地震", "的", "the", "3.11"}  # punctuation is never a feature


def test_tfidf_is_normalized_tf_times_idf() -> None:
    w = weigh(["地震", "地震", "部门", "表示"], "tfidf", idf=IDF)
    assert w == pytest.approx({"地震": 2 / 4 * 8.0, "部门": 1 / 4 * 4.0, "表示": 1 / 4 * 2.0})


def test_tfidf_drops_tokens_missing_from_the_idf_table() -> None:
    w = weigh(["地震", "未登录词", "xyz"], "tfidf", idf=IDF)
    assert set(w) == {"地震"}
    assert w["地震"] == pytest.approx(8.0)  # tf is over known tokens only


def test_tfidf_defaults_to_jiebas_table() -> None:
    w = weigh(["地震", "部门", "zzzqqq"], "tfidf")
    assert set(w) == {"地震", "部门"} and w["地震"] > w["部门"] > 0


def test_length_relevance_is_the_normal_curve_peaking_at_4_51() -> None:
    assert length_relevance(4) > length_relevance(2) > length_relevance(1)
    assert length_relevance(5) > length_relevance(8)
    assert length_relevance(4) == pytest.approx(math.exp(-(0.51**2) / (2 * 2.207**2)))
    assert 0 < length_relevance(20) < 0.01


def test_tfidf_len_multiplies_one_plus_length_relevance() -> None:
    w = weigh(["地震", "自然语言处理"], "tfidf_len", idf=IDF)
    assert w["地震"] == pytest.approx(0.5 * 8.0 * (1 + length_relevance(2)))
    assert w["自然语言处理"] == pytest.approx(0.5 * 10.0 * (1 + length_relevance(6)))


def test_pos_weights_favor_nouns_and_verbs() -> None:
    assert pos_weight("n") == pos_weight("v") == pos_weight("nr") == pos_weight("vn") == 1.0
    assert pos_weight("n") > pos_weight("a") > pos_weight("r")
    assert pos_weight("vshi") < pos_weight("v")


def test_pos_weighted_without_pos_uses_normalized_word_length() -> None:
    w = weigh(["地震", "部门", "自然语言处理"], "pos_weighted", idf=IDF)
    tf = 1 / 3
    # length 2 is the shortest (wl = 0), length 6 the longest (wl = 1); pos term is the constant 1
    assert w["地震"] == pytest.approx(tf * 8.0 * 1.0)
    assert w["自然语言处理"] == pytest.approx(tf * 10.0 * 2.0)


def test_pos_weighted_pos_weights_apply_when_tags_given() -> None:
    tokens = ["地震", "表示"]
    nouns = weigh(tokens, "pos_weighted", idf=IDF, pos=["n", "v"])
    adverbs = weigh(tokens, "pos_weighted", idf=IDF, pos=["n", "d"])
    assert nouns["地震"] == adverbs["地震"]
    assert nouns["表示"] == pytest.approx(adverbs["表示"] / pos_weight("d") * pos_weight("v"))


def test_pos_weighted_marker_words_weigh_five_times_and_survive_stop_words() -> None:
    plain = weigh(["地震", "部门"], "pos_weighted", idf=IDF)
    marked = weigh(["地震", "综上所述", "所以"], "pos_weighted", idf=IDF)
    assert "所以" in marked  # a stop word, but a marker word
    assert "所以" not in weigh(["地震", "所以"], "tfidf", idf=IDF)
    # 综上所述 vs a same-length non-marker would differ by exactly MARKER_FACTOR
    other = weigh(["地震", "自然语言", "所以"], "pos_weighted", idf=TableIdf({**IDF.table, "自然语言": 9.0}))
    assert marked["综上所述"] == pytest.approx(other["自然语言"] * MARKER_FACTOR)
    assert plain


def test_pos_weighted_title_words_weigh_five_times() -> None:
    base = weigh(["地震", "部门"], "pos_weighted", idf=IDF)
    titled = weigh(["地震", "部门"], "pos_weighted", idf=IDF, title_tokens=["地震"])
    assert titled["地震"] == pytest.approx(base["地震"] * TITLE_FACTOR)
    assert titled["部门"] == pytest.approx(base["部门"])


def test_pos_must_align_with_tokens() -> None:
    with pytest.raises(ValueError, match="pos has 1 tags for 2 tokens"):
        weigh(["地震", "部门"], "pos_weighted", idf=IDF, pos=["n"])


def test_unknown_scheme_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown weighting"):
        weigh(["地震"], "bm25")


def test_empty_input_gives_no_features() -> None:
    for scheme in WEIGHTINGS:
        assert weigh([], scheme, idf=IDF) == {}
