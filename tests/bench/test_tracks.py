"""The mixed-track builder's pieces (man page text, edits) and the track registry's missing-track path."""

import random
from pathlib import Path

import click
import pytest

from benchmarks.accuracy import load_registered
from benchmarks.accuracy_report import Track, score
from benchmarks.track_edits import edit_variant, regional_words, reorder_list, rewrap
from benchmarks.track_sources import troff_text

PAGE = r""".\" a comment
.TH LS 1 "2022" "GNU coreutils" 用户命令
.SH 名称
ls \- 列出目录内容
.SH 描述
.PP
列出指定\(lq文件\(rq（默认为当前目录）的信息。
.TP
\fB\-a\fP, \fB\-\-all\fP
不要忽略以点号起始的条目
.TP
.BR \-A ", " \-\-almost\-all
不要列出隐含的 . 和 ..
"""
TEXT = ("默认的软件源在 /etc/apt/sources.list 文件里设置。\n\n"
        "-a, --all\n列出全部文件\n\n-l\n使用长列表格式\n\n-h, --human-readable\n以易读的格式显示大小\n\n"
        "用 apt-get install 安装软件。")


def test_troff_text_keeps_the_words_and_drops_the_markup() -> None:
    text = troff_text(PAGE)
    assert "ls - 列出目录内容" in text
    assert "“文件”" in text
    assert "-a, --all" in text and "-A, --almost-all" in text
    assert "\\f" not in text and ".TP" not in text and "comment" not in text


def test_edits_change_what_they_say() -> None:
    rng = random.Random(3)
    edited, label = regional_words(TEXT, rng)
    assert label and edited != TEXT
    for pair in label.replace(" (some)", "").split(","):
        old, new = pair.split(">")
        assert new in edited and old in TEXT
    shuffled, label = reorder_list(TEXT, random.Random(1))
    assert label == "reorder 3 items" and sorted(shuffled.split("\n\n")) == sorted(TEXT.split("\n\n"))
    wrapped, _ = rewrap(TEXT, random.Random(2))
    assert "".join(wrapped.split()) == "".join(TEXT.split())  # whitespace only
    assert "apt-get" in wrapped.replace("\n", "")  # never inside a Latin word


def test_edit_variant_is_reproducible_and_edits_content() -> None:
    first = edit_variant(TEXT, random.Random(7), [TEXT])
    assert first == edit_variant(TEXT, random.Random(7), [TEXT])
    text, labels = first
    assert "".join(text.split()) != "".join(TEXT.split()) and labels


def test_missing_registered_track_says_how_to_build_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEDUP_TRACKS", str(tmp_path))
    with pytest.raises(click.ClickException, match="python -m benchmarks tracks build manpages-zh"):
        load_registered(["manpages-zh"], None)


def test_score_breaks_down_by_cjk_share() -> None:
    track = Track("t", [], {("a", "b"): 0.85, ("c", "d"): 1.0}, share={"a": 0.05, "b": 0.2, "c": 0.9, "d": 0.8})
    result = score(track, {("a", "b"), ("a", "c")})
    assert result["by_cjk_share"]["[0.0,0.1]"] == {"true_pairs": 1, "found": 2, "recall": 1.0, "precision": 0.5}
    assert result["by_cjk_share"]["[0.6,1.0]"]["recall"] == 0.0
