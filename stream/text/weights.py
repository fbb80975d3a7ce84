"""Feature weightings: tokens -> {feature: weight}, one small function per scheme.

``weigh(tokens, scheme, ...)`` first counts the tokens (``collections.Counter``, in C), then filters the
DISTINCT tokens once: tokens without a letter or digit (punctuation, symbols, whitespace) are always
dropped, stop words too unless ``drop_stopwords=False``. The scheme then weighs the distinct tokens, so
the per-token Python cost is one Counter pass.

For SimHash only the ratios between weights matter (scaling all weights leaves the fingerprint
unchanged), so ``tf`` uses raw counts while the TF-IDF schemes use their sources' normalized tf; both
are the same fingerprint up to that constant. Sources are cited by their short names in
docs/references.md; ``pos_weighted`` is the POS-weighted SimHash's weighting (the setting value keeps its name).

TF-IDF schemes DROP tokens that the IDF table does not know (``idf(t) is None``) instead of giving them
a default such as the median IDF: on the shared corpora, median-IDF fill makes many documents share one
dominant set of features and collapses their fingerprints together. Note that jieba's IDF
table is Chinese: English words are mostly missing from it, so TF-IDF with ``JiebaIdf`` keeps few
features of English text (use ``StreamingIdf`` or the ``tf``/``binary`` schemes there).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from stream.text.idf import IdfTable, jieba_idf
from stream.text.stopwords import STOPWORDS

WEIGHTINGS = ("binary", "tf", "tfidf", "tfidf_len", "pos_weighted")

_HAS_WORD_CHAR = re.compile(r"[^\W_]").search  # a letter or digit of any script


def is_feature(token: str, stop: Collection[str] = STOPWORDS) -> bool:
    """A token is a feature unless it is a stop word or has no letter or digit (punctuation)."""
    # isalnum() first: a C call that settles nearly every token; the regex only sees "3.11" etc.
    return token not in stop and (token.isalnum() or _HAS_WORD_CHAR(token) is not None)


# The POS-weighted SimHash's marker words: phrases of summary or contrast that flag a document's key
# sentences. The paper names 综上所述, 总之, 但是 and describes the rest
# ("带有总结或转折意味的标志性的词或短语"); the list below is ours, in simplified and traditional
# spellings. They are exempt from stop word removal.
_MARKER_TEXT = """
    综上所述 综上 总之 总而言之 总的来说 总的说来 总体来说 总体而言 由此可见 可见 归根结底 一言以蔽之
    简而言之 简言之 概括地说 概括来说 总结 结论 因此 所以 因而 故而 但是 然而 不过 可是 但 却 反之 相反
    綜上所述 綜上 總之 總而言之 總的來說 總的說來 總體來說 總體而言 由此可見 可見 歸根結底 一言以蔽之
    簡而言之 簡言之 概括地說 概括來說 總結 結論 因此 所以 因而 故而 但是 然而 不過 可是 反之 相反
"""
MARKER_WORDS: frozenset[str] = frozenset(_MARKER_TEXT.split())
STOPWORDS_BUT_MARKERS = STOPWORDS - MARKER_WORDS  # what pos_weighted drops: its marker words stay
MARKER_FACTOR = 5.0  # POS-weighted SimHash: "含有标志词的特征词的权重为普通特征词的5倍"
TITLE_FACTOR = 5.0  # POS-weighted SimHash: "出现在标题中的特征词的权重为普通特征词的5倍"

# Wang & Wang 2019: normal curve fitted to the lengths of 10,000 CSSCI Chinese terms.
TERM_LENGTH_MEAN = 4.51
TERM_LENGTH_SD = 2.207


def length_relevance(length: int) -> float:
    """Wang & Wang 2019's topic relevance of a word of ``length`` characters, in (0, 1].

    The paper fits N(mu=4.51, sigma=2.207) to term lengths and then "normalizes" it (its formula (5)
    was lost in capture). We take the normalization that makes the curve a relevance score peaking
    at 1 for the most typical term length: ``len(x) = exp(-(x - mu)^2 / (2 sigma^2))``, i.e. the
    density divided by its maximum 1 / (sigma sqrt(2 pi)). So 1 + len(x) ranges over (1, 2].
    """
    return math.exp(-((length - TERM_LENGTH_MEAN) ** 2) / (2 * TERM_LENGTH_SD**2))


_LENGTH_RELEVANCE = tuple(length_relevance(n) for n in range(64))


def token_relevance(token: str) -> float:
    """``length_relevance(len(token))``, from a table for the usual lengths."""
    n = len(token)
    return _LENGTH_RELEVANCE[n] if n < 64 else length_relevance(n)


def pos_weight(tag: str) -> float:
    """The POS-weighted SimHash's part-of-speech weight for a jieba (ICTCLAS-style) tag.

    The paper's formula was lost in capture; its text says nouns (subjects) and verbs (predicates) carry
    a sentence's meaning and should weigh more. Our values: nouns and verbs (n*, v*, incl. verbal
    nouns vn) 1.0, except 是/有 (vshi/vyou) 0.3; foreign words, idioms, fixed phrases, abbreviations
    (eng, i, l, j) 0.8; adjectives, distinguishing, state, time and place words (a*, b, z*, t*, s)
    0.6; function words and everything else (pronouns, adverbs, prepositions, conjunctions,
    particles, numerals, measure words, directions, unknown 'x') 0.3.
    """
    if tag in ("vshi", "vyou"):
        return 0.3
    head = tag[:1]
    if head in ("n", "v"):
        return 1.0
    if tag in ("eng", "i", "l", "j"):
        return 0.8
    if head in ("a", "b", "z", "t", "s"):
        return 0.6
    return 0.3


def binary_weights(counts: Mapping[str, int]) -> dict[str, float]:
    """Set weights: ``w(x) = 1`` for every distinct token."""
    return dict.fromkeys(counts, 1.0)


def tf_weights(counts: Mapping[str, int]) -> dict[str, float]:
    """Term frequency, the classic SimHash weight ("SimHash explained", "SimHash and Java"; Li & Han
    for long text fields): ``w(x) = n(x)``, the number of occurrences of x in the document."""
    return {t: float(c) for t, c in counts.items()}


def _tf_idf(counts: Mapping[str, int], idf: IdfTable) -> dict[str, float]:
    # stream.fingerprint.features._idf_weights repeats the float operations of the TF-IDF schemes in
    # this order (fixed tables); change both, or fingerprints change (tests/fingerprint/test_idf_path.py)
    lookup = idf.idf
    known = {t: (c, v) for t, c in counts.items() if (v := lookup(t)) is not None}
    total = sum(c for c, _ in known.values()) or 1
    return {t: c / total * v for t, (c, v) in known.items()}


def tfidf_weights(counts: Mapping[str, int], idf: IdfTable) -> dict[str, float]:
    """TF-IDF (Wang & Wang 2019 eqs. 2-3, POS-weighted SimHash sec. 2.3): ``w(x) = tf(x) * idf(x)`` with
    ``tf(x) = n(x) / sum_k n(k)`` (both papers' formula images were lost; this is the standard form their
    text describes) and ``idf`` from the table. Tokens the table does not know are dropped."""
    return _tf_idf(counts, idf)


def tfidf_len_weights(counts: Mapping[str, int], idf: IdfTable) -> dict[str, float]:
    """Wang & Wang 2019 eq. (6): ``w(x) = tf(x) * idf(x) * (1 + len(x))`` where ``len(x)`` is the word-length
    relevance of x: the normal curve over term length (mean 4.51, sd 2.207) normalized to peak at 1
    (see ``length_relevance``; length in characters)."""
    return {t: w * (1.0 + token_relevance(t)) for t, w in _tf_idf(counts, idf).items()}


def pos_weighted_weights(
    counts: Mapping[str, int],
    idf: IdfTable,
    title: Collection[str],
    tags: Mapping[str, str] | None,
) -> dict[str, float]:
    """The POS-weighted SimHash's combined weight (weighting ``pos_weighted``; its formulas were lost in
    capture, so this is derived from its text):

    ``w(x) = tf(x) * idf(x) * (pos(x) + wl(x)) * m(x) * h(x)`` where
    - ``tf * idf``: "为每个特征词计算...TF-IDF值作为该特征词的权重" (tokens unknown to the table dropped);
    - ``pos(x)``: part-of-speech weight, nouns/verbs highest (``pos_weight``); when no POS tags are
      given (``cut_pos`` is opt-in, slower) it is the constant 1, i.e. word length only;
    - ``wl(x) = (len(x) - minlen) / (maxlen - minlen)``: word length normalized over the document's
      words (0 when all have one length). Added to, not multiplied with, ``pos``: the paper wants
      longer words to weigh more, not the shortest word to weigh nothing;
    - ``m(x) = 5`` if x is a marker word (``MARKER_WORDS``: 综上所述, 总之, 但是 ...) else 1;
    - ``h(x) = 5`` if x occurs in the title else 1.
    """
    base = _tf_idf(counts, idf)
    if not base:
        return base
    lengths = {t: len(t) for t in base}
    shortest, longest = min(lengths.values()), max(lengths.values())
    span = longest - shortest
    out: dict[str, float] = {}
    for t, w in base.items():
        factor = (pos_weight(tags.get(t, "x")) if tags is not None else 1.0) + (
            (lengths[t] - shortest) / span if span else 0.0
        )
        if t in MARKER_WORDS:
            factor *= MARKER_FACTOR
        if t in title:
            factor *= TITLE_FACTOR
        out[t] = w * factor
    return out


def _tags_by_token(tokens: Sequence[str], pos: Sequence[str]) -> dict[str, str]:
    """One tag per distinct token: the tag with the highest POS weight among its occurrences."""
    if len(pos) != len(tokens):
        raise ValueError(f"pos has {len(pos)} tags for {len(tokens)} tokens; pass cut_pos() output")
    tags: dict[str, str] = {}
    for token, tag in zip(tokens, pos, strict=True):
        old = tags.get(token)
        if old is None or (old != tag and pos_weight(tag) > pos_weight(old)):
            tags[token] = tag
    return tags


def weigh(
    tokens: Sequence[str],
    scheme: str,
    *,
    title_tokens: Collection[str] = (),
    pos: Sequence[str] | None = None,
    idf: IdfTable | None = None,
    drop_stopwords: bool = True,
) -> dict[str, float]:
    """Weighted features of a token sequence under ``scheme`` (one of ``WEIGHTINGS``).

    ``idf``: table for the TF-IDF schemes (default: jieba's bundled table). ``title_tokens`` and ``pos``
    (tags aligned with ``tokens``, from ``Segmenter.cut_pos``) are used by ``pos_weighted`` only.
    """
    counts = Counter(tokens)
    stop: Collection[str] = STOPWORDS if drop_stopwords else ()
    if scheme == "pos_weighted" and drop_stopwords:
        stop = STOPWORDS_BUT_MARKERS
    kept = {t: c for t, c in counts.items() if is_feature(t, stop)}
    if scheme == "binary":
        return binary_weights(kept)
    if scheme == "tf":
        return tf_weights(kept)
    table = idf if idf is not None else jieba_idf()
    if scheme == "tfidf":
        return tfidf_weights(kept, table)
    if scheme == "tfidf_len":
        return tfidf_len_weights(kept, table)
    if scheme == "pos_weighted":
        tags = _tags_by_token(tokens, pos) if pos is not None else None
        title = title_tokens if isinstance(title_tokens, set | frozenset | dict) else set(title_tokens)
        return pos_weighted_weights(kept, table, title, tags)
    raise ValueError(f"unknown weighting {scheme!r}; choose one of {WEIGHTINGS}")

