"""Every repository file a comment or docstring of stream/, topology/, tests/ or benchmarks/ cites
exists (file paths only: section titles are checked by a reader).

A citation is a path with an extension (``docs/service.md``, ``stream/index/document/writes.py``). One
starting with a top-level folder of the repository is taken from the root; any other Python path
from the citing file's folder or one of its parents (a module of stream/service may cite the
runtime's health module as runtime/health + .py), unless it starts with an installed library
(faust/...). Other names (a state dir's meta + .json, jieba's dictionary) and paths outside the
repository (a sibling folder of the checkout, URLs) are not files of this repository and are left alone.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("stream", "topology", "tests", "benchmarks")
ROOTED = (*SCANNED, "docs", "bench-results")
CITATION = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+\.(?:py|md|yaml|yml|json|toml|js|html|css|txt|png))(?![\w/])")


def prose(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each comment and docstring of a module."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield node.body[0].lineno, doc


def is_library(first: str) -> bool:
    if not first.isidentifier() or first in ROOTED:
        return False
    if first in sys.modules:  # faust replaces its module by one without a __spec__ (find_spec fails)
        return True
    try:
        return importlib.util.find_spec(first) is not None
    except (ImportError, ValueError):
        return False


def found(citation: str, citing: Path) -> bool | None:
    """Whether ``citation`` names an existing file; None when it is not a path of this repository."""
    first = citation.split("/")[0]
    if first.startswith("."):  # ../elsewhere/...: outside the repository
        return None
    if first in ROOTED:
        return (ROOT / citation).is_file()
    if not citation.endswith(".py") or ("/" in citation and is_library(first)):
        return None
    return any((folder / citation).is_file() for folder in citing.parents if folder.is_relative_to(ROOT))


def citations() -> list[tuple[str, int, str, bool | None]]:
    cited = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            if not CITATION.search(source):  # nothing that looks like a path: no comment cites one (half the files)
                continue
            for line, text in prose(source):
                cited += [(str(path.relative_to(ROOT)), line, m.group(1), found(m.group(1), path))
                          for m in CITATION.finditer(text)]
    return cited


def test_every_cited_repository_file_exists() -> None:
    cited = citations()
    assert sum(ok is True for *_, ok in cited) > 100  # the scan sees the citations
    assert [f"{file}:{line}: {ref}" for file, line, ref, ok in cited if ok is False] == []


@pytest.mark.parametrize(("citation", "citing", "expected"), [
    ("docs/service.md", "stream/cli.py", True),
    ("docs/no-such-page.md", "stream/cli.py", False),
    ("index/state.py", "stream/service/settings.py", True),  # from a parent folder
    ("insert.py", "stream/index/state.py", False),
    ("faust/tables/recovery.py", "stream/service/runtime/recovery.py", None),  # a library's source
    ("meta.json", "stream/batch/scan_state.py", None),  # a file of a state dir, not of the repository
    ("../corpora/tools/truth.py", "benchmarks/accuracy.py", None),
])
def test_a_citation_is_looked_up_where_it_points(citation: str, citing: str, expected: bool | None) -> None:
    assert found(citation, ROOT / citing) is expected
