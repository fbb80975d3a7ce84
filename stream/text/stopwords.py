"""Chinese and English stop words, shipped as package data (stream/data/stopwords_*.txt).

Sources (see each file's header): Chinese: function words compiled for this project after the HIT
(哈工大) and Baidu lists, simplified and traditional spellings; English: the NLTK list (from the
Snowball project) plus contraction pieces our tokenizer produces. Both are stored in normalized form
(NFKC, casefolded), so they match ``Segmenter.cut`` tokens directly.
"""

from __future__ import annotations

from importlib import resources


def load_stopwords(filename: str) -> frozenset[str]:
    """Words of a package data file under stream/data, one a line, '#' comments skipped."""
    text = resources.files("stream").joinpath("data", filename).read_text(encoding="utf-8")
    return frozenset(
        word for line in text.splitlines() if (word := line.strip()) and not word.startswith("#")
    )


STOPWORDS_ZH: frozenset[str] = load_stopwords("stopwords_zh.txt")
STOPWORDS_EN: frozenset[str] = load_stopwords("stopwords_en.txt")
STOPWORDS: frozenset[str] = STOPWORDS_ZH | STOPWORDS_EN


def is_stopword(token: str) -> bool:
    """True for a Chinese or English stop word (tokens are expected normalized, as cut() gives them)."""
    return token in STOPWORDS
