"""HTML extraction on the fixture pages (tests/fixtures/html_pages.py)."""

import itertools

import pytest

from stream.text.html import ExtractedPage, extract, looks_like_html, scrub, strip_tags
from stream.text.normal_form import normalize
from tests.fixtures.html_pages import ARTICLES, SCRIPT_STYLE_MARKERS, TEMPLATES, build_page

LONG_ARTICLES = [k for k in ARTICLES if k != "zh_flash"]


def grams(text: str, n: int = 5) -> set[str]:
    squeezed = "".join(normalize(text).split())
    return {squeezed[i : i + n] for i in range(max(1, len(squeezed) - n + 1))}


def jaccard(a: str, b: str) -> float:
    x, y = grams(a), grams(b)
    return len(x & y) / len(x | y)


@pytest.fixture(scope="module")
def extracted() -> dict[tuple[str, str], ExtractedPage]:
    pytest.importorskip("trafilatura")
    return {(k, t): extract(build_page(k, t)) for k in ARTICLES for t in TEMPLATES}


def test_looks_like_html() -> None:
    assert looks_like_html(build_page("en_bees", "blog"))
    assert looks_like_html("<p>one</p><p>two</p>")
    assert looks_like_html("<!DOCTYPE html><title>x</title>")
    assert not looks_like_html("plain text with a < b and c > d")
    assert not looks_like_html("地震部门表示，此次地震属于正常活动。")


def test_same_article_under_two_templates_is_alike(extracted) -> None:
    for key in LONG_ARTICLES:
        for a, b in itertools.combinations(TEMPLATES, 2):
            assert jaccard(extracted[(key, a)].text, extracted[(key, b)].text) >= 0.95, (key, a, b)


def test_short_chinese_article_is_clean_on_article_templates(extracted) -> None:
    flash = ARTICLES["zh_flash"].text
    for template in ("portal", "blog"):
        assert jaccard(extracted[("zh_flash", template)].text, flash) >= 0.95, template


def test_extraction_keeps_the_article_and_its_short_paragraphs(extracted) -> None:
    for (key, template), page in extracted.items():
        text = normalize(page.text)
        for paragraph in ARTICLES[key].paragraphs:
            assert normalize(paragraph) in text, (key, template, paragraph)


def test_two_articles_under_one_template_differ(extracted) -> None:
    for template in TEMPLATES:
        for a, b in itertools.combinations(ARTICLES, 2):
            assert jaccard(extracted[(a, template)].text, extracted[(b, template)].text) < 0.2, (a, b)


def test_recrawl_with_other_counters_and_sidebar_is_identical() -> None:
    pytest.importorskip("trafilatura")
    for key in ("zh_waste", "en_cable"):
        assert extract(build_page(key, "portal", seed=1)).text == extract(build_page(key, "portal", seed=2)).text


def test_title_is_found_without_site_name(extracted) -> None:
    for (key, _template), page in extracted.items():
        assert page.title == ARTICLES[key].title
        assert page.method == "fast"  # every fixture page is sure enough for the fast extractor


def test_scripts_styles_and_counters_never_in_text(extracted) -> None:
    pages = list(extracted.values()) + [strip_tags(build_page(k, "portal")) for k in ARTICLES]
    for page in pages:
        for marker in SCRIPT_STYLE_MARKERS:
            assert marker not in page.text, (page.method, marker)
    for page in extracted.values():
        assert "阅读 " not in page.text and " views" not in page.text


def test_resiliparse_backend_extracts_the_article() -> None:
    pytest.importorskip("resiliparse")
    page = extract(build_page("zh_books", "portal"), backend="resiliparse")
    assert page.method == "resiliparse" and page.title == ARTICLES["zh_books"].title
    assert normalize(ARTICLES["zh_books"].paragraphs[0]) in normalize(page.text)
    assert not any(marker in page.text for marker in SCRIPT_STYLE_MARKERS)


def test_falls_back_to_stripping_when_extractor_finds_nothing() -> None:
    pytest.importorskip("trafilatura")
    html = (
        "<html><head><title>Tiny</title><style>p{color:red}</style></head><body>"
        "<footer>只有页脚 footer only</footer><script>var a=1;</script></body></html>"
    )
    page = extract(html)  # trafilatura discards footers, leaving nothing
    assert page == ExtractedPage(title="Tiny", text="只有页脚 footer only", method="strip")


def test_strip_tags_drops_script_style_and_keeps_blocks() -> None:
    page = strip_tags(
        "<title>Long Headline Here - Site</title><script>var x='秘密';</script><p>第一段</p><style>.a{}</style>"
        "<noscript>enable js</noscript><div>second &amp; last</div>"
    )
    assert page.text == "第一段\nsecond & last"
    assert page.title == "Long Headline Here"


def test_scrub_removes_timestamps_counters_and_leading_title() -> None:
    text = "标题 在此\n发布时间：2024-01-18 05:07:57 阅读 2680 次\n正文内容。\nPosted 2024-02-09 20:27 · 62008 views"
    assert scrub(text, "标题在此") == "正文内容。"
    assert scrub("实施日期 2024-06-01 起") == "实施日期 2024-06-01 起"  # a date alone is content


def test_unknown_backend_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown HTML extractor"):
        extract("<p>x</p>", backend="boilerpipe")
