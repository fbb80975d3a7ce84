"""One test per normalization rule."""

from stream.text.normalize import collapse_whitespace, normalize


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
