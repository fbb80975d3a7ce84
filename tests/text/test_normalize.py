"""One test per normalization rule."""

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from stream.text.normal_form import (
    TABLE_LIMIT,
    code_point_tables,
    collapse_whitespace,
    normalize,
    normalize_compiled,
    normalize_kernel,
    normalize_reference,
)
from stream.text.segment import code_points, decode_code_points
from tests.reference.exact_form import compiled_exact_form, exact_form


def test_nfkc_folds_compatibility_forms() -> None:
    assert normalize("ﬁle ① ㎏") == "file 1 kg"


def test_fullwidth_ascii_and_ideographic_space_become_halfwidth() -> None:
    assert normalize("ＡＢＣ　１２３！") == "abc 123!"
    for code in range(0xFF01, 0xFF5F):  # every full-width ASCII variant, by NFKC alone
        assert normalize("x" + chr(code) + "x") == normalize("x" + chr(code - 0xFEE0) + "x")
    assert normalize("Ｐｙｔｈｏｎ　３．１１") == "python 3.11"


def test_chinese_punctuation_outside_fullwidth_block_is_kept() -> None:
    assert normalize("你好。世界、") == "你好。世界、"


def test_casefold_goes_beyond_lower() -> None:
    assert normalize("Straße ΣΊΣΥΦΟΣ") == "strasse σίσυφοσ"


def test_whitespace_runs_collapse_and_ends_strip() -> None:
    assert normalize("  a\t\n b\u3000\u00a0 c \r\n") == "a b c"
    assert collapse_whitespace("x \u2003 y") == "x y"


def test_invisible_format_characters_are_removed() -> None:
    assert normalize("复\u200b制\u00ad粘\ufeff贴") == "复制粘贴"


def test_normalize_is_idempotent() -> None:
    text = "  ＨＴＭＬ　页面\u200b，Ｔｅｓｔ  "
    assert normalize(normalize(text)) == normalize(text)


# The compiled fast path must equal the rules written out (normalize_reference) on any text.
_TRICKY = (
    "天地玄黃，。！？…（）　ＡＢｃ１２ﬁﬀ①㎏ßŉİΣσς\u00a0\u3000\u200b\u00ad\ufeff\u2060 \t\n"
    "e\u0301\u0301\u0327ñùǒ\u1100\u1161\u11a8가각\u0bbe\u0b92\ufdfa\U0001d400\U0002f800\U00020000"
)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_TRICKY, max_size=60) | st.text(max_size=60))
def test_normalize_equals_the_reference(text: str) -> None:
    assert normalize_compiled(text) == normalize(text) == normalize_reference(text)
    assert normalize_compiled(text * 5) == normalize(text * 5) == normalize_reference(text * 5)


def test_fast_path_is_taken_for_chinese_text() -> None:
    text = "  ＨＴＭＬ　页面\u200b，Ｔｅｓｔ……  ﬁＳｔｒａßｅ①  "
    codes = code_points(text)
    buf, n, m, changed = normalize_kernel(codes, *code_point_tables())
    assert changed
    assert unicodedata.is_normalized("NFKC", decode_code_points(buf[:n]))  # so normalize returns the kernel's result
    assert decode_code_points(buf[n : n + m]) == normalize_reference(text) == "html 页面,test...... fistrasse1"


def test_characters_above_the_tables_are_their_own_nfkc_and_casefold() -> None:
    for c in range(TABLE_LIMIT, 0x110000):
        ch = chr(c)
        assert ch.casefold() == ch
        assert not unicodedata.decomposition(ch)


_SPACES = " a1_-.\x00中文\u2e7f\u2e80éß٣²Ⅷ"


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=_SPACES, max_size=40) | st.text(max_size=40))
def test_exact_form_keeps_only_spaces_between_words_of_spaced_scripts(text: str) -> None:
    assert compiled_exact_form(text) == exact_form(text)
    assert compiled_exact_form("a b 中 文 x. y 1 2") == "a b中文x.y 1 2"


def test_the_compiled_class_of_spaced_characters_is_spaced_for_every_code_point() -> None:
    """exact_form_into asks char_classes() (ALNUM, below U+2E80) what the reference asks str.isalnum."""
    from stream.text import ALNUM, char_classes
    from tests.reference.exact_form import spaced

    classes = char_classes()
    wrong = [c for c in range(0x110000) if (c < 0x2E80 and bool(classes[c] & ALNUM)) != spaced(chr(c))]
    assert wrong == []
