"""Word segmentation behind one interface, with backends that give identical tokens.

Tokenization rule (the same for every backend, so that switching backend never changes features):

- The input is normalized text (``stream.text.normal_form``: NFKC, casefolded).
- Han runs (CJK unified ideographs, extensions A-F, compatibility ideographs) are segmented by jieba's
  *precise* mode with the HMM **off**. The HMM guesses new words from character statistics and is
  implemented differently in each backend; with it off, every backend runs the same prefix-dictionary
  DAG and max-probability route over the same ``dict.txt``, so the tokens are identical
  (docs/text.md has the check on ~20k documents).
- Everything else: a regex word tokenizer. A token is a run of letters/digits of any script but Han
  (``python``, ``naïve``, ``2019``, ``こんにちは``), with trailing ``.digits`` groups kept so that
  numbers and versions stay whole (``3.11``, ``python3.11``, ``v2.0.1``). ``don't`` -> ``don``, ``t``.
- Whitespace and punctuation never become tokens. Stop words are NOT removed here (see ``weights``).

We call the backends' DAG + route directly on each Han run instead of ``jieba.lcut`` on the whole
text: jieba's own pre-split regex would glue Latin letters onto Han runs differently per backend, and
skipping it is also faster (``cut`` with jieba: 1.9x ``jieba.lcut(HMM=False)`` alone; docs/text.md).

POS tags (``cut_pos``): the same tokens, each tagged with jieba's dictionary tag (``x`` when the word
has no tag) -- exactly what ``jieba.posseg`` gives with HMM off, but by a dictionary lookup instead of
posseg's second segmentation pass, so it costs little more than ``cut``. Non-Han tokens are tagged
``eng`` when they contain a Latin letter, ``m`` (numeral) when they are digits, ``x`` otherwise.
"""

from __future__ import annotations

import codecs
import logging
import re
import threading
from collections.abc import Callable
from functools import cache
from typing import Any, Protocol

import numpy as np
from numba import njit

from stream.text.table_cache import cached_arrays

log = logging.getLogger("dedup.text")

# Settings that determine the tokens; recorded in the fingerprint schema. Every backend produces
# the same tokens for these settings, so the string does not name the backend.
SEGMENTATION_SETTINGS = "jieba-precise;hmm=off;dict=jieba-default;han-runs+regex-words;v1"

# Han: CJK unified ideographs with extensions A-F, compatibility ideographs
_HAN_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2FA1F))
# The rule as a regex is tests/reference/token_rule.py (tests/text/test_segment.py checks split_runs against it)
_WORD_CHAR, _HAN_CHAR, _DIGIT, ALNUM = 1, 2, 4, 8  # ALNUM: str.isalnum, Han included


@cache
def char_classes() -> np.ndarray:
    """Class bits per code point: word character outside Han ([^\\W_]), Han, decimal digit (\\d), alphanumeric;
    built once (~80 ms), then loaded from disk (``stream.text.table_cache``)."""
    return cached_arrays("classes-v2", _build_char_classes)[0]


def _build_char_classes() -> tuple[np.ndarray]:
    codes = np.arange(0x110000, dtype=np.uint32)
    codes[0xD800:0xE000] = 0x20  # lone surrogates: not encodable as characters, never word characters
    chars = np.frombuffer(codes.tobytes(), dtype="<U1")
    # numpy's isalnum/isdecimal are CPython's str methods, which define the regex's \w and \d
    han = np.zeros(len(codes), dtype=bool)
    for lo, hi in _HAN_RANGES:
        han[lo : hi + 1] = True
    classes = np.where(np.char.isalnum(chars) & ~han, _WORD_CHAR, 0).astype(np.uint8)
    classes[han] |= _HAN_CHAR
    classes[np.char.isdecimal(chars)] |= _DIGIT
    classes[np.char.isalnum(chars)] |= ALNUM
    return (classes,)


@njit(cache=True)
def _token_spans(codes: np.ndarray, classes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(codes)
    starts = np.empty(n, dtype=np.int64)
    ends = np.empty(n, dtype=np.int64)
    han = np.empty(n, dtype=np.bool_)
    count, i = 0, 0
    while i < n:
        kind = classes[codes[i]]
        if kind & _HAN_CHAR:
            j = i + 1
            while j < n and classes[codes[j]] & _HAN_CHAR:
                j += 1
        elif kind & _WORD_CHAR:
            j = i + 1
            while j < n and classes[codes[j]] & _WORD_CHAR:
                j += 1
            while j + 1 < n and codes[j] == 0x2E and classes[codes[j + 1]] & _DIGIT:  # (\.\d+)*
                j += 2
                while j < n and classes[codes[j]] & _DIGIT:
                    j += 1
        else:
            i += 1
            continue
        starts[count], ends[count], han[count] = i, j, kind & _HAN_CHAR
        count += 1
        i = j
    return starts[:count], ends[:count], han[:count]


@njit(cache=True, inline="always")
def _put_runs(out, n, codes, starts, ends, han, want_han):  # type: ignore[no-untyped-def]
    # Append the Han runs (or the other words) to out[n:], joined by "\n"; returns (new n, runs).
    runs = 0
    for k in range(len(starts)):
        if han[k] == want_han:
            if runs:
                out[n] = 0x0A  # "\n" between runs
                n += 1
            runs += 1
            for i in range(starts[k], ends[k]):
                out[n] = codes[i]
                n += 1
    return n, runs


@njit(cache=True)
def _joined(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray, han: np.ndarray, want_han: bool) -> np.ndarray:
    # the Han runs (or the other words) joined by "\n": one decode instead of a Python slice each
    out = np.empty(len(codes) + len(starts), dtype=np.uint32)
    n, _ = _put_runs(out, 0, codes, starts, ends, han, want_han)
    return out[:n]


@njit(cache=True)
def _bag_runs(codes: np.ndarray, classes: np.ndarray) -> tuple[np.ndarray, int, int, int]:
    # token_bag's one call: (buffer, end, han_end, words): the Han runs joined by "\n" in [0, han_end),
    # the other words joined by "\n" in [han_end, end), and how many other words there are
    starts, ends, han = _token_spans(codes, classes)
    out = np.empty(len(codes) + len(starts), dtype=np.uint32)
    han_end, _ = _put_runs(out, 0, codes, starts, ends, han, True)
    n, words = _put_runs(out, han_end, codes, starts, ends, han, False)
    return out, n, han_end, words


@njit(cache=True, inline="always")
def is_space(c: int) -> bool:
    """``str.isspace`` of one code point (CPython's _PyUnicode_IsWhitespace table)."""
    if c > 0x3000:  # first: CJK text is nearly all above
        return False
    if c <= 0x20:
        return c == 0x20 or 0x09 <= c <= 0x0D or 0x1C <= c <= 0x1F
    if c < 0x85:
        return False
    return (c == 0x85 or c == 0xA0 or c == 0x1680 or 0x2000 <= c <= 0x200A or c == 0x2028 or c == 0x2029
            or c == 0x202F or c == 0x205F or c == 0x3000)


def decode_code_points(codes: np.ndarray) -> str:
    # the codec function on the array's buffer: bytes.decode goes through a Python-level codec
    # wrapper, and tobytes() copies (~1 us of ~2.4 per 3 KB)
    text: str = codecs.utf_32_le_decode(codes.data, "surrogatepass", True)[0]
    return text


def code_points(text: str) -> np.ndarray:
    """Code points of ``text`` as uint32 (a UTF-32 view: no per-character Python work; a lone
    surrogate passes through as its own value)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _spans(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    codes = code_points(text)
    return (codes, *_token_spans(codes, char_classes()))


def split_runs(text: str) -> tuple[list[str], list[bool]]:
    """The text's Han runs and other words in order, with a Han flag each (the module's rule).

    Compiled: the regex took 60-110 us per 3 KB document, as much as rjieba's segmentation itself.
    """
    _, starts, ends, han = _spans(text)
    return [text[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)], han.tolist()


_LATIN_LETTER = re.compile(r"[a-z]", re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:\.\d+)*")

BACKENDS = ("jieba", "rjieba")
# jieba_fast is not offered: its C route breaks probability ties the other way (修修修 -> 修|修修
# instead of 修修|修; 9 of 21,682 corpus documents differ), and it has no wheels (needs a compiler).


class Segmenter(Protocol):
    name: str
    settings: str

    def cut(self, text: str) -> list[str]: ...

    def token_bag(self, text: str) -> list[str]: ...

    def cut_pos(self, text: str) -> list[tuple[str, str]]: ...


def _word_tag(word: str) -> str:
    if _LATIN_LETTER.search(word):
        return "eng"
    return "m" if _NUMBER.fullmatch(word) else "x"


class _RunSegmenter:
    """Splits text into Han runs and other words; subclasses segment and tag the Han runs."""

    name = "base"
    settings = SEGMENTATION_SETTINGS

    def _cut_han(self, run: str) -> list[str]:
        raise NotImplementedError

    def _tag_han(self, run: str) -> list[tuple[str, str]]:
        raise NotImplementedError

    def cut(self, text: str) -> list[str]:
        out: list[str] = []
        extend, append, cut_han = out.extend, out.append, self._cut_han
        for piece, han in zip(*split_runs(text), strict=True):
            if han:
                extend(cut_han(piece))
            else:
                append(piece)
        return out

    def token_bag(self, text: str) -> list[str]:
        """The tokens of ``cut(text)`` as a multiset, in no particular order, possibly with "\\n"
        tokens added (never features): what weightings need, which count tokens, not order them."""
        return self.cut(text)

    def cut_pos(self, text: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for piece, han in zip(*split_runs(text), strict=True):
            if han:
                out.extend(self._tag_han(piece))
            else:
                out.append((piece, _word_tag(piece)))
        return out

    def __repr__(self) -> str:
        return f"<Segmenter {self.name} {self.settings}>"


_jieba_lock = threading.Lock()


def _quiet_jieba(module: Any) -> None:
    # jieba logs "Building prefix dict ..." at DEBUG/INFO on first use; libraries must not chatter.
    module.setLogLevel(logging.WARNING)


def _jieba_tag_table() -> dict[str, str]:
    """jieba.posseg's word -> tag table (read from jieba's dict.txt on first use, ~0.3 s)."""
    with _jieba_lock:
        import jieba
        import jieba.posseg

        _quiet_jieba(jieba)
        # jieba.posseg looks words up here and tags missing ones 'x'.
        table: dict[str, str] = jieba.posseg.dt.word_tag_tab
        return table


class JiebaSegmenter(_RunSegmenter):
    """Reference backend: the ``jieba`` package (pure Python), initialized lazily on first use."""

    name = "jieba"

    def __init__(self) -> None:
        self._route: Callable[[str], list[str]] | None = None
        self._tags: dict[str, str] | None = None

    def _load(self) -> Callable[[str], list[str]]:
        with _jieba_lock:
            if self._route is None:
                import jieba

                _quiet_jieba(jieba)
                tokenizer = jieba.dt
                tokenizer.check_initialized()
                get_dag, calc = tokenizer.get_DAG, tokenizer.calc

                def route(run: str) -> list[str]:
                    # jieba's __cut_DAG_NO_HMM without its per-token Latin-letter check (a Han run
                    # has none): same DAG, same route, same words.
                    dag = get_dag(run)
                    best: dict[int, tuple[float, int]] = {}
                    calc(run, dag, best)
                    words, x, n = [], 0, len(run)
                    while x < n:
                        y = best[x][1] + 1
                        words.append(run[x:y])
                        x = y
                    return words

                self._route = route
        return self._route

    def _cut_han(self, run: str) -> list[str]:
        if len(run) == 1:
            return [run]
        return (self._route or self._load())(run)

    def _tag_table(self) -> dict[str, str]:
        self._tags = _jieba_tag_table()
        return self._tags

    def _tag_han(self, run: str) -> list[tuple[str, str]]:
        tags = self._tags if self._tags is not None else self._tag_table()
        return [(w, tags.get(w, "x")) for w in self._cut_han(run)]


class RjiebaSegmenter(_RunSegmenter):
    """``rjieba``: Python binding of jieba-rs (Rust), same dict.txt and DAG; ~20x faster than jieba."""

    name = "rjieba"

    def __init__(self) -> None:
        import rjieba

        self._rjieba_cut = rjieba.cut
        self._tags: dict[str, str] | None = None

    def _cut_han(self, run: str) -> list[str]:
        if len(run) == 1:
            return [run]
        result: list[str] = self._rjieba_cut(run, False)
        return result

    def _tag_han(self, run: str) -> list[tuple[str, str]]:
        # rjieba.tag's table differs from jieba.posseg's for words jieba leaves untagged (it tags
        # 華 'j' where jieba says 'x'), so we look the words up in jieba's own tag table instead.
        tags = self._tags if self._tags is not None else self._tag_table()
        return [(w, tags.get(w, "x")) for w in self._cut_han(run)]

    def _tag_table(self) -> dict[str, str]:
        self._tags = _jieba_tag_table()
        return self._tags

    def cut(self, text: str) -> list[str]:
        # Same rule as the base class, with one backend call for all Han runs of the text: the runs
        # are joined by "\n" (never inside a run, and jieba-rs splits blocks there), which halves the
        # time spent crossing into Rust on typical 3 KB text.
        tokens, words, flags = self._han_tokens_and_words(text)
        if not words:
            return list(filter("\n".__ne__, tokens))
        if not tokens:
            return words
        out: list[str] = []
        rest, word = iter(tokens), iter(words)
        for is_han in flags:
            if is_han:
                for token in rest:  # this run's tokens, up to its separator
                    if token == "\n":
                        break
                    out.append(token)
            else:
                out.append(next(word))
        return out

    def token_bag(self, text: str) -> list[str]:
        # no merge back into text order: that Python loop over every token cost 50 of 150 us (3 KB);
        # the runs are split and joined in one compiled call (three calls and three arrays: ~8 us more)
        buf, end, han_end, n_words = _bag_runs(code_points(text), char_classes())
        words = decode_code_points(buf[han_end:end]).split("\n") if n_words else []
        if not han_end:
            return words
        tokens: list[str] = self._rjieba_cut(decode_code_points(buf[:han_end]), False)
        return tokens + words if words else tokens

    def _han_tokens_and_words(self, text: str) -> tuple[list[str], list[str], list[bool]]:
        """rjieba's tokens of all Han runs ("\\n" between runs), the other words, and each piece's
        Han flag, in text order."""
        codes, starts, ends, han = _spans(text)
        flags = han.tolist()
        n_han = sum(flags)
        # slicing ~170 pieces of a 3 KB text one by one in Python cost 30-50 us
        words = decode_code_points(_joined(codes, starts, ends, han, False)).split("\n") if n_han < len(flags) else []
        if not n_han:
            return [], words, flags
        tokens: list[str] = self._rjieba_cut(decode_code_points(_joined(codes, starts, ends, han, True)), False)
        return tokens, words, flags


_FACTORIES: dict[str, Callable[[], _RunSegmenter]] = {
    "jieba": JiebaSegmenter,
    "rjieba": RjiebaSegmenter,
}


def available_backends() -> list[str]:
    """Backends whose package is importable here, in ``BACKENDS`` order."""
    import importlib.util

    return [name for name in BACKENDS if importlib.util.find_spec(name) is not None]


@cache
def get_segmenter(name: str = "auto") -> Segmenter:
    """A shared segmenter: ``auto`` (default), ``rjieba`` or ``jieba``.

    Both backends give jieba's tokens (checked by the tests on fixtures and in docs/text.md on the
    corpora), so the choice never changes fingerprints. ``auto`` is rjieba, a required dependency with
    wheels for the common platforms; where it cannot be imported, ``auto`` falls back to jieba (same
    tokens, ~20x slower) with a one-line warning. An explicitly requested backend that is not
    installed raises ImportError naming the package.
    """
    if name == "auto":
        if "rjieba" in available_backends():
            name = "rjieba"
        else:
            log.warning("rjieba is not installed (no wheel for this platform?): segmenting with jieba, "
                        "same tokens, ~20x slower")
            name = "jieba"
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ValueError(f"unknown segmenter {name!r}; choose one of {(*BACKENDS, 'auto')}")
    try:
        return factory()
    except ImportError as exc:
        raise ImportError(f"segmenter {name!r} needs the {name} package (pip install {name})") from exc


token_spans = _token_spans  # for compiled callers: (starts, ends, is_han) of codes under char_classes()
