"""The compiled route over jieba's dictionary arrays gives jieba's own words (HMM off)."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.text.dictionary import cut_han_run, jieba_trie, read_frequencies
from stream.text.normal_form import normalize
from stream.text.segment import get_segmenter, split_runs

FIXTURES = Path(__file__).parent.parent / "fixtures"
SAMPLES = [
    "我们在北京大学学习机器学习和自然语言处理",
    "今天早上六点十二分本市东部山区发生三点一级地震震源深度十公里",
    "修修修补补一一一一对应苦苦苦苦等待",  # reduplications: where route ties occur
    "岳小琳来了",  # unknown name: single characters
    "𠀀中国𠀁人民㐀文",  # characters the dictionary does not know
    "詠廿四氣詩欲知春與夏仲呂啓朱明",
]


@pytest.fixture(scope="module")
def jieba_seg():
    return get_segmenter("jieba")


def han_runs(text: str) -> list[str]:
    return [piece for piece, han in zip(*split_runs(normalize(text)), strict=True) if han]


def test_samples_segment_as_jieba(jieba_seg) -> None:
    for run in SAMPLES:
        assert cut_han_run(run) == jieba_seg._cut_han(run), run


def test_fixture_corpus_segments_as_jieba(jieba_seg) -> None:
    runs = [run for line in (FIXTURES / "tang_small.jsonl").read_text(encoding="utf-8").splitlines()
            for run in han_runs(json.loads(line)["text"])]
    assert len(runs) > 100
    assert [cut_han_run(run) for run in runs] == [jieba_seg._cut_han(run) for run in runs]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严",
               min_size=1, max_size=40))
def test_random_runs_segment_as_jieba(jieba_seg, run: str) -> None:
    assert cut_han_run(run) == jieba_seg._cut_han(run)


def test_frequencies_are_read_as_jieba_reads_them() -> None:
    import jieba

    jieba.dt.check_initialized()
    freq, total = read_frequencies(Path(jieba.__file__).parent / "dict.txt")
    assert total == jieba.dt.total
    assert len(freq) == len(jieba.dt.FREQ)
    for word in ("北京大学", "北京大", "的", "修修补补"):
        assert freq[word] == jieba.dt.FREQ[word]
    assert jieba_trie().log_total == pytest.approx(__import__("math").log(total), rel=0, abs=0)
