# ruff: noqa: E501  (HTML templates are long lines on purpose)
"""Site templates for the crawl-like tracks: the same article wrapped the way different sites do.

Chinese news-like sites (``ZH_SITES``): a news portal, a WordPress-like blog, a table-layout forum
(BBS) and a mobile page, each with navigation, breadcrumbs, a sidebar of other headlines, ads,
share buttons, view counters, timestamps, a comment block and a footer with licence numbers.
English documentation mirrors (``EN_SITES``; the original is the real Sphinx page): a docs mirror
with a sidebar holding the page's table of contents, previous/next links and pilcrow anchors on
headings; a tutorial blog that writes list markers into the text ("• ", "1. ") and "#" anchors; an
aggregator with a table layout and related links.

A page is rendered from an ``Article`` (title + blocks after a repost's edits) and a ``Chrome``
(everything around it that varies per page: other headlines, counters, times, comments).
"""

from __future__ import annotations

import html
import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.web.sources import Block


@dataclass(frozen=True)
class Chrome:
    site: str
    headlines: tuple[str, ...]  # other articles' titles for sidebars and related links
    comments: tuple[str, ...]
    views: int
    stamp: str  # "2023-05-06 13:47"
    author: str
    toc: tuple[str, ...] = ()  # the page's own headings (documentation sites)
    prev_next: tuple[str, str] = ("", "")


def esc(text: str) -> str:
    return html.escape(text, quote=True)


def _links(items: tuple[str, ...] | list[str], cls: str = "") -> str:
    return "".join(f'<li class="{cls}"><a href="/a/{zlib.crc32(t.encode()) % 99991}.html">{esc(t)}</a></li>' for t in items)


def _blocks(blocks: tuple[Block, ...], markers: bool = False, anchor: str = "") -> str:
    """Article blocks as HTML. ``markers``: list items as paragraphs with the marker in the text (some
    sites' editors do that); ``anchor``: a link appended to headings (pilcrow or "#")."""
    out: list[str] = []
    items: list[str] = []
    number = 0
    rows: list[str] = []

    def flush() -> None:
        nonlocal number
        if items:
            out.append("<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>")
            items.clear()
        if rows:
            out.append("<table>" + "".join(rows) + "</table>")
            rows.clear()
        number = 0

    for b in blocks:
        if b.kind == "li" and not markers:
            if rows:
                flush()
            items.append(esc(b.text))
            continue
        if b.kind == "row":
            if items:
                flush()
            rows.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in b.text.split("\t")) + "</tr>")
            continue
        if b.kind != "li":
            flush()
        if b.kind == "li":
            number += 1
            out.append(f"<p>{'•' if number % 2 else '-'} {esc(b.text)}</p>")
        elif b.kind == "h":
            link = f' <a class="anchor" href="#s{len(out)}">{anchor}</a>' if anchor else ""
            out.append(f'<h2 id="s{len(out)}">{esc(b.text)}{link}</h2>')
        elif b.kind == "pre":
            out.append(f"<pre><code>{esc(b.text)}</code></pre>")
        elif b.kind == "dt":
            out.append(f"<dl><dt><code>{esc(b.text)}</code></dt></dl>")
        else:
            out.append(f"<p>{esc(b.text)}</p>")
    flush()
    return "\n".join(out)


def _comments(chrome: Chrome, rng: random.Random) -> str:
    return "".join(
        f'<div class="comment"><span class="user">网友{rng.randint(1000, 99999)}</span>'
        f'<span class="time">{chrome.stamp}</span><p>{esc(c)}</p><a class="reply">回复</a> <a>赞({rng.randint(0, 99)})</a></div>'
        for c in chrome.comments
    )


_ZH_NAV = ("首页", "新闻", "国内", "国际", "财经", "科技", "体育", "娱乐", "汽车", "房产", "教育", "健康", "视频", "图片")


def zh_portal(title: str, blocks: tuple[Block, ...], c: Chrome, rng: random.Random) -> str:
    nav = "".join(f'<a href="/{i}/">{n}</a>' for i, n in enumerate(rng.sample(_ZH_NAV, 10)))
    return f"""<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8"><title>{esc(title)}_{c.site}</title>
<meta name="keywords" content="{esc(title)},新闻,{c.site}"><link rel="stylesheet" href="/static/main.css">
<script>window.__INIT__={{"page":"article","id":{rng.randint(10**6, 10**7)}}};</script>
<style>.nav a{{margin:0 8px}} .ad{{border:1px solid #eee}}</style></head>
<body><div class="top-bar"><a href="/login">登录</a> | <a href="/reg">注册</a> | <a href="/app">下载客户端</a></div>
<div class="header"><a class="logo" href="/">{c.site}</a><div class="nav">{nav}</div>
<form class="search"><input name="q" placeholder="搜索新闻"><button>搜索</button></form></div>
<div class="ad ad-banner"><a href="/ad/1">【广告】夏季大促全场五折起，点击进入活动专区</a></div>
<div class="breadcrumb"><a href="/">{c.site}首页</a> &gt; <a href="/news/">新闻中心</a> &gt; 正文</div>
<div class="main"><div class="article">
<h1 class="title">{esc(title)}</h1>
<div class="meta"><span class="time">{c.stamp}</span> <span class="source">来源：{c.site}</span> <span class="author">作者：{esc(c.author)}</span> <span class="views">阅读 {c.views} 次</span></div>
<div class="content" id="artibody">
{_blocks(blocks)}
</div>
<div class="editor">（责任编辑：{esc(c.author)}）</div>
<div class="share">分享到：<a>微信</a> <a>微博</a> <a>QQ空间</a> <a>复制链接</a></div>
<div class="related"><h3>相关阅读</h3><ul>{_links(c.headlines[:5])}</ul></div>
<div class="comments"><h3>网友评论（{len(c.comments)}）</h3>{_comments(c, rng)}
<form><textarea placeholder="文明上网，理性发言"></textarea><button>发表评论</button></form></div>
</div>
<div class="sidebar"><div class="box"><h3>热点新闻</h3><ol>{_links(c.headlines[5:13])}</ol></div>
<div class="ad ad-side"><a href="/ad/2">【推广】新用户注册即送30天会员</a></div>
<div class="box"><h3>排行榜</h3><ol>{_links(c.headlines[13:20])}</ol></div></div></div>
<div class="footer"><p><a>关于我们</a> | <a>联系我们</a> | <a>广告服务</a> | <a>网站地图</a> | <a>意见反馈</a></p>
<p>Copyright © 2008-2024 {c.site} 版权所有 京ICP备{rng.randint(10**7, 10**8)}号 京公网安备{rng.randint(10**13, 10**14)}号</p>
<p>违法和不良信息举报电话：010-{rng.randint(10**7, 10**8 - 1)}</p></div>
<script src="/static/stat.js"></script><noscript><img src="/stat.gif"></noscript></body></html>"""


def zh_blog(title: str, blocks: tuple[Block, ...], c: Chrome, rng: random.Random) -> str:
    tags = rng.sample(["技术", "Linux", "笔记", "教程", "运维", "开源", "Debian", "命令行", "软件"], 4)
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>{esc(title)} | {c.site}</title>
<script type="application/ld+json">{{"@type":"BlogPosting","headline":"{esc(title)}","author":"{esc(c.author)}"}}</script>
</head><body class="single-post"><header id="masthead"><div class="site-title"><a href="/">{c.site}</a></div>
<p class="site-description">记录技术与生活的点滴</p><nav class="main-navigation"><ul><li><a>首页</a></li><li><a>归档</a></li><li><a>分类</a></li><li><a>关于</a></li><li><a>留言板</a></li></ul></nav></header>
<div id="content" class="site-content"><main id="main"><article class="post type-post">
<header class="entry-header"><h1 class="entry-title">{esc(title)}</h1>
<div class="entry-meta">发表于 {c.stamp} · 作者 {esc(c.author)} · {c.views} 次阅读 · <a>{len(c.comments)} 条评论</a></div></header>
<div class="entry-content">
{_blocks(blocks)}
</div>
<footer class="entry-footer">分类：<a>技术</a> 标签：{" ".join(f"<a>{t}</a>" for t in tags)}</footer></article>
<nav class="post-navigation"><div class="nav-previous"><a>上一篇：{esc(c.headlines[0])}</a></div><div class="nav-next"><a>下一篇：{esc(c.headlines[1])}</a></div></nav>
<div id="comments" class="comments-area"><h2 class="comments-title">《{esc(title)}》上有 {len(c.comments)} 条评论</h2>{_comments(c, rng)}
<div id="respond"><h3>发表回复</h3><p>您的电子邮箱地址不会被公开。</p><textarea></textarea></div></div></main>
<aside id="secondary" class="widget-area"><section class="widget"><h2>近期文章</h2><ul>{_links(c.headlines[2:9])}</ul></section>
<section class="widget"><h2>广告</h2><a href="/ad">【广告】云服务器新人特惠，低至 99 元/年</a></section>
<section class="widget"><h2>热门文章</h2><ul>{_links(c.headlines[9:15])}</ul></section>
<section class="widget"><h2>文章归档</h2><ul><li><a>2024年3月</a></li><li><a>2024年2月</a></li><li><a>2024年1月</a></li></ul></section></aside></div>
<footer id="colophon"><div class="site-info">© 2024 {c.site} · 自豪地采用 WordPress · 蜀ICP备{rng.randint(10**7, 10**8)}号</div></footer>
<script>var _hmt = _hmt || [];</script></body></html>"""


def zh_forum(title: str, blocks: tuple[Block, ...], c: Chrome, rng: random.Random) -> str:
    body = "<br><br>".join(esc(b.text) for b in blocks)
    replies = "".join(
        f'<table class="post"><tr><td class="user">网友{rng.randint(1000, 99999)}<br>积分 {rng.randint(10, 9999)}</td>'
        f'<td class="msg"><div class="posttime">发表于 {c.stamp}</div>{esc(r)}</td></tr></table>'
        for r in c.comments
    )
    return f"""<html><head><meta http-equiv="Content-Type" content="text/html; charset=utf-8"><title>{esc(title)} - {c.site} - Powered by Discuz!</title></head>
<body><table width="100%"><tr><td><a href="/">{c.site}</a></td><td align="right"><a>登录</a> | <a>立即注册</a> | <a>找回密码</a></td></tr></table>
<div id="nv"><a>论坛</a> <a>导读</a> <a>群组</a> <a>排行榜</a> <a>帮助</a></div>
<div id="pt"><a>{c.site}</a> › <a>技术交流</a> › <a>转帖区</a> › {esc(title)}</div>
<div class="a_t"><a>【广告】论坛VIP会员限时八折</a></div>
<table class="thread"><tr><td>查看: {c.views}</td><td>回复: {len(c.comments)}</td></tr></table>
<table class="post"><tr><td class="user" width="160">{esc(c.author)}<br>楼主<br>帖子 {rng.randint(10, 999)}<br>积分 {rng.randint(100, 9999)}</td>
<td class="msg"><h1>{esc(title)}</h1><div class="posttime">发表于 {c.stamp} | 只看该作者 | 倒序浏览</div>
<div class="t_f">{body}</div>
<div class="sign">签名：学而不思则罔，思而不学则殆。</div></td></tr></table>
{replies}
<div class="related"><b>相关帖子</b><ul>{_links(c.headlines[:8])}</ul></div>
<div id="ft">Powered by Discuz! X3.4 © 2001-2024 {c.site} 粤ICP备{rng.randint(10**7, 10**8)}号 GMT+8</div></body></html>"""


def zh_mobile(title: str, blocks: tuple[Block, ...], c: Chrome, rng: random.Random) -> str:
    return f"""<!DOCTYPE html><html><head><meta name="viewport" content="width=device-width,initial-scale=1"><meta charset="utf-8">
<title>{esc(title)}</title><meta property="og:title" content="{esc(title)}"></head>
<body><div class="m-header"><a class="back">返回</a><span>{c.site}</span><a class="open-app">打开APP</a></div>
<section class="m-article"><h1>{esc(title)}</h1>
<p class="m-info"><span>{esc(c.author)}</span> <span>{c.stamp}</span> <span>{c.views}人阅读</span></p>
<div class="m-content">
{_blocks(blocks)}
</div>
<div class="m-open"><a>打开APP阅读更多精彩内容</a></div>
<div class="m-ad"><a>【广告】限时领取百元话费券</a></div></section>
<section class="m-feed"><h3>为你推荐</h3><ul>{_links(c.headlines[:10], "feed-item")}</ul></section>
<section class="m-comments"><h3>热门评论</h3>{_comments(c, rng)}</section>
<footer class="m-footer"><a>用户协议</a> <a>隐私政策</a> <span>© {c.site}</span></footer></body></html>"""


# -- English documentation mirrors --------------------------------------------------------------------


def en_mirror(title: str, blocks: tuple[Block, ...], c: Chrome, rng: random.Random) -> str:
    toc = "".join(f'<li><a href="#s{i}">{esc(t)}</a></li>' for i, t in enumerate(c.toc))
    prev, nxt = c.prev_next
    return f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)} — {c.site}</title>
<link rel="stylesheet" href="/_static/theme.css"><script src="/_static/search.js"></script></head>
<body><div class="topbar"><a class="brand" href="/">{c.site}</a><nav><a>Docs</a> <a>Tutorials</a> <a>Blog</a> <a>Community</a></nav>
<form class="search"><input type="text" placeholder="Search docs"></form><select><option>3.11</option><option>3.12</option></select></div>
<div class="layout"><aside class="toc"><h3>On this page</h3><ul>{toc}</ul>
<h3>Previous topic</h3><p><a>{esc(prev)}</a></p><h3>Next topic</h3><p><a>{esc(nxt)}</a></p></aside>
<main class="doc"><nav class="crumbs"><a>Home</a> » <a>Library</a> » {esc(title)}</nav>
<article><h1>{esc(title)}<a class="anchor" href="#top">¶</a></h1>
{_blocks(blocks, anchor="¶")}
</article>
<nav class="pager"><a class="prev">« {esc(prev)}</a> <a class="next">{esc(nxt)} »</a></nav>
<p class="edit"><a>Edit this page</a> · <a>Report a bug</a> · Last updated {c.stamp}</p></main></div>
<footer><p>© Copyright 2001-2023, Python Software Foundation. Mirrored by {c.site}.</p><p>{c.views} views</p></footer></body></html>"""


def en_blog(title: str, blocks: tuple[Block, ...], c: Chrome, rng: random.Random) -> str:
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>{esc(title)} | {c.site}</title></head>
<body><header><div class="logo">{c.site}</div><ul class="menu"><li><a>Home</a></li><li><a>Python</a></li><li><a>Guides</a></li><li><a>Newsletter</a></li></ul></header>
<div class="container"><div class="post"><h1 class="post-title">{esc(title)}</h1>
<div class="byline">Posted by {esc(c.author)} on {c.stamp} · {c.views} views · {len(c.comments)} comments</div>
<div class="post-body">
{_blocks(blocks, markers=True, anchor="#")}
</div>
<div class="tags">Tags: <a>python</a> <a>reference</a> <a>stdlib</a></div>
<div class="share">Share: <a>Twitter</a> <a>Facebook</a> <a>LinkedIn</a> <a>Reddit</a></div>
<div class="comments"><h3>{len(c.comments)} Comments</h3>{"".join(f'<div class="c"><b>reader{rng.randint(1, 999)}</b><p>{esc(x)}</p></div>' for x in c.comments)}</div></div>
<div class="sidebar"><div class="widget"><h4>Popular posts</h4><ul>{_links(c.headlines[:7])}</ul></div>
<div class="ad">Advertisement: Learn Python in 30 days — enroll now and save 40%</div>
<div class="widget"><h4>Newsletter</h4><p>Get new tutorials in your inbox every week.</p><input placeholder="you@example.com"></div></div></div>
<footer>© 2024 {c.site}. All rights reserved. <a>Privacy</a> · <a>Terms</a></footer></body></html>"""


def en_aggregator(title: str, blocks: tuple[Block, ...], c: Chrome, rng: random.Random) -> str:
    prev, nxt = c.prev_next
    return f"""<html><head><title>{esc(title)} - {c.site}</title></head><body>
<table width="100%" class="hdr"><tr><td><a href="/">{c.site}</a></td><td><a>Languages</a> | <a>Libraries</a> | <a>Snippets</a> | <a>Login</a></td></tr></table>
<table width="100%"><tr><td width="200" valign="top" class="left"><b>Related pages</b><ul>{_links(c.headlines[:9])}</ul>
<div class="ad">Sponsored: Cloud hosting from $5/month</div></td>
<td valign="top" class="content"><h1>{esc(title)}</h1><div class="src">Indexed {c.stamp}</div>
{_blocks(blocks)}
<p class="pn"><a>Previous: {esc(prev)}</a> | <a>Next: {esc(nxt)}</a></p></td></tr></table>
<div class="foot">Content aggregated from public documentation. {c.views} hits. © {c.site}</div></body></html>"""


Template = Callable[[str, tuple[Block, ...], Chrome, random.Random], str]
ZH_SITES: dict[str, Template] = {"portal": zh_portal, "blog": zh_blog, "forum": zh_forum, "mobile": zh_mobile}
EN_SITES: dict[str, Template] = {"mirror": en_mirror, "blog": en_blog, "aggregator": en_aggregator}
