"""Word segmentation behind one interface, with backends that give identical tokens.

Tokenization rule (the same for every backend, so that switching backend never changes features):

- The input is normalized text (``stream.text.normalize``: NFKC, casefolded).
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
skipping it is also faster (docs/text.md: cut() is faster than ``jieba.lcut(HMM=False)`` alone).

POS tags (``cut_pos``): the same tokens, each tagged with jieba's dictionary tag (``x`` when the word
has no tag) -- exactly what ``jieba.posseg`` gives with HMM off, but by a dictionary lookup instead of
posseg's second segmentation pass, so it costs little more than ``cut``. Non-Han tokens are tagged
``eng`` when they contain a Latin letter, ``m`` (numeral) when they are digits, ``x`` otherwise.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from functools import cache
from typing import Any, Protocol

# Settings that determine the tokens; recorded in the fingerprint schema. Every backend produces
# the same tokens for these settings, so the string does not name the backend.
SETTINGS = "jieba-precise;hmm=off;dict=jieba-default;han-runs+regex-words;v1"

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
# group 1: a Han run; group 2: a word of any other script (letters/digits, "_" excluded) with
# trailing ".digits" groups so "3.11" and "python3.11" stay one token.
_TOKEN_RE = re.compile(rf"([{_HAN}]+)|((?:[^\W_{_HAN}])+(?:\.\d+)*)")
_LATIN_LETTER = re.compile(r"[a-z]", re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:\.\d+)*")

BACKENDS = ("jieba", "rjieba", "jieba_fast")
# "auto" candidates, fastest first: only backends measured token-identical to jieba (jieba_fast is not:
# its C route breaks probability ties the other way, e.g. 修修修 -> 修|修修 instead of 修修|修).
AUTO_ORDER = ("rjieba", "jieba")


class Segmenter(Protocol):
    name: str
    settings: str

    def cut(self, text: str) -> list[str]: ...

    def cut_pos(self, text: str) -> list[tuple[str, str]]: ...


def _word_tag(word: str) -> str:
    if _LATIN_LETTER.search(word):
        return "eng"
    return "m" if _NUMBER.fullmatch(word) else "x"


class _RunSegmenter:
    """Splits text into Han runs and other words; subclasses segment and tag the Han runs."""

    name = "base"
    settings = SETTINGS

    def _cut_han(self, run: str) -> list[str]:
        raise NotImplementedError

    def _tag_han(self, run: str) -> list[tuple[str, str]]:
        raise NotImplementedError

    def cut(self, text: str) -> list[str]:
        out: list[str] = []
        extend, append, cut_han = out.extend, out.append, self._cut_han
        for han, word in _TOKEN_RE.findall(text):
            if han:
                extend(cut_han(han))
            else:
                append(word)
        return out

    def cut_pos(self, text: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for han, word in _TOKEN_RE.findall(text):
            if han:
                out.extend(self._tag_han(han))
            else:
                out.append((word, _word_tag(word)))
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


class JiebaFastSegmenter(JiebaSegmenter):
    """``jieba_fast``: jieba with the DAG and route computed in C (2-2.5x faster than jieba).

    NOT token-identical: where two routes have exactly the same probability (reduplications such as
    修修修, 一一一) its C code keeps the other route than jieba's ``max``; 9 of 21,682 corpus documents
    differ (docs/text.md). Its ``settings`` therefore differ from the other backends'.
    """

    name = "jieba_fast"
    settings = SETTINGS + ";route-ties=jieba_fast"

    def _load(self) -> Callable[[str], list[str]]:
        with _jieba_lock:
            if self._route is None:
                import jieba_fast

                _quiet_jieba(jieba_fast)
                tokenizer = jieba_fast.dt
                tokenizer.check_initialized()
                functions = jieba_fast._jieba_fast_functions
                dag_and_calc = functions._get_DAG_and_calc
                freq, total = tokenizer.FREQ, float(tokenizer.total)

                def route(run: str) -> list[str]:
                    ends: list[int] = []
                    dag_and_calc(freq, run, ends, total)
                    words, x, n = [], 0, len(run)
                    while x < n:
                        y = ends[x] + 1
                        words.append(run[x:y])
                        x = y
                    return words

                self._route = route
        return self._route


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
        parts = _TOKEN_RE.findall(text)
        runs = [han for han, _ in parts if han]
        if not runs:
            return [word for _, word in parts]
        tokens: list[str] = self._rjieba_cut("\n".join(runs), False)
        if len(runs) == len(parts):  # all Han: drop the separators
            return [t for t in tokens if t != "\n"]
        out: list[str] = []
        rest = iter(tokens)
        for han, word in parts:
            if han:
                for token in rest:  # this run's tokens, up to its separator
                    if token == "\n":
                        break
                    out.append(token)
            else:
                out.append(word)
        return out


_FACTORIES: dict[str, Callable[[], _RunSegmenter]] = {
    "jieba": JiebaSegmenter,
    "jieba_fast": JiebaFastSegmenter,
    "rjieba": RjiebaSegmenter,
}


def available_backends() -> list[str]:
    """Backends whose package is importable here, in ``BACKENDS`` order."""
    import importlib.util

    return [name for name in BACKENDS if importlib.util.find_spec(name) is not None]


@cache
def get_segmenter(name: str = "jieba") -> Segmenter:
    """A shared segmenter: ``jieba`` (default), ``rjieba``, ``jieba_fast``, or ``auto``.

    ``auto`` picks the fastest installed backend; all backends give jieba's tokens (checked by the
    tests on fixtures and in docs/text.md on the corpora), so ``auto`` never changes fingerprints.
    Raises ImportError naming the package when an explicitly requested backend is not installed.
    """
    if name == "auto":
        installed = available_backends()
        name = next(b for b in AUTO_ORDER if b in installed or b == "jieba")
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ValueError(f"unknown segmenter {name!r}; choose one of {(*BACKENDS, 'auto')}")
    try:
        return factory()
    except ImportError as exc:
        raise ImportError(
            f"segmenter {name!r} needs the {name} package (pip install 'stream-dedup[fast]')"
        ) from exc
