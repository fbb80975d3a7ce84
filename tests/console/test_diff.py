"""Two texts -> shared and differing passages (stream/console/diff.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from stream.console import diff as diff_module
from stream.console.diff import DELETE, EQUAL, INSERT, REPLACE, diff_texts


def test_a_changed_han_character_is_the_only_difference() -> None:
    a = "老游春飲莫相違，不獨花稀人亦稀。更勸殘杯看日影，猶應趁得鼓聲歸。"
    b = a.replace("游", "遊")
    d = diff_texts(a, b)
    changed = [s for s in d.segments if s.op != EQUAL]
    assert [(s.op, s.a, s.b) for s in changed] == [(REPLACE, "游", "遊")]
    assert 0.9 < d.shared < 1.0


def test_words_added_and_removed_are_marked_as_such() -> None:
    a = "The quick brown fox jumps over the lazy dog near the river bank today."
    b = "The quick brown fox jumps over the lazy dog near the river bank today. Buy now at example.com!"
    d = diff_texts(a, b)
    assert [s.op for s in d.segments] == [EQUAL, INSERT]
    assert d.segments[1].b == " Buy now at example.com!"
    d = diff_texts(b, a)
    assert [s.op for s in d.segments] == [EQUAL, DELETE]


def test_a_comma_in_common_does_not_make_rewritten_sentences_shared() -> None:
    d = diff_texts("alpha beta, gamma delta", "one two, three four")
    assert [s.op for s in d.segments] == [REPLACE] and d.shared == 0.0


def test_identical_and_empty_texts() -> None:
    assert [s.op for s in diff_texts("same text", "same text").segments] == [EQUAL]
    assert diff_texts("same text", "same text").shared == 1.0
    assert diff_texts("", "").shared == 1.0 and diff_texts("", "").segments == ()


def test_long_texts_are_compared_on_their_beginnings(monkeypatch: object) -> None:
    setattr(diff_module, "MAX_TOKENS", 10)  # noqa: B010
    try:
        d = diff_texts("a b c d e f g h i j k l", "a b c d e f g h i j k l")
    finally:
        setattr(diff_module, "MAX_TOKENS", 20_000)  # noqa: B010
    assert d.truncated and d.shared == 1.0


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab 老游遊,.\n", max_size=60), st.text(alphabet="ab 老游遊,.\n", max_size=60))
def test_the_passages_put_together_are_the_two_texts(a: str, b: str) -> None:
    d = diff_texts(a, b)
    assert "".join(s.a for s in d.segments) == a and "".join(s.b for s in d.segments) == b
    assert all(s.a == s.b for s in d.segments if s.op == EQUAL)
    assert 0.0 <= d.shared <= 1.0
