"""The page works offline: everything it loads is a file of the package (uPlot vendored, its license
beside it), nothing from another host."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

STATIC = Path(str(resources.files("stream.console").joinpath("static")))


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.links += [v for k, v in attrs if k in ("src", "href") and v]


def test_the_page_loads_only_files_of_the_package() -> None:
    parser = Links()
    parser.feed((STATIC / "index.html").read_text(encoding="utf-8"))
    assert any(link.endswith("uPlot.iife.min.js") for link in parser.links)
    for link in parser.links:
        if link.startswith("data:"):
            continue
        assert link.startswith("/static/"), link
        assert (STATIC / link.removeprefix("/static/")).is_file(), link
    assert "MIT License" in (STATIC / "vendor" / "uPlot.LICENSE").read_text(encoding="utf-8")


def test_the_script_fetches_only_its_own_api() -> None:
    script = (STATIC / "console.js").read_text(encoding="utf-8")
    assert not re.search(r"https?://", script)
    assert set(re.findall(r"fetch\(`?\"?(/[a-z/]+)", script)) == {"/api/overview", "/api/pair", "/api/document/"}
