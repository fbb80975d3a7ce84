"""The fast extractor (stream.text.main_text) and extraction agreement across site templates."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import html as lxml_html

from stream.text.html import extract
from stream.text.main_text import extract_main, is_furniture
from tests.fixtures import doc_pages
from tests.fixtures.html_pages import ARTICLES, build_page


def word_shingles(text: str) -> set[str]:
    words = re.findall(r"\w+", text.lower())
    return {" ".join(words[i : i + 3]) for i in range(len(words) - 2)}


def jaccard(a: str, b: str) -> float:
    x, y = word_shingles(a), word_shingles(b)
    return len(x & y) / len(x | y)


def test_a_doc_page_and_its_repost_extract_alike() -> None:
    sphinx, blog = extract(doc_pages.sphinx_page()), extract(doc_pages.blog_repost())
    assert sphinx.method == blog.method == "fast"
    assert sphinx.title == blog.title == doc_pages.TITLE
    assert jaccard(sphinx.text, blog.text) >= 0.9
    for page in (sphinx, blog):
        assert jaccard(page.text, doc_pages.page_text()) >= 0.9
        assert "¶" not in page.text and "•" not in page.text and "Quick search" not in page.text
        assert "Previous topic" not in page.text and "Copyright" not in page.text and "views" not in page.text


def test_a_section_index_and_its_repost_extract_alike() -> None:
    # the index's text is mostly links: trafilatura would drop the list as navigation and keep the
    # one sentence, while the repost keeps the list as text
    index, blog = extract(doc_pages.sphinx_index_page()), extract(doc_pages.blog_index_repost())
    assert index.method == blog.method == "fast"
    assert index.title == blog.title == doc_pages.INDEX_TITLE
    assert all(entry in index.text for entry in doc_pages.INDEX_ENTRIES)
    assert jaccard(index.text, blog.text) >= 0.9
    assert "Quick search" not in index.text and "Previous topic" not in index.text


def test_furniture_is_named_by_class_tokens_but_ids_only_whole() -> None:
    def element(attrs: str) -> object:
        return lxml_html.fragment_fromstring(f"<div {attrs}>x</div>")

    assert is_furniture(element('class="widget-area"')) and is_furniture(element('class="comments-list"'))
    assert is_furniture(element('id="sidebar"')) and is_furniture(element('class="m-ad"'))
    # section ids are slugs of headings: "top", "related" or "time" inside them say nothing
    assert not is_furniture(element('id="top-level-components"'))
    assert not is_furniture(element('id="the-time-module"')) and not is_furniture(element('class="body"'))


def test_a_forum_post_in_a_table_cell_is_found_above_its_replies() -> None:
    post = "".join(f"这是主帖的第{i}段，讲的是同一件事情的不同方面，读者可以看明白。<br><br>" for i in range(8))
    replies = "".join(f'<table class="post"><tr><td class="u">网友{i}</td><td>说得好，顶一个！</td></tr></table>'
                      for i in range(4))
    page = (f'<html><head><title>主帖标题 - 某论坛</title></head><body><table><tr><td><a href="/">论坛首页</a>'
            f'</td></tr></table><table class="post"><tr><td class="u">楼主</td>'
            f"<td><h1>主帖标题</h1><div>{post}</div></td></tr></table>{replies}</body></html>")
    found = extract_main(page)
    assert found.sure and found.heading == "主帖标题"
    assert "第7段" in found.text and "顶一个" not in found.text and "论坛首页" not in found.text


def test_fixture_articles_are_extracted_whole_on_every_template() -> None:
    for key, article in ARTICLES.items():
        for template in ("portal", "blog", "forum"):
            page = extract(build_page(key, template))
            compact = "".join(page.text.split())
            for paragraph in article.paragraphs:
                assert "".join(paragraph.split()) in compact, (key, template)


def test_trafilatura_runs_once_per_page(monkeypatch: pytest.MonkeyPatch) -> None:
    trafilatura = pytest.importorskip("trafilatura")
    calls = []
    real = trafilatura.bare_extraction

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(trafilatura, "bare_extraction", counted)
    extract(build_page("zh_flash", "forum"), backend="trafilatura")  # a short page: once, not twice
    assert len(calls) == 1
    extract(build_page("zh_waste", "portal"))  # the fast extractor is sure: trafilatura is not called
    assert len(calls) == 1


@pytest.mark.integration  # starts processes of its own
def test_a_sure_page_does_not_import_trafilatura() -> None:
    here = str(Path(__file__).parents[1])
    code = (f"import sys; sys.path.insert(0, {here!r}); from fixtures.html_pages import build_page;"
            "from stream.text.html import extract; page = extract(build_page('en_bees', 'blog'));"
            "print(page.method, 'trafilatura' in sys.modules, 'resiliparse' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["fast", "False", "False"]
