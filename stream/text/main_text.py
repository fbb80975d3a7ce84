"""Main text of a web page by template filtering on one lxml parse (the ``fast`` extractor).

1. Drop what is never the article: scripts, styles, forms, ``nav``/``aside``/``footer``/``header``
   elements, and every element whose class or id names page furniture (``BOILERPLATE_TOKENS``:
   navigation, sidebars, comments, share buttons, ads, related links, breadcrumbs, signatures,
   counters, Sphinx's header links and sidebars ...).
2. Descend from ``<body>`` into the one child container that holds at least ``DESCEND_SHARE`` of its
   parent's prose (text outside links); stop where the text is spread over several children or the
   children are text blocks (paragraphs, list items, table cells with text). Layout tables are
   containers like divs, so a forum post in a table cell is found as a post in a div.
3. The text of that container, with a line break at every block element.

``extract_main`` says whether it is sure: the container must hold at least ``MIN_PROSE`` characters
of prose and most of its text must not be link text, unless it is a section index (a titled
container whose link text is a list: ``is_link_list``); the caller runs trafilatura when it is not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# Class/id tokens (split on spaces, "-" and "_", lower-cased) that name page furniture. A token
# matches exactly, or as a prefix for the entries of BOILERPLATE_PREFIXES ("comments", "sidebar2").
BOILERPLATE_TOKENS = frozenset({
    "nav", "navbar", "navigation", "menu", "topbar", "breadcrumb", "breadcrumbs", "crumbs", "sidebar",
    "sphinxsidebar", "aside", "widget", "comment", "comments", "reply", "replies", "respond", "share",
    "social", "related", "recommend", "feed", "footer", "foot", "ft", "colophon", "copyright", "ad", "ads",
    "advert", "advertisement", "sponsor", "sponsored", "promo", "banner", "sign", "signature", "user",
    "login", "search", "pager", "pagination", "prev", "next", "tags", "tag", "meta", "byline", "info",
    "headerlink", "anchor", "toc", "hdr", "masthead", "top", "rank", "hot", "popular", "editor", "edit",
    "views", "time", "source", "author", "posttime", "open", "app", "newsletter", "subscribe", "nv", "pt",
    "postmeta", "postinfo", "dateline", "date", "stats", "counter", "profile", "pages", "prevnext", "qr",
})
BOILERPLATE_PREFIXES = ("comment", "sidebar", "share", "advert", "sponsor", "breadcrumb", "widget", "related",
                        "footer", "navbar", "social", "pagination")
_DROP_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "form", "button", "select",
                        "input", "textarea", "nav", "aside", "footer", "header", "head", "object", "canvas"})
_KEEP_ALWAYS = frozenset({"html", "body", "main", "article"})
_CONTAINERS = frozenset({"div", "section", "article", "main", "table", "tbody", "thead", "tr", "td", "th",
                         "center", "font", "span", "body"})
_BLOCKS = frozenset({"p", "div", "br", "li", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "article",
                     "section", "main", "blockquote", "pre", "table", "ul", "ol", "dl", "dd", "dt", "hr",
                     "figcaption", "caption"})
_TOKEN_SPLIT = re.compile(r"[\s_\-]+")
DESCEND_SHARE = 0.85
DOMINANCE = 3.0
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
MIN_PROSE = 60
MAX_LINK_SHARE = 0.5
LIST_LINK_SHARE = 0.8  # a section index: at least this share of its link text is in list items


@dataclass(frozen=True)
class MainText:
    heading: str | None  # the container's leading h1/h2: the article's title
    page_title: str | None  # the page's <title> (or og:title), site name included
    text: str
    sure: bool


def _names_furniture(token: str) -> bool:
    return token in BOILERPLATE_TOKENS or token.startswith(BOILERPLATE_PREFIXES)


def is_furniture(el: Any) -> bool:
    """Class tokens name furniture; an id only as a whole (ids are often slugs of headings:
    "top-level-components", "the-time-module")."""
    element_id = (el.get("id") or "").lower()
    if element_id and _names_furniture(element_id):
        return True
    return any(_names_furniture(t) for t in _TOKEN_SPLIT.split((el.get("class") or "").lower()) if t)


def parse(html: str) -> Any:
    from lxml import html as lxml_html

    try:
        return lxml_html.document_fromstring(html)
    except ValueError:  # a str with an XML encoding declaration: lxml wants bytes then
        return lxml_html.document_fromstring(html.encode("utf-8"))


def strip_furniture(root: Any) -> None:
    # one XPath each for the tags and for the elements that have a class or id (most have neither)
    doomed = [el for el in root.iter(*_DROP_TAGS)]
    doomed += [el for el in root.xpath("//*[@class or @id]") if el.tag not in _KEEP_ALWAYS and is_furniture(el)]
    doomed += list(root.xpath("//comment() | //processing-instruction()"))
    for el in doomed:
        if el.getparent() is not None:
            el.drop_tree()  # keeps the element's tail: it is text of the parent


def prose_lengths(root: Any) -> dict[Any, int]:
    """Characters of text outside links under each element (whitespace excluded)."""
    sizes: dict[Any, int] = {}

    def visit(el: Any, in_link: bool) -> int:
        link = in_link or el.tag == "a"
        total = 0 if link else _chars(el.text)
        for child in el:
            total += visit(child, link)
            if not in_link:
                total += _chars(child.tail)
        sizes[el] = total
        return total

    visit(root, False)
    return sizes


def _chars(text: str | None) -> int:
    return len(text) - text.count(" ") - text.count("\n") if text else 0


def main_container(body: Any, sizes: dict[Any, int]) -> Any:
    """Descend while one child container dominates: it holds ``DESCEND_SHARE`` of the prose, or half
    of it and ``DOMINANCE`` times the next child (a forum's first post above its replies). Stop at an
    element with a heading of its own: the heading titles everything under it."""
    node = body
    while node is body or not any(c.tag in _HEADINGS for c in node):
        total = sizes.get(node, 0)
        children = sorted((sizes.get(c, 0), i, c) for i, c in enumerate(node) if isinstance(c.tag, str))
        if total == 0 or not children:
            return node
        best_size, _, best = children[-1]
        runner_up = children[-2][0] if len(children) > 1 else 0
        dominant = best_size >= DESCEND_SHARE * total or (
            best_size >= 0.5 * total and best_size >= DOMINANCE * runner_up)
        if best.tag not in _CONTAINERS or not dominant:
            return node
        node = best
    return node


def block_text(el: Any) -> str:
    parts: list[str] = []

    def visit(node: Any) -> None:
        block = node.tag in _BLOCKS
        if block:
            parts.append("\n")
        if node.text:
            parts.append(node.text)
        for child in node:
            if isinstance(child.tag, str):
                visit(child)
            if child.tail:
                parts.append(child.tail)
        if block:
            parts.append("\n")

    visit(el)
    return "".join(parts)


def page_title(root: Any) -> str | None:
    found = root.find(".//title")
    if found is not None and found.text_content().strip():
        return str(found.text_content())
    for meta in root.iter("meta"):
        if meta.get("property") == "og:title" and meta.get("content"):
            return str(meta.get("content"))
    return None


def _leading_heading(main: Any) -> Any:
    """The container's first h1 or h2 when no text comes before it (blogs title posts with h2)."""
    for el in main.iter():
        if el.tag in ("h1", "h2"):
            return el
        if (el.text or "").strip():
            return None
    return None


def extract_main(html: str) -> MainText:
    root = parse(html)
    title = page_title(root)
    strip_furniture(root)
    body = root.find("body")
    if body is None:
        body = root
    sizes = prose_lengths(body)
    main = main_container(body, sizes)
    h1 = _leading_heading(main)
    heading = None
    if h1 is not None:  # the article's title: returned as the title, not as text
        heading = str(h1.text_content()).strip() or None
        h1.drop_tree()
    text = block_text(main)
    prose = sizes.get(main, 0)
    squeezed = len(text) - text.count(" ") - text.count("\n")
    sure = prose >= MIN_PROSE and (prose >= (1 - MAX_LINK_SHARE) * squeezed
                                   or (main is not body and heading is not None and is_link_list(main)))
    return MainText(heading, title, text, sure)


def is_link_list(el: Any) -> bool:
    """Most of ``el``'s link text sits in list items: a section index (a table of contents of
    sub-pages) is the page's content, and another site that reposts it keeps the list as text;
    trafilatura drops such lists as navigation."""
    in_items = total = 0
    for link in el.iter("a"):
        size = _chars(link.text_content())
        total += size
        if any(a.tag == "li" for a in link.iterancestors()):
            in_items += size
    return total > 0 and in_items >= LIST_LINK_SHARE * total
