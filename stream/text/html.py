"""Web pages: main content and title out of raw HTML, site template left out.

Backends (docs/text.md has the measurements on the crawl tracks and on tests/fixtures/html_pages.py):
- ``fast`` (default): template filtering on one lxml parse (``stream.text.main_text``); when it is
  not sure of its result (little prose, mostly link text) the page goes to trafilatura instead, so
  each page is extracted once by one extractor or, rarely, by both.
- ``trafilatura``: removes navigation, sidebars of other headlines, footers, ads, counters,
  comments (comments are not the article). Tuned for CJK: its minimum extraction size is lowered
  so that short Chinese articles are not replaced by its whole-page fallback (see below).
- ``resiliparse``: ``main_content=True`` heuristics, 3-8x faster than trafilatura; keeps more page
  furniture.
- ``strip``: stdlib ``html.parser`` tag stripping, script/style/noscript/template dropped; the fallback
  when an extractor returns nothing (and a backend of its own for tests and benchmarks).

The returned text keeps paragraph breaks as newlines; callers normalize it (``normalize``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from html.parser import HTMLParser
from typing import Any

EXTRACTORS = ("fast", "trafilatura", "resiliparse", "strip")

# An HTML document or fragment: a doctype, a comment, or a well-known tag near the start, or at least
# two tags that close (so "a < b and c > d" in plain text is not HTML).
_HTML_START = re.compile(
    r"\A\s*(?:<!doctype\s+html|<html[\s>]|<head[\s>]|<body[\s>]|<!--|<\?xml)", re.IGNORECASE
)
_HTML_TAG = re.compile(
    r"<(?:p|div|span|a|br|table|tr|td|li|ul|ol|h[1-6]|article|section|script|style|meta|title|img)"
    r"(?:\s[^<>]*)?/?>",
    re.IGNORECASE,
)
_CLOSING_TAG = re.compile(r"</[a-z][a-z0-9]*\s*>", re.IGNORECASE)
_SPACES = re.compile(r"[^\S\n]+")  # whitespace but line breaks
_LINE_BREAK = re.compile(r"\r\n|[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")  # what str.splitlines splits on
_NEWLINE_RUN = re.compile(r" ?\n[\n ]*")  # a line break with the spaces and blank lines around it
# Page furniture that extractors keep inside the article block: publication timestamps with a time
# of day (a date alone may be content: "2024-06-01 起实施") and view/comment counters. Removed so two
# crawls of one page, or one article on two sites, do not differ by them.
_TIMESTAMP = re.compile(
    r"(?:(?:发布|发表|更新|编辑)?时间|发表于|published|posted|updated|last modified)?\s*[:：]?\s*"
    r"\d{4}[-/.年]\d{1,2}[-/.月]\d{1,2}日?\s*\d{1,2}:\d{2}(?::\d{2})?",
    re.IGNORECASE,
)
_CLOCK = re.compile(r"\d:\d\d")
_COUNTER = re.compile(
    r"(?:阅读|浏览|点击|访问|围观|评论|回复|点赞)(?:量|数|次数)?\s*[:：]?\s*\d[\d,]*\s*次?"
    r"|\d[\d,]*\s*(?:次阅读|人阅读|次浏览|人浏览|条评论|人围观)"
    r"|\b\d[\d,]*\s+(?:views|reads|comments|replies|likes)\b",
    re.IGNORECASE,
)
_HAS_WORD = re.compile(r"[^\W_]")
# Sphinx-style pilcrow header links and list bullets written into the text: one site's template
# puts them in, another's does not.
_PILCROW = re.compile(r"\s*¶")
_BULLET = re.compile(r"^[ \t]*[-•·▪◦●‣][ \t]+", re.MULTILINE)  # not "*": man pages mark options with it
_TABLE_EDGE = re.compile(r"^[|\s]+|[|\s]+$", re.MULTILINE)


@dataclass(frozen=True)
class ExtractedPage:
    title: str | None
    text: str
    method: str  # "fast" | "trafilatura" | "resiliparse" | "strip"


def looks_like_html(text: str) -> bool:
    """True when ``text`` is (very probably) HTML rather than plain text that mentions a tag."""
    head = text[:2048]
    if _HTML_START.search(head):
        return True
    return len(_HTML_TAG.findall(head)) >= 2 and _CLOSING_TAG.search(head) is not None


def _tidy(text: str) -> str:
    """Collapse runs of spaces, keep one newline between paragraphs, strip (three passes over the
    whole text: a loop per line cost a third of the extraction time on documentation pages)."""
    text = _SPACES.sub(" ", _LINE_BREAK.sub("\n", text))
    return _NEWLINE_RUN.sub("\n", text).strip()


class _TagStripper(HTMLParser):
    """Text of an HTML page without script/style/noscript/template content; block tags -> newlines."""

    _SKIP = frozenset({"script", "style", "noscript", "template", "svg"})
    _BLOCK = frozenset({
        "p", "div", "br", "li", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "article",
        "section", "header", "footer", "nav", "aside", "main", "blockquote", "pre", "table", "ul", "ol",
        "dd", "dt", "hr", "form",
    })

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self._skip_depth = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in self._SKIP:
            self._skip_depth += 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in self._SKIP:
            self._skip_depth = max(0, self._skip_depth - 1)
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
        elif not self._skip_depth:
            self.parts.append(data)


def strip_tags(html: str) -> ExtractedPage:
    """Plain tag stripping (stdlib): every visible text, scripts and styles dropped."""
    parser = _TagStripper()
    parser.feed(html)
    parser.close()
    title = headline(_tidy(" ".join(parser.title_parts)))
    return ExtractedPage(title=title, text=_tidy("".join(parser.parts)), method="strip")


# trafilatura's MIN_EXTRACTED_SIZE (default 250 characters): below it, trafilatura distrusts its
# result and falls back to other algorithms that return most of the page. 250 characters is a long
# paragraph in English but a whole news flash in Chinese, so we lower it to 60.
# favor_recall stays off: no short paragraph is lost without it (0/42), and with it blog furniture
# (tags, counters) leaks into short articles. docs/text.md has the numbers.
_MIN_EXTRACTED_SIZE = 60


@cache
def _trafilatura_config() -> Any:
    from trafilatura.settings import use_config

    config = use_config()
    config.set("DEFAULT", "MIN_EXTRACTED_SIZE", str(_MIN_EXTRACTED_SIZE))
    return config


def _trafilatura(html: str) -> tuple[str | None, str]:
    """One trafilatura pass; the title is the page's own (``<title>`` without the site name)."""
    import trafilatura

    doc: Any = trafilatura.bare_extraction(
        html,
        config=_trafilatura_config(),
        include_comments=False,
        include_tables=True,
        include_images=False,
        include_links=False,
        with_metadata=False,  # its metadata pass costs ~10% and we need only the title
        deduplicate=False,  # its dedup cache is process-global: output would depend on history
    )
    if doc is None:
        return None, ""
    return None, getattr(doc, "text", None) or ""


def _fast(html: str) -> tuple[str | None, str, str]:
    from stream.text.main_text import extract_main

    found = extract_main(html)
    title = found.heading or headline(found.page_title)
    if found.sure:
        return title, found.text, "fast"
    return title, _trafilatura(html)[1], "trafilatura"


def _resiliparse(html: str) -> tuple[str | None, str]:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    tree = HTMLTree.parse(html)
    text = extract_plain_text(
        tree, main_content=True, preserve_formatting=True, list_bullets=False, alt_texts=False,
        comments=False,
    )
    return headline(tree.title), text


_BACKENDS = {"trafilatura": _trafilatura, "resiliparse": _resiliparse}


def extract(html: str, backend: str = "fast") -> ExtractedPage:
    """Main content and title of a page; falls back to tag stripping when the extractor finds nothing.

    ``method`` says which produced the text, so a fingerprint can record it. The title falls back to
    the page's ``<title>`` when the extractor finds none.
    """
    if backend == "strip":
        return strip_tags(html)
    if backend == "fast":
        title, text, method = _fast(html)
    elif backend in _BACKENDS:
        (title, text), method = _BACKENDS[backend](html), backend
    else:
        raise ValueError(f"unknown HTML extractor {backend!r}; choose one of {EXTRACTORS}")
    text = _tidy(text)
    if not text:
        stripped = strip_tags(html)
        title = _tidy(title or "") or stripped.title
        return ExtractedPage(title=title, text=scrub(stripped.text, title), method="strip")
    title = _tidy(title or "") or strip_tags_title(html)
    return ExtractedPage(title=title, text=scrub(text, title), method=method)


def scrub(text: str, title: str | None = None) -> str:
    """Remove timestamps, view/comment counters, table-cell pipes and a leading copy of the title.

    Some templates repeat the headline inside the article block and others do not; dropping it from
    the text makes the same article look the same on both (the title is returned separately).
    """
    if _CLOCK.search(text):  # the timestamp pattern is slow to try at every position (~1 ms per doc page)
        text = _TIMESTAMP.sub(" ", text)
    text = _BULLET.sub("", _PILCROW.sub("", _COUNTER.sub(" ", text)))
    text = _TABLE_EDGE.sub("", _tidy(text))
    # lines left with no letter or digit (separators around a removed counter: "· ·")
    text = "\n".join(line for line in text.splitlines() if _HAS_WORD.search(line))
    if title:
        # compare with all whitespace removed: extractors space the title differently
        squeezed_title = "".join(title.split())
        head = "".join(text[: len(title) + 16].split())
        if squeezed_title and head.startswith(squeezed_title):
            seen = 0
            for i, ch in enumerate(text):  # cut after the title's last non-space character
                if not ch.isspace():
                    seen += 1
                    if seen == len(squeezed_title):
                        text = text[i + 1 :]
                        break
    return _tidy(text)


_TITLE_SEPARATOR = re.compile(r"\s+[-|–—·»]\s+|\s*_\s*")


def headline(page_title: str | None) -> str | None:
    """A <title> without its site name: the longest part between " - ", " | ", "_" ... separators."""
    if not page_title:
        return None
    parts = [p.strip() for p in _TITLE_SEPARATOR.split(page_title) if p.strip()]
    return max(parts, key=len) if parts else None


def strip_tags_title(html: str) -> str | None:
    """The page's <title> element without its site name, or None."""
    match = re.search(r"<title[^>]*>(.*?)</title\s*>", html, re.IGNORECASE | re.DOTALL)
    if not match:
        return None
    return headline(_tidy(strip_tags(match.group(1)).text))
