"""``python -m benchmarks corpus-zh``: a reproducible corpus of real ~3 KB Chinese documents, for the plain-text
speed benchmarks (``python -m benchmarks scan``).

Source: two Debian packages of Chinese documentation, fetched with ``apt-get download`` (a Debian
or Ubuntu machine with apt; nothing else is reached) into a cache directory outside the repository
and unpacked with ``dpkg -x``:
- ``manpages-zh``: the Chinese manual pages (simplified ``zh_CN`` and traditional ``zh_TW``), GFDL-1.2+;
- ``debian-reference-zh-cn``: the Debian Reference in simplified Chinese (text edition), GPL-2+.
The roff markup of the manual pages is stripped; each source is cut at line boundaries into
documents of about ``--size`` UTF-8 bytes, and only documents whose non-space characters are at
least ``--han`` Han characters are kept (manual pages mix in option names and code). The cache
keeps the packages, the corpus (``zh3k.jsonl``: id, src, text) and ``SOURCE.md`` (packages, versions,
licences, how it was built). Nothing of it is committed: the licences allow redistribution, but the
repository ships no third-party text it does not need.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import click

PACKAGES = {"manpages-zh": "GFDL-1.2+", "debian-reference-zh-cn": "GPL-2+"}
CORPUS_FILE = "zh3k.jsonl"


def default_cache() -> Path:
    """Where the corpus is kept: $DEDUP_CACHE or ~/.cache/stream-dedup, outside any checkout."""
    root = os.environ.get("DEDUP_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "stream-dedup")
    return Path(root) / "corpora" / "zh3k"


def default_corpus() -> Path:
    return default_cache() / CORPUS_FILE


_ESCAPES = re.compile(r"\\f[BIRP]|\\f\(..|\\[,/&:%]|\\\(..|\\\*\(..|\\\*.|\\s[-+]?\d")
_MACRO = re.compile(r"^\.(SH|SS|TP|IP|B|I|BI|BR|IR|RB|RI|TH|HP|PP|LP|P|nf|fi|br|sp|RS|RE|in|ti|TQ)\b\s*(.*)$")


def strip_roff(source: str) -> str:
    """The text of a manual page: comments and layout requests dropped, the text of font and heading
    macros kept, inline font changes and escapes removed."""
    lines = []
    for line in source.splitlines():
        if line.startswith(('.\\"', "'\\\"")):
            continue
        if line.startswith((".", "'")):
            macro = _MACRO.match(line)
            if macro is None or macro.group(1) in ("TH", "nf", "fi", "br", "sp", "RS", "RE", "in", "ti", "PP",
                                                   "LP", "P", "TQ"):
                continue
            line = macro.group(2).replace('"', "")
        line = _ESCAPES.sub("", line).replace("\\-", "-").replace("\\e", "\\").replace("\\ ", " ")
        if line.strip():
            lines.append(line.strip())
    return "\n".join(lines)


def cut(text: str, size: int) -> Iterator[str]:
    """Pieces of about ``size`` UTF-8 bytes, cut after whole lines."""
    piece: list[str] = []
    length = 0
    for line in text.splitlines():
        piece.append(line)
        length += len(line.encode()) + 1
        if length >= size:
            yield "\n".join(piece)
            piece, length = [], 0
    if piece:
        yield "\n".join(piece)


def han_share(text: str) -> float:
    chars = [c for c in text if not c.isspace()]
    return sum("\u4e00" <= c <= "\u9fff" for c in chars) / max(len(chars), 1)


def sources(unpacked: Path) -> Iterator[tuple[str, str]]:
    """(source name, text) of every manual page (simplified and traditional) and of the Debian Reference."""
    for locale in ("zh_CN", "zh_TW"):
        for page in sorted((unpacked / "usr/share/man" / locale).rglob("*.gz")):
            text = gzip.decompress(page.read_bytes()).decode("utf-8", "replace")
            yield f"manpages-zh:{locale}:{page.name[:-3]}", strip_roff(text)
    reference = unpacked / "usr/share/debian-reference/debian-reference.zh-cn.txt.gz"
    yield "debian-reference-zh-cn", gzip.decompress(reference.read_bytes()).decode("utf-8", "replace")


def fetch(cache: Path) -> dict[str, str]:
    """Download and unpack the packages into ``cache``; returns package -> version."""
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        raise click.ClickException("building the corpus needs apt-get and dpkg (a Debian or Ubuntu machine)")
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    versions = {}
    for package in PACKAGES:
        found = list(debs.glob(f"{package}_*.deb"))
        if not found:
            subprocess.run(["apt-get", "download", package], cwd=debs, check=True, capture_output=True)
            found = list(debs.glob(f"{package}_*.deb"))
        if not found:
            raise click.ClickException(f"apt-get download {package} left no package (run apt-get update?)")
        subprocess.run(["dpkg", "-x", str(found[0]), str(cache / "unpacked")], check=True)
        versions[package] = found[0].name.split("_")[1]
    return versions


def build(cache: Path, size: int, min_han: float) -> tuple[Path, int]:
    versions = fetch(cache)
    out = cache / CORPUS_FILE
    count = 0
    with out.open("w", encoding="utf-8") as handle:
        for name, text in sources(cache / "unpacked"):
            for n, piece in enumerate(cut(text, size)):
                if len(piece.encode()) >= size // 2 and han_share(piece) >= min_han:
                    record = {"id": f"{name}#{n}", "src": name, "text": piece}
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                    count += 1
    note = ["# zh3k: real ~3 KB Chinese documents", "", "Built by `python -m benchmarks corpus-zh`.", "",
            "| package | version | licence |", "|---|---|---|"]
    note += [f"| {package} | {versions[package]} | {PACKAGES[package]} |" for package in PACKAGES]
    note += ["", f"{count} documents of about {size} UTF-8 bytes (cut at line boundaries, at least half of that), "
             f"at least {min_han:.0%} Han characters among the non-space ones; manual pages (zh_CN, zh_TW) with "
             "their roff markup stripped, and the Debian Reference's text edition."]
    (cache / "SOURCE.md").write_text("\n".join(note) + "\n", encoding="utf-8")
    return out, count


@click.command("corpus-zh")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to keep the packages and the corpus (default: $DEDUP_CACHE/corpora/zh3k or "
                   "~/.cache/stream-dedup/corpora/zh3k).")
@click.option("--size", type=int, default=3000, show_default=True, help="Document size in UTF-8 bytes.")
@click.option("--han", "min_han", type=float, default=0.3, show_default=True,
              help="Least share of Han characters among a document's non-space characters.")
def command(cache: Path | None, size: int, min_han: float) -> None:
    """Build the real ~3 KB Chinese corpus from Debian's Chinese documentation packages."""
    target = cache or default_cache()
    out, count = build(target, size, min_han)
    click.echo(f"{count} documents in {out} (source and licences: {target / 'SOURCE.md'})")
