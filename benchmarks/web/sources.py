"""Real article text for the crawl-like tracks, from Debian packages fetched into a cache directory.

Nothing here is shipped with the project: ``fetch_package`` runs ``apt-get download`` (the machine's
configured Debian mirror) and unpacks the .deb with ``dpkg-deb -x`` into ``CACHE/NAME/``; the version
fetched is recorded beside it. Sources and licences (from each package's debian/copyright):

| package | what | licence |
|---|---|---|
| debian-reference-zh-cn | Debian Reference (Osamu Aoki), Simplified Chinese translation, DocBook HTML | GPL-2+ |
| manpages-zh | Chinese manual pages (the DESCRIPTION sections) | GFDL-1.2+ and per-page licences |
| python3.11-doc | the Python 3.11 documentation, Sphinx HTML as published | PSF-2.0 |

Chinese articles are runs of Chinese paragraphs (at least half of their characters Han) packed into
articles of 250-1,500 Han characters at section boundaries; English pages are the Sphinx pages
whose main text has 150-5,000 words and is not mostly links (a toctree index is navigation).
"""

from __future__ import annotations

import gzip
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGES = {
    "debian-reference-zh-cn": "GPL-2+",
    "manpages-zh": "GFDL-1.2+ (per-page licences in its debian/copyright)",
    "python3.11-doc": "PSF-2.0",
}
_HAN = re.compile(r"[\u4e00-\u9fff]")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Block:
    """One block of an article: ``h`` (heading), ``p``, ``li`` (list item), ``pre``, ``dt``, ``row``
    (a table row, cells joined by a tab)."""

    kind: str
    text: str


@dataclass(frozen=True)
class SourceArticle:
    key: str
    lang: str  # "zh" | "en"
    title: str
    blocks: tuple[Block, ...]
    origin: str  # package/file
    page: Path | None = None  # the real published page (English: the Sphinx page itself)

    @property
    def text(self) -> str:
        return "\n".join(b.text for b in self.blocks)


def fetch_package(name: str, cache: Path) -> tuple[Path, str]:
    """Unpacked package root and the .deb file name (its version); downloads once per cache."""
    root = cache / name
    done = root / ".fetched"
    if done.exists():
        return root, done.read_text().strip()
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(["apt-get", "download", name], cwd=debs, check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        raise RuntimeError(f"apt-get download {name} failed (run apt-get update first?): {detail.strip()}") from exc
    deb = max(debs.glob(f"{name}_*.deb"), key=lambda p: p.stat().st_mtime)
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    done.write_text(deb.name)
    return root, deb.name


def han_count(text: str) -> int:
    return len(_HAN.findall(text))


def is_chinese_prose(text: str) -> bool:
    squeezed = "".join(text.split())
    return len(squeezed) >= 6 and han_count(squeezed) >= 0.5 * len(squeezed)


def pack(units: list[tuple[str, list[str]]], prefix: str, origin: str, lo: int = 250, hi: int = 1500
         ) -> Iterator[SourceArticle]:
    """(heading, paragraphs) units of one file -> articles of ``lo``-``hi`` Han characters: short units
    are joined with the next, long ones split at paragraph boundaries."""
    title, size, n = "", 0, 0
    paras: list[str] = []
    for heading, unit in units:
        for para in unit:
            if not paras:
                title = heading
            paras.append(para)
            size += han_count(para)
            if size >= hi:
                yield _article(f"{prefix}:{n}", title, paras, origin)
                paras, size, n = [], 0, n + 1
        if size >= lo and len(paras) >= 2:
            yield _article(f"{prefix}:{n}", title, paras, origin)
            paras, size, n = [], 0, n + 1


def _article(key: str, title: str, paras: list[str], origin: str) -> SourceArticle:
    return SourceArticle(key, "zh", title, tuple(Block("p", p) for p in paras), origin)


def debian_reference(root: Path) -> Iterator[SourceArticle]:
    from lxml import html as lxml_html

    for path in sorted((root / "usr/share/debian-reference").glob("ch*.zh-cn.html")):
        tree = lxml_html.parse(str(path))
        units = []
        for section in tree.xpath('//div[@class="section"]'):
            heading = _SPACE.sub(" ", section.xpath('string(./div[@class="titlepage"])')).strip()
            heading = re.sub(r"^[\d.]+\s*", "", heading)
            paras = []
            for p in section.xpath(".//p"):
                if p.xpath('ancestor::div[@class="section"][1]')[0] is not section or p.xpath("ancestor::table"):
                    continue
                text = _SPACE.sub(" ", p.text_content()).strip()
                if is_chinese_prose(text):
                    paras.append(text)
            units.append((heading, paras))
        yield from pack(units, f"debref:{path.name.split('.')[0]}", f"debian-reference-zh-cn/{path.name}")


_ROFF_CHARS = {"\\-": "-", "\\(aq": "'", "\\(dq": '"', "\\(co": "©", "\\e": "\\", "\\~": " ", "\\ ": " "}
_ROFF_ESCAPE = re.compile(r"\\f(?:\(..|\[[^]]*\]|.)|\\\(..|\\\[[^]]*\]|\\[-e&|^%/,]|\\s[-+]?\d")


def manpages_zh(root: Path) -> Iterator[SourceArticle]:
    for path in sorted((root / "usr/share/man/zh_CN").glob("man*/*.gz")):
        try:
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                source = fh.read()
        except (OSError, UnicodeDecodeError):
            continue
        sections = re.split(r"^\.SH\s+", source, flags=re.MULTILINE)
        name = path.name.removesuffix(".gz")
        title = f"{name.rsplit('.', 1)[0]} 手册"
        for section in sections:
            head, _, body = section.partition("\n")
            if head.strip().strip('"') in ("名称", "NAME"):
                title = " ".join(_roff_paragraphs(body)).replace(" - ", "：").strip() or title
            head, _, body = section.partition("\n")
            if head.strip().strip('"') not in ("描述", "说明", "详述", "DESCRIPTION"):
                continue
            paras = [p for p in _roff_paragraphs(body) if is_chinese_prose(p)]
            yield from pack([(title, paras)], f"man:{name}", f"manpages-zh/{path.parent.name}/{path.name}")
            break


_INLINE_MACRO = re.compile(r"^\.(?:B|I|BR|IR|BI|RB|IB|RI|SM|SB)\s+(.*)$")


def _roff_paragraphs(body: str) -> Iterator[str]:
    lines: list[str] = []
    for line in body.splitlines():
        inline = _INLINE_MACRO.match(line)
        if inline:  # .B word, .IR word (1): font macros carry text
            lines.append(inline.group(1).replace('"', ""))
            continue
        if line.startswith((".", "'")):
            if lines:
                yield _roff_text(lines)
                lines = []
            continue
        lines.append(line)
    if lines:
        yield _roff_text(lines)


def _roff_text(lines: list[str]) -> str:
    text = " ".join(lines)
    for escape, char in _ROFF_CHARS.items():
        text = text.replace(escape, char)
    return _SPACE.sub(" ", _ROFF_ESCAPE.sub("", text)).strip()


# -- English: the Python documentation as published (Sphinx) -----------------------------------------

_BLOCK_TAGS = {"p", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "dt"}


def sphinx_blocks(main: object) -> list[Block]:
    """The article blocks of a Sphinx page's main element, in order (header pilcrows left out)."""
    blocks: list[Block] = []
    _walk(main, blocks, in_item=False)
    return [b for b in blocks if b.text]


def _text(el: object) -> str:
    """Text of an element without Sphinx's header links (the pilcrow after each heading)."""
    import copy

    clone = copy.deepcopy(el)
    for link in clone.xpath('.//a[contains(@class, "headerlink")]'):  # type: ignore[attr-defined]
        link.drop_tree()  # keeps the link's tail
    return str(clone.text_content())  # type: ignore[attr-defined]


_INLINE_SKIP = {"script", "style", "nav"}


def _walk(el: object, out: list[Block], in_item: bool) -> None:
    """Blocks under ``el``; text that sits directly in a container (a list item's or a definition's
    own words, between its block children) becomes a block of its own."""
    inline: list[str] = [el.text or ""]  # type: ignore[attr-defined]

    def flush() -> None:
        text = _SPACE.sub(" ", "".join(inline)).strip()
        if text:
            out.append(Block("li" if in_item else "p", text))
        inline.clear()

    for child in el:  # type: ignore[attr-defined]
        tag = child.tag if isinstance(child.tag, str) else ""
        if tag in _INLINE_SKIP or "headerlink" in (child.get("class") or ""):
            inline.append(child.tail or "")
            continue
        if tag not in _BLOCK_TAGS | _CONTAINER_TAGS:
            inline.append(_text(child) + (child.tail or ""))
            continue
        flush()
        if tag == "pre":
            out.append(Block("pre", child.text_content().rstrip()))
        elif tag in _BLOCK_TAGS:
            kind = "h" if tag.startswith("h") else ("li" if in_item and tag == "p" else ("dt" if tag == "dt" else "p"))
            out.append(Block(kind, _SPACE.sub(" ", _text(child)).strip()))
            in_item = False
        elif tag == "li":
            _walk(child, out, in_item=True)
        elif tag == "tr":
            cells = [_SPACE.sub(" ", _text(c)).strip() for c in child if c.tag in ("td", "th")]
            out.append(Block("row", "\t".join(cells)))
        else:
            _walk(child, out, in_item)
        inline.append(child.tail or "")
    flush()


_CONTAINER_TAGS = {"div", "section", "li", "ul", "ol", "dl", "dd", "table", "thead", "tbody", "tr", "blockquote",
                   "figure", "figcaption", "article", "aside", "main", "caption"}


def python_docs(root: Path, min_words: int = 150, max_words: int = 5000, max_link_share: float = 0.5
                ) -> Iterator[SourceArticle]:
    from lxml import html as lxml_html

    base = root / "usr/share/doc/python3.11/html"
    for path in sorted(base.rglob("*.html")):
        rel = path.relative_to(base).as_posix()
        if rel.startswith(("_", "genindex", "search", "py-modindex")) or "/_" in rel:
            continue
        tree = lxml_html.parse(str(path))
        main = tree.xpath('//div[@role="main"]')
        if not main:
            continue
        blocks = sphinx_blocks(main[0])
        words = sum(len(b.text.split()) for b in blocks)
        links = sum(len(_SPACE.sub(" ", a.text_content()).split()) for a in main[0].xpath(".//a"))
        if not (min_words <= words <= max_words) or links > max_link_share * words:
            continue
        heads = [b for b in blocks if b.kind == "h"]
        title = heads[0].text if heads else rel
        yield SourceArticle(f"pydoc:{rel}", "en", title, tuple(b for b in blocks if b is not (heads[0] if heads
                            else None)), f"python3.11-doc/{rel}", page=path)
