"""How a repost changes an article: truncation, excerpt, an inserted ad paragraph, a repost line,
small edits (regional word variants in Chinese, typos in English).

``EDIT_PLANS`` is the mix a repost draws from; every plan keeps the source article recognisable,
which is what the ground truth says ("same source article").
"""

from __future__ import annotations

import random
import re

from benchmarks.web.sources import Block

# (edits, weight): each repost draws one plan; a repost line is added independently (REPOST_LINE_P).
EDIT_PLANS: list[tuple[tuple[str, ...], float]] = [
    ((), 0.2), (("truncate",), 0.25), (("excerpt",), 0.15), (("ad",), 0.15), (("edits",), 0.15),
    (("truncate", "ad"), 0.1),
]
REPOST_LINE_P = 0.5

ZH_ADS = (
    "【广告】限时特惠：新用户注册即送三十天会员，点击下方链接立即领取。",
    "【推广】想了解更多技术干货？扫描二维码关注我们的公众号，每日更新。",
    "（广告）云服务器年中大促，两核四G低至九十九元一年，名额有限先到先得。",
    "【赞助】本栏目由某某科技冠名播出，智慧生活从这里开始。",
)
EN_ADS = (
    "Advertisement: Master Python in 30 days with our interactive course. Enroll today and save 40%.",
    "Sponsored: Deploy your Python apps in seconds. Free tier available, no credit card required.",
    "Ad: Looking for a new job? Thousands of Python developer positions are waiting for you.",
)
# Mainland -> Taiwan usage: what a reposting site in another region changes.
ZH_VARIANTS = (
    ("文件", "档案"), ("软件", "软体"), ("默认", "预设"), ("程序", "程式"), ("信息", "资讯"), ("网络", "网路"),
    ("用户", "使用者"), ("支持", "支援"), ("命令", "指令"), ("数据", "资料"), ("内存", "记忆体"), ("硬盘", "硬碟"),
    ("但是", "不过"), ("可以", "能够"), ("如果", "假如"), ("使用", "利用"),
)


def edit(blocks: tuple[Block, ...], plan: tuple[str, ...], lang: str, rng: random.Random,
         repost_line: str | None) -> tuple[Block, ...]:
    out = list(blocks)
    for step in plan:
        if step == "truncate":
            out = _truncate(out, lang)
        elif step == "excerpt":
            out = _excerpt(out, lang)
        elif step == "ad":
            ads = ZH_ADS if lang == "zh" else EN_ADS
            out.insert(rng.randint(1, max(1, len(out) - 1)), Block("p", rng.choice(ads)))
        elif step == "edits":
            out = _small_edits(out, lang, rng)
    if repost_line:
        if rng.random() < 0.5:
            out.insert(0, Block("p", repost_line))
        else:
            out.append(Block("p", repost_line))
    return tuple(out)


def _truncate(blocks: list[Block], lang: str) -> list[Block]:
    """Chinese: the last paragraph goes; English: the last section (from its heading), or the last
    fifth of the blocks when the last section is most of the page."""
    if len(blocks) < 2:
        return blocks
    if lang == "zh":
        return blocks[:-1]
    heads = [i for i, b in enumerate(blocks) if b.kind == "h"]
    if heads and heads[-1] >= 0.6 * len(blocks):
        return blocks[: heads[-1]]
    return blocks[: max(1, round(len(blocks) * 0.8))]


def _excerpt(blocks: list[Block], lang: str) -> list[Block]:
    """The first half (Chinese) or first third (English) of the blocks, then a "read more" line."""
    keep = max(2, -(-len(blocks) // (2 if lang == "zh" else 3)))
    more = Block("p", "……阅读全文" if lang == "zh" else "Read the full article »")
    return [*blocks[:keep], more]


_EN_WORD = re.compile(r"\b[a-z]{5,}\b")


def _small_edits(blocks: list[Block], lang: str, rng: random.Random) -> list[Block]:
    """Chinese: up to three regional word variants; English: two or three typos (adjacent letters swapped)."""
    out = list(blocks)
    for _ in range(rng.randint(2, 3)):
        i = rng.randrange(len(out))
        b = out[i]
        if b.kind == "pre":
            continue
        if lang == "zh":
            present = [(a, v) for a, v in ZH_VARIANTS if a in b.text]
            if present:
                a, v = rng.choice(present)
                out[i] = Block(b.kind, b.text.replace(a, v, 1))
            continue
        words = list(_EN_WORD.finditer(b.text))
        if words:
            m = rng.choice(words)
            w = m.group()
            j = rng.randrange(1, len(w) - 1)
            typo = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
            out[i] = Block(b.kind, b.text[: m.start()] + typo + b.text[m.end() :])
    return out


def repost_line(lang: str, original_site: str, rng: random.Random) -> str:
    if lang == "zh":
        return rng.choice((
            f"转载自{original_site}，原文链接：http://www.example.com/a/{rng.randint(10**5, 10**6)}.html",
            f"本文转载自{original_site}，版权归原作者所有，如有侵权请联系删除。",
            f"来源：{original_site}（转载请注明出处）",
        ))
    return rng.choice((
        "This page is a copy of the official Python documentation, licensed under the PSF License.",
        f"Originally published at {original_site}. Reproduced for reference.",
        "Source: docs.python.org (Python 3.11). Formatting adapted for this site.",
    ))
