"""The crawl-like HTML tracks: real articles on several site templates, reposted with edits.

``python -m benchmarks crawl-tracks`` fetches the source packages into a cache directory (outside the
repository), builds the pages and writes, per track, ``NAME_docs.jsonl`` (one page per line:
``id``, ``text`` = the HTML, ``content_type``, ``url``, ``article``, ``site``, ``edits``, ``main`` = the
page's article text as rendered, for extraction checks), ``NAME_pairs.jsonl`` (EVERY pair of pages of
the same source article: ``a``, ``b``, ``jaccard`` and ``containment`` of the two rendered article
texts, shingled as the ground truth shingles) and ``manifest.json`` (sources, licences, package
versions, seed, counts). Ground truth is "same source article"; sources that overlap each other
(containment > 0.5 between two source articles) are dropped so that no cross-article pair is a
duplicate.

- ``zh-news``: Chinese articles (Debian Reference zh-cn, manpages-zh) on four news-like templates
  (portal, blog, forum, mobile) and six sites; the original on one site, 1-3 reposts on others.
- ``en-docs``: Python 3.11 documentation pages; the original is the real Sphinx page as published,
  reposts on three simulated templates (docs mirror, blog, aggregator) and four sites.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from benchmarks.web import reposts, sites
from benchmarks.web.sources import (
    PACKAGES,
    Block,
    SourceArticle,
    debian_reference,
    fetch_package,
    manpages_zh,
    python_docs,
)

DEFAULT_CACHE = Path.home() / ".cache" / "stream-dedup" / "crawl"
ZH_SITES = [("portal", "东方新闻网"), ("portal", "华夏资讯网"), ("blog", "码农笔记"), ("blog", "极客小站"),
            ("forum", "开源技术论坛"), ("mobile", "掌上快讯")]
EN_SITES = [("mirror", "DevDocs Mirror"), ("mirror", "PyRef Online"), ("blog", "Python Tips Blog"),
            ("aggregator", "CodeIndex")]
ZH_COMMENTS = ("写得很详细，收藏了。", "感谢分享，学到了。", "楼主辛苦了！", "请问这个在新版本里还适用吗？",
               "顶一个，支持原创。", "讲得很清楚，比官方文档好懂。", "我按照步骤试了一下，确实可以。",
               "有没有更简单的方法？", "mark一下，以后再看。", "这篇文章帮了我大忙。", "转发给同事看看。",
               "说得太对了，深有同感。")
EN_COMMENTS = ("Thanks, this helped a lot.", "Is this still valid for Python 3.12?", "Great explanation!",
               "Bookmarked for later.", "The official docs say the same thing, but this is easier to read.",
               "Could you add an example?", "Saved me hours of debugging.")
ZH_AUTHORS = ("张伟", "王芳", "李娜", "刘洋", "陈静", "本站编辑", "小编")
EN_AUTHORS = ("admin", "J. Smith", "Editorial Team", "pyfan")


@dataclass
class Page:
    id: str
    html: str
    article: str
    site: str
    edits: tuple[str, ...]
    main: str  # the article text as rendered (no title)


def truth_shingles(text: str, lang: str) -> frozenset[str]:
    """The ground truth's shingles: character 5-grams without whitespace (Chinese), lower-cased
    ``\\w+`` word 3-grams (English), as ../shared/tools/neardup_truth.py."""
    if lang == "en":
        w = re.findall(r"\w+", text.lower())
        return frozenset(" ".join(w[i : i + 3]) for i in range(len(w) - 2)) if len(w) >= 3 else frozenset(w)
    t = re.sub(r"\s+", "", text)
    return frozenset(t[i : i + 5] for i in range(len(t) - 4)) if len(t) >= 5 else frozenset([t] if t else [])


def overlap(a: frozenset[str], b: frozenset[str]) -> tuple[float, float]:
    """(Jaccard, containment of the smaller set in the larger)."""
    inter = len(a & b)
    if not a or not b:
        return 0.0, 0.0
    return inter / (len(a) + len(b) - inter), inter / min(len(a), len(b))


def drop_overlapping(articles: list[SourceArticle], lang: str, limit: float = 0.5) -> list[SourceArticle]:
    """Keep an article only if no kept article shares more than ``limit`` of the smaller's shingles."""
    kept: list[tuple[SourceArticle, frozenset[str]]] = []
    postings: dict[str, list[int]] = defaultdict(list)
    for art in articles:
        sh = truth_shingles(art.text, lang)
        counts: dict[int, int] = defaultdict(int)
        for s in sh:
            for j in postings.get(s, ()):
                counts[j] += 1
        if not sh or any(n > limit * min(len(sh), len(kept[j][1])) for j, n in counts.items()):
            continue
        for s in sh:
            postings[s].append(len(kept))
        kept.append((art, sh))
    return [a for a, _ in kept]


def _chrome(site: str, lang: str, titles: list[str], art: SourceArticle, rng: random.Random,
            prev_next: tuple[str, str]) -> sites.Chrome:
    others = [t for t in titles if t != art.title]
    pool = ZH_COMMENTS if lang == "zh" else EN_COMMENTS
    return sites.Chrome(
        site=site, headlines=tuple(rng.sample(others, min(20, len(others)))),
        comments=tuple(rng.sample(pool, rng.randint(0, 5))), views=rng.randint(10, 99999),
        stamp=f"20{rng.randint(19, 24)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
              f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}",
        author=rng.choice(ZH_AUTHORS if lang == "zh" else EN_AUTHORS),
        toc=tuple(b.text for b in art.blocks if b.kind == "h"), prev_next=prev_next)


def _main_text(blocks: tuple[Block, ...]) -> str:
    return "\n".join(b.text for b in blocks)


def build_pages(articles: list[SourceArticle], lang: str, seed: int) -> list[Page]:
    """The original of each article and 1-3 reposts on other sites, in a shuffled crawl order."""
    site_list = ZH_SITES if lang == "zh" else EN_SITES
    templates = sites.ZH_SITES if lang == "zh" else sites.EN_SITES
    titles = [a.title for a in articles]
    pages: list[Page] = []
    for n, art in enumerate(articles):
        rng = random.Random(f"{seed}:{art.key}")
        prev_next = (titles[n - 1], titles[(n + 1) % len(titles)])
        if art.page is not None:  # the real published page is the original
            origin = "docs.python.org"
            pages.append(Page("", art.page.read_text(encoding="utf-8"), art.key, "python-docs", (),
                              _main_text(art.blocks)))
            hosts = rng.sample(site_list, rng.choice((1, 2, 2, 3)))
        else:
            first, *hosts = rng.sample(site_list, 1 + rng.choice((1, 2, 2, 3)))
            origin = first[1]
            chrome = _chrome(origin, lang, titles, art, rng, prev_next)
            pages.append(Page("", templates[first[0]](art.title, art.blocks, chrome, rng), art.key,
                              first[1], (), _main_text(art.blocks)))
        for template, site in hosts:
            plans, weights = zip(*reposts.EDIT_PLANS, strict=True)
            plan = rng.choices(plans, weights)[0]
            line = reposts.repost_line(lang, origin, rng) if rng.random() < reposts.REPOST_LINE_P else None
            blocks = reposts.edit(art.blocks, plan, lang, rng, line)
            chrome = _chrome(site, lang, titles, art, rng, prev_next)
            edits = (*plan, "repost_line") if line else plan
            pages.append(Page("", templates[template](art.title, blocks, chrome, rng), art.key, site, edits,
                              _main_text(blocks)))
    random.Random(seed).shuffle(pages)
    for i, page in enumerate(pages):
        page.id = f"{lang}{i:05d}"
    return pages


def true_pairs(pages: list[Page], lang: str) -> list[dict[str, Any]]:
    by_article: dict[str, list[Page]] = defaultdict(list)
    for page in pages:
        by_article[page.article].append(page)
    out = []
    for group in by_article.values():
        for a, b in itertools.combinations(group, 2):
            j, c = overlap(truth_shingles(a.main, lang), truth_shingles(b.main, lang))
            x, y = sorted((a.id, b.id))
            out.append({"a": x, "b": y, "jaccard": round(j, 4), "containment": round(c, 4)})
    return out


def cross_article_near_pairs(pages: list[Page], lang: str, limit: float = 0.8) -> int:
    """Pairs of pages of DIFFERENT articles whose rendered texts have Jaccard or containment >= limit
    (should be 0: the ground truth would be wrong for them)."""
    sets = [truth_shingles(p.main, lang) for p in pages]
    postings: dict[str, list[int]] = defaultdict(list)
    bad = 0
    for i, sh in enumerate(sets):
        counts: dict[int, int] = defaultdict(int)
        for s in sh:
            for j in postings[s]:
                counts[j] += 1
            postings[s].append(i)
        bad += sum(1 for j, n in counts.items() if pages[j].article != pages[i].article
                   and n >= limit * min(len(sh), len(sets[j])))
    return bad


def zh_articles(cache: Path) -> tuple[list[SourceArticle], dict[str, str]]:
    ref, ref_version = fetch_package("debian-reference-zh-cn", cache)
    man, man_version = fetch_package("manpages-zh", cache)
    return drop_overlapping([*debian_reference(ref), *manpages_zh(man)], "zh"), {
        "debian-reference-zh-cn": ref_version, "manpages-zh": man_version}


def en_articles(cache: Path, count: int, seed: int) -> tuple[list[SourceArticle], dict[str, str]]:
    root, version = fetch_package("python3.11-doc", cache)
    articles = drop_overlapping(list(python_docs(root)), "en")
    return sorted(random.Random(seed).sample(articles, min(count, len(articles))), key=lambda a: a.key), {
        "python3.11-doc": version}


def write_track(out: Path, name: str, pages: list[Page], lang: str) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    pairs = true_pairs(pages, lang)
    with open(out / f"{name}_docs.jsonl", "w", encoding="utf-8") as fh:
        for p in pages:
            fh.write(json.dumps({"id": p.id, "text": p.html, "content_type": "text/html", "url":
                                 f"http://{p.site}/{p.id}", "article": p.article, "site": p.site,
                                 "edits": list(p.edits), "main": p.main}, ensure_ascii=False) + "\n")
    with open(out / f"{name}_pairs.jsonl", "w", encoding="utf-8") as fh:
        for q in pairs:
            fh.write(json.dumps(q) + "\n")
    return {"pages": len(pages), "articles": len({p.article for p in pages}), "true_pairs": len(pairs),
            "pairs_jaccard_below_0.8": sum(q["jaccard"] < 0.8 for q in pairs),
            "cross_article_pairs_at_0.8": cross_article_near_pairs(pages, lang),
            "html_bytes_mean": round(sum(len(p.html.encode()) for p in pages) / max(1, len(pages)))}


def build(cache: Path, out: Path, seed: int = 1, en_count: int = 150) -> dict[str, Any]:
    zh, zh_versions = zh_articles(cache)
    en, en_versions = en_articles(cache, en_count, seed)
    manifest: dict[str, Any] = {
        "seed": seed, "packages": {k: {"deb": v, "licence": PACKAGES[k]} for k, v in {**zh_versions,
                                                                                    **en_versions}.items()},
        "tracks": {"zh-news": write_track(out, "zh-news", build_pages(zh, "zh", seed), "zh"),
                   "en-docs": write_track(out, "en-docs", build_pages(en, "en", seed), "en")}}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False))
    return manifest


def track_paths(out: Path) -> dict[str, tuple[Path, Path]]:
    """Track name -> (docs, pairs) for the accuracy benchmarks."""
    return {name: (out / f"{name}_docs.jsonl", out / f"{name}_pairs.jsonl") for name in ("zh-news", "en-docs")}


@click.command("crawl-tracks")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE, show_default=True,
              help="Where the Debian packages are fetched and unpacked, and the tracks written.")
@click.option("--seed", type=int, default=1, show_default=True,
              help="Random seed of the templates and edits (the build is reproducible).")
@click.option("--en-pages", type=int, default=150, show_default=True, help="Source pages of the English track.")
def command(cache: Path, seed: int, en_pages: int) -> None:
    """Build the crawl-like HTML tracks (zh-news, en-docs) from Debian packages into CACHE/tracks."""
    manifest = build(cache, cache / "tracks", seed, en_pages)
    click.echo(json.dumps(manifest, indent=1, ensure_ascii=False))
