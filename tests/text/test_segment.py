"""Segmentation rules and token identity across backends."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.text.normal_form import normalize
from stream.text.segment import SEGMENTATION_SETTINGS, available_backends, get_segmenter, split_runs
from tests.reference.token_rule import TOKEN_RE

# Chinese, English and mixed sentences, written for these tests.
SAMPLES = [
    "我们在北京大学学习机器学习和自然语言处理。",
    "今天早上六点十二分，本市东部山区发生三点一级地震，震源深度十公里。",
    "The repair ship lowered a grapnel and dragged it across the seabed.",
    "Python 3.11 发布了，新版本v2.0.1比旧版本快25%，GDP增长6.1%。",
    "詠廿四氣詩：欲知春與夏，仲呂啓朱明。",
    "修修修补补，一一一一对应，苦苦苦苦等待",  # reduplications: where route ties occur
    "こんにちは naïve café — don't stop",
    "𠀀中国𠀁人民㐀文",  # CJK extension characters outside jieba's own Han range
]


@pytest.fixture(scope="module")
def jieba_seg():
    return get_segmenter("jieba")


def test_chinese_precise_mode_without_hmm(jieba_seg) -> None:
    assert jieba_seg.cut(normalize("我们在北京大学学习机器学习")) == [
        "我们", "在", "北京大学", "学习", "机器", "学习",
    ]


def test_hmm_is_off_unknown_words_stay_single_characters(jieba_seg) -> None:
    # with the HMM on, jieba would join the unknown name 岳小琳 into one word
    assert jieba_seg.cut("岳小琳来了") == ["岳", "小", "琳", "来", "了"]


def test_english_words_and_numbers_are_whole_tokens(jieba_seg) -> None:
    text = normalize("Python 3.11 ships v2.0.1, don't wait! 1,000 e-mails")
    assert jieba_seg.cut(text) == [
        "python", "3.11", "ships", "v2.0.1", "don", "t", "wait", "1", "000", "e", "mails",
    ]


def test_mixed_text_splits_han_runs_from_latin(jieba_seg) -> None:
    assert jieba_seg.cut(normalize("用Python3.11做GDP分析")) == ["用", "python3.11", "做", "gdp", "分析"]


def test_no_whitespace_or_punctuation_tokens(jieba_seg) -> None:
    tokens = [t for s in SAMPLES for t in jieba_seg.cut(normalize(s))]
    assert tokens
    assert all(t.strip() == t and t and any(c.isalnum() for c in t) for t in tokens)


def test_empty_and_punctuation_only_text(jieba_seg) -> None:
    assert jieba_seg.cut("") == []
    assert jieba_seg.cut("，。！？ ... ---") == []


def test_cut_pos_tags_han_words_and_latin_tokens(jieba_seg) -> None:
    pairs = jieba_seg.cut_pos(normalize("我们学习Python 3.11"))
    assert pairs == [("我们", "r"), ("学习", "v"), ("python", "eng"), ("3.11", "m")]


def test_cut_pos_matches_jieba_posseg_on_han_runs(jieba_seg) -> None:
    import jieba.posseg

    for sample in ["我们在北京大学学习机器学习和自然语言处理", "地震部门表示此次地震属于正常活动"]:
        expected = [(w, f) for w, f in jieba.posseg.lcut(sample, HMM=False)]
        assert jieba_seg.cut_pos(sample) == expected


def test_cut_pos_words_equal_cut(jieba_seg) -> None:
    for sample in SAMPLES:
        text = normalize(sample)
        assert [w for w, _ in jieba_seg.cut_pos(text)] == jieba_seg.cut(text)


@pytest.mark.parametrize("backend", ["rjieba"])
def test_fast_backend_tokens_identical_to_jieba(backend, jieba_seg) -> None:
    pytest.importorskip(backend)
    other = get_segmenter(backend)
    assert other.settings == jieba_seg.settings == SEGMENTATION_SETTINGS
    for sample in SAMPLES:
        text = normalize(sample)
        assert other.cut(text) == jieba_seg.cut(text), sample
        assert other.cut_pos(text) == jieba_seg.cut_pos(text), sample
        bag = [t for t in other.token_bag(text) if t != "\n"]
        assert sorted(bag) == sorted(jieba_seg.cut(text)), sample


def test_auto_picks_a_jieba_identical_backend() -> None:
    seg = get_segmenter("auto")
    assert seg.name in ("rjieba", "jieba")
    assert seg.settings == SEGMENTATION_SETTINGS
    assert seg.name == ("rjieba" if "rjieba" in available_backends() else "jieba")


def test_segmenters_are_shared_instances() -> None:
    assert get_segmenter("jieba") is get_segmenter("jieba")


def test_unknown_backend_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown segmenter"):
        get_segmenter("thulac")


# Characters where the splitting rule has edges: Han (BMP, ext. A, compatibility, ext. B), Latin,
# digits of two scripts, "." and "_", punctuation, spaces, kana, a lone surrogate.
_EDGE_CHARS = "中文字㐀\uf900\U00020000abZé0٣._-,，。 \tあア\ud800"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(_EDGE_CHARS) | st.characters(), max_size=60))
def test_compiled_split_equals_the_regex_rule(text: str) -> None:
    pieces, flags = split_runs(text)
    assert [(p if h else "", "" if h else p) for p, h in zip(pieces, flags, strict=True)] == TOKEN_RE.findall(text)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="我们在北京大学学习机器人abc XY12.3,。!\n-_é", max_size=80))
def test_rjieba_token_bag_is_cut_as_a_multiset(text: str) -> None:
    """token_bag's one compiled split-and-join gives the tokens of cut (the Han runs and other words)."""
    pytest.importorskip("rjieba")
    seg = get_segmenter("rjieba")
    bag = [t for t in seg.token_bag(text) if t != "\n"]
    assert sorted(bag) == sorted(seg.cut(text))
