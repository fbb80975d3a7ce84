"""The edge tracks: the shapes where containment and boilerplate decide, built from real text.

``python -m benchmarks edge-tracks`` writes ``edges-en`` (Python 3.11 documentation) and ``edges-zh``
(manpages-zh, Debian Reference) next to the crawl tracks (same sources, same cache, same files:
``NAME_docs.jsonl`` with ``main`` = the text as written, ``NAME_pairs.jsonl`` = every pair of
documents of one source with their exact Jaccard and containment). Shapes, a third of the articles
each (``index`` besides):
- ``short``: short articles (en 100-250 words, zh 300-700 characters) and a repost of each with
  5-20% cut from its end and an ad paragraph inserted (Jaccard mostly 0.6-0.8);
- ``family``: short pages of one site family that share a long footer (author, bugs, copyright, see
  also): different articles, so no pair of them is a duplicate; each page also reposted once whole;
- ``index`` (en): real Sphinx section-index pages (a list of links to sub-pages) as published, and
  a repost on a blog template that keeps the list as text;
- ``archive``: very long pages (articles end to end, ~60,000 characters each, like a long manual
  page or a forum thread) next to short pages, a section of every article of the shape: two thirds
  of them are in an archive (contained), a third are not; all start with the same site header.
A pair's source relation: the two share an article (an archive shares each article it holds).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from benchmarks.web import reposts, sites
from benchmarks.web.sources import Block, SourceArticle, fetch_package, python_docs
from benchmarks.web.tracks import DEFAULT_CACHE, drop_overlapping, overlap, truth_shingles, zh_articles

Doc = dict[str, Any]
EN_FOOTERS = tuple(
    f"AUTHOR Written by the {name} maintainers and contributors. REPORTING BUGS Report bugs to the "
    f"{name} issue tracker at https://bugs.example.org/{name.lower()} and include the version you run, "
    f"the exact command line and what you expected to happen instead. COPYRIGHT Copyright the {name} "
    f"authors. License GPLv3+: GNU GPL version 3 or later. This is free software: you are free to change "
    f"and redistribute it. There is NO WARRANTY, to the extent permitted by law. SEE ALSO The full "
    f"documentation for {name} is maintained as a Texinfo manual; the info and {name.lower()} programs "
    f"should give you access to the complete manual."
    for name in ("Coreutils", "Findutils", "Diffutils", "Binutils"))
ZH_FOOTERS = tuple(
    f"作者 本手册页由{name}项目的维护者与贡献者编写。报告错误 请将错误报告发送到{name}的问题追踪系统，"
    f"并注明所用版本、完整的命令行以及期望得到的结果。版权 版权所有{name}作者。许可证为GNU通用公共许可证"
    f"第三版或更新版本。这是自由软件：您可以自由地修改和重新发布它。在法律允许的范围内不提供任何担保。"
    f"参见 {name}的完整文档以Texinfo手册的形式维护；如果您的系统中正确安装了info和相关程序，"
    f"那么命令可以让您访问完整的手册。中文版维护人 中文手册页翻译计划。中文版最新更新 二零零三年。"
    for name in ("核心工具集", "查找工具集", "差异工具集", "二进制工具集"))


def _words(text: str, lang: str) -> int:
    return len(text.split()) if lang == "en" else len(re.sub(r"\s+", "", text))


def _section(art: SourceArticle, lang: str, rng: random.Random, lo: int, hi: int) -> tuple[Block, ...] | None:
    """Consecutive prose blocks of ``art`` of lo..hi words (en) or characters (zh), from a random start."""
    blocks = [b for b in art.blocks if b.kind in ("p", "li", "h")]
    for start in rng.sample(range(len(blocks)), len(blocks)):
        out: list[Block] = []
        for b in blocks[start:]:
            out.append(b)
            size = sum(_words(x.text, lang) for x in out)
            if size >= lo:
                if size <= hi and len(out) >= 3:
                    return tuple(out)
                break
    return None


def _text(blocks: tuple[Block, ...] | list[Block]) -> str:
    return "\n".join(b.text for b in blocks)


def _doc(doc_id: str, text: str, sources: list[str], shape: str, main: str | None = None, html: bool = False) -> Doc:
    d: Doc = {"id": doc_id, "text": text, "sources": sources, "shape": shape, "main": main if main is not None
              else text}
    if html:
        d["content_type"] = "text/html"
    return d


def _cut_end(blocks: list[Block], lang: str, share: float) -> list[Block]:
    """The blocks less ``share`` of their words (characters) from the end: the last paragraph cut."""
    drop = share * sum(_words(b.text, lang) for b in blocks)
    while blocks and _words(blocks[-1].text, lang) <= drop:
        drop -= _words(blocks.pop().text, lang)
    if blocks and drop > 0:
        last = blocks[-1].text
        keep = last.split()[: -round(drop)] if lang == "en" else list(last[: len(last) - round(drop)])
        blocks[-1] = Block(blocks[-1].kind, (" " if lang == "en" else "").join(keep))
    return blocks


def _sections(arts: list[SourceArticle], lang: str, rng: random.Random, size: tuple[int, int], n: int
              ) -> Iterator[tuple[SourceArticle, tuple[Block, ...]]]:
    """A section of ``size`` words (characters) of each article that has one, ``n`` at most."""
    found = 0
    for art in arts:
        if found >= n:
            return
        blocks = _section(art, lang, rng, *size)
        if blocks is not None:
            found += 1
            yield art, blocks


def short_reposts(arts: list[SourceArticle], lang: str, rng: random.Random, n: int) -> list[Doc]:
    ads = reposts.EN_ADS if lang == "en" else reposts.ZH_ADS
    out: list[Doc] = []
    for art, blocks in _sections(arts, lang, rng, (100, 250) if lang == "en" else (300, 700), n):
        cut = _cut_end(list(blocks), lang, rng.uniform(0.05, 0.2))
        cut.insert(rng.randint(1, max(1, len(cut) - 1)), Block("p", rng.choice(ads)))
        if rng.random() < 0.5:
            cut.append(Block("p", reposts.repost_line(lang, "the original site", rng)))
        out += [_doc("", _text(blocks), [art.key], "short"), _doc("", _text(cut), [art.key], "short")]
    return out


def family_pages(arts: list[SourceArticle], lang: str, rng: random.Random, n: int) -> list[Doc]:
    footers = EN_FOOTERS if lang == "en" else ZH_FOOTERS
    out: list[Doc] = []
    for art, blocks in _sections(arts, lang, rng, (60, 160) if lang == "en" else (150, 400), n):
        page = _text(blocks) + "\n" + footers[len(out) // 2 % len(footers)]
        line = reposts.repost_line(lang, "the original site", rng)
        out += [_doc("", page, [art.key], "family"), _doc("", line + "\n" + page, [art.key], "family")]
    return out


def index_pages(root: Path, rng: random.Random, n: int) -> list[Doc]:
    """Real Sphinx pages that are mostly links (section indexes) and a blog repost of each."""
    pages = [a for a in python_docs(root, min_words=30, max_words=3000, max_link_share=1.0)
             if sum(b.kind == "li" for b in a.blocks) >= 0.6 * len(a.blocks) and len(a.blocks) >= 8]
    out: list[Doc] = []
    for art in rng.sample(pages, min(n, len(pages))):
        assert art.page is not None
        main = _text(art.blocks)
        chrome = sites.Chrome(site="Python Tips Blog", headlines=tuple(p.title for p in pages[:12]), comments=(),
                              views=rng.randint(10, 9999), stamp="2024-03-01 10:00", author="Alex",
                              toc=(), prev_next=("", ""))
        repost = sites.en_blog(art.title, art.blocks, chrome, rng)
        out += [_doc("", art.page.read_text(encoding="utf-8"), [art.key], "index", main, html=True),
                _doc("", repost, [art.key], "index", main, html=True)]
    return out


ARCHIVE_HEADERS = {
    "en": "Reference Library Online Edition. Home / Documentation / Archive. This page is part of the "
          "reference library mirror, updated nightly from the upstream sources; report broken links to the "
          "site maintainers.",
    "zh": "参考资料在线版 首页 / 文档 / 归档 本页属于参考资料镜像站，每晚从上游源同步更新，"
          "如发现失效链接请联系本站维护人员。",
}


def archives(arts: list[SourceArticle], lang: str, rng: random.Random, chars: int = 60_000) -> list[Doc]:
    """Archives of about ``chars`` characters each (the last may be shorter) holding two thirds of
    ``arts``; a short section of each article, held or not. Every page starts with the site's
    header, so the prefix bands make each short page a candidate of the archives: verification, not
    the index, decides."""
    lo, hi = (100, 300) if lang == "en" else (300, 800)
    header = ARCHIVE_HEADERS[lang]
    out: list[Doc] = []
    group: list[SourceArticle] = []
    for art in arts[: len(arts) * 2 // 3]:
        group.append(art)
        if sum(len(a.text) for a in group) >= chars or art is arts[len(arts) * 2 // 3 - 1]:
            out.append(_doc("", "\n".join([header, *(a.text for a in group)]), [a.key for a in group], "archive"))
            group = []
    for art in arts:
        blocks = _section(art, lang, rng, lo, hi)
        if blocks is not None:
            out.append(_doc("", header + "\n" + _text(blocks), [art.key], "archive"))
    return out


def pairs_of(docs: list[Doc], lang: str) -> list[dict[str, Any]]:
    """Every pair of documents that share a source, with the exact Jaccard and containment of their
    written texts."""
    by_source: dict[str, list[int]] = {}
    for i, d in enumerate(docs):
        for s in d["sources"]:
            by_source.setdefault(s, []).append(i)
    seen: set[tuple[int, int]] = set()
    out = []
    for members in by_source.values():
        for x in members:
            for y in members:
                if x < y and (x, y) not in seen:
                    seen.add((x, y))
                    j, c = overlap(truth_shingles(docs[x]["main"], lang), truth_shingles(docs[y]["main"], lang))
                    a, b = sorted((docs[x]["id"], docs[y]["id"]))
                    out.append({"a": a, "b": b, "jaccard": round(j, 4), "containment": round(c, 4)})
    return out


def build_track(arts: list[SourceArticle], lang: str, seed: int, index_root: Path | None) -> list[Doc]:
    rng = random.Random(f"{seed}:{lang}")
    arts = sorted(arts, key=lambda a: a.key)
    rng.shuffle(arts)
    third = len(arts) // 3
    docs = short_reposts(arts[:third], lang, rng, 120) + family_pages(arts[third : 2 * third], lang, rng, 80)
    docs += archives(arts[2 * third :], lang, rng)
    if index_root is not None:
        docs += index_pages(index_root, rng, 40)
    rng.shuffle(docs)
    for i, d in enumerate(docs):
        d["id"] = f"e{lang}{i:05d}"
    return docs


def write(out: Path, name: str, docs: list[Doc], lang: str) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    pairs = pairs_of(docs, lang)
    with open(out / f"{name}_docs.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(d, ensure_ascii=False) + "\n" for d in docs)
    with open(out / f"{name}_pairs.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(p) + "\n" for p in pairs)
    shapes: dict[str, int] = {}
    for d in docs:
        shapes[d["shape"]] = shapes.get(d["shape"], 0) + 1
    return {"docs": len(docs), "pairs": len(pairs), "shapes": shapes}


@click.command("edge-tracks")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE, show_default=True,
              help="Where the Debian packages are fetched and unpacked, and the tracks written.")
@click.option("--seed", type=int, default=1, show_default=True, help="Random seed (the build is reproducible).")
def command(cache: Path, seed: int) -> None:
    """Build the edge tracks (edges-en, edges-zh) from Debian packages into CACHE/tracks."""
    py_root, py_version = fetch_package("python3.11-doc", cache)
    zh, zh_versions = zh_articles(cache)
    en = drop_overlapping(list(python_docs(py_root, min_words=100)), "en")
    manifest = {"seed": seed, "packages": {"python3.11-doc": py_version, **zh_versions},
                "tracks": {"edges-en": write(cache / "tracks", "edges-en", build_track(en, "en", seed, py_root), "en"),
                           "edges-zh": write(cache / "tracks", "edges-zh", build_track(zh, "zh", seed, None), "zh")}}
    (cache / "tracks" / "edges-manifest.json").write_text(json.dumps(manifest, indent=1))
    click.echo(json.dumps(manifest, indent=1))
