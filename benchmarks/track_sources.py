"""Real mixed Chinese/English text for the accuracy tracks: Debian documentation packages.

Each source is a Debian package fetched with ``apt-get download`` (the only network this needs is
the package archive) and unpacked with ``dpkg -x`` into a cache directory outside the repository.
The package's version, SHA-256 and licence are recorded with the track.

- ``manpages-zh``: the Chinese manual pages (GFDL-1.2+; a few pages GPL-2.0), simplified (zh_CN)
  and the same pages converted to traditional script with Taiwan vocabulary (zh_TW).
- ``debian-reference-zh-cn``: the Debian Reference in simplified Chinese (GPL-2+), plain-text
  rendering: prose around commands, package names, options, tables and shell sessions.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import click


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    sha256: str
    licence: str
    root: Path  # where dpkg -x unpacked it


LICENCES = {
    "manpages-zh": "GFDL-1.2+ (src/man1/kill.1 and a few others GPL-2.0); /usr/share/doc/manpages-zh/copyright",
    "debian-reference-zh-cn": "GPL-2+; /usr/share/doc/debian-reference-zh-cn/copyright",
}


def fetch_package(name: str, cache: Path) -> Package:
    """Download (once) and unpack a Debian package into ``cache``."""
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    found = sorted(debs.glob(f"{name}_*.deb"))
    if not found:
        if shutil.which("apt-get") is None:
            raise click.ClickException(f"apt-get not found: put {name}_*.deb (a Debian package) into {debs}")
        run = subprocess.run(["apt-get", "download", name], cwd=debs, capture_output=True, text=True)
        found = sorted(debs.glob(f"{name}_*.deb"))
        if run.returncode or not found:
            raise click.ClickException(f"apt-get download {name} failed ({run.stderr.strip()[-300:]}); "
                                       f"run 'apt-get update' or put {name}_*.deb into {debs}")
    deb = found[-1]
    root = cache / "src" / name
    if not (root / "usr").is_dir():
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    version = deb.name.split("_")[1]
    return Package(name, version, hashlib.sha256(deb.read_bytes()).hexdigest(), LICENCES.get(name, "?"), root)


# -- troff (man page source) -> plain text -------------------------------------------------------
_ESCAPES = [
    (re.compile(r"\\f(?:\[[^\]]*\]|\(..|.)"), ""),  # font changes
    (re.compile(r"\\s[+-]?\d+"), ""),  # size changes
    (re.compile(r"\\\*(?:\[[^\]]*\]|\(..|.)"), ""),  # strings
    (re.compile(r"\\\((?:em|en)"), "\u2014"),
    (re.compile(r"\\\(bu"), "\u2022"),
    (re.compile(r"\\\(lq"), "\u201c"),
    (re.compile(r"\\\(rq"), "\u201d"),
    (re.compile(r"\\\(..|\\\[[^\]]*\]"), ""),
    (re.compile(r"\\[-]"), "-"),
    (re.compile(r"\\[&|^,/c%]"), ""),
    (re.compile(r"\\ "), " "),
    (re.compile(r"\\[e\\]"), "\\\\"),
]
_FONT_MACROS = {"B", "I", "BR", "IR", "RB", "RI", "BI", "IB", "SM", "SB"}
_BREAK_MACROS = {"PP", "LP", "P", "TP", "IP", "SH", "SS", "HP", "sp", "RS", "RE", "TS", "TE", "EX", "EE"}


def _unescape(text: str) -> str:
    for pattern, repl in _ESCAPES:
        text = pattern.sub(repl, text)
    return text.replace("\\\\", "\\")


def _macro_args(rest: str) -> list[str]:
    return [a.strip('"') for a in re.findall(r'"[^"]*"|\S+', rest)]


def troff_text(source: str) -> str:
    """The readable text of a man page source: macros dropped, their text arguments kept, paragraphs
    separated by blank lines (no hyphenation, no filling: whitespace does not count in shingles)."""
    out: list[str] = []
    for line in source.splitlines():
        if line.startswith(('.\\"', "'\\\"", '.\\\\"')) or line.strip() in (".", "'"):
            continue
        if line.startswith((".", "'")):
            name, _, rest = line[1:].strip().partition(" ")
            if name in ("SH", "SS"):
                out += ["", _unescape(" ".join(_macro_args(rest))), ""]
            elif name in _FONT_MACROS:
                joiner = " " if name in ("B", "I", "SM", "SB") else ""
                out.append(_unescape(joiner.join(_macro_args(rest))))
            elif name == "IP" and rest:
                out += ["", _unescape(_macro_args(rest)[0])]
            elif name in _BREAK_MACROS:
                out.append("")
            continue  # .TH, .nf, .fi, .br, .in, .de ... carry no text
        out.append(_unescape(line).replace("\t", " "))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()


def paragraphs(text: str) -> list[str]:
    return [p.strip("\n") for p in re.split(r"\n\s*\n", text) if p.strip()]


def man_pages(package: Package, locale: str) -> dict[str, str]:
    """``{"ls.1": text}`` of every page of one locale (zh_CN or zh_TW)."""
    base = package.root / "usr/share/man" / locale
    pages = {}
    for path in sorted(base.glob("man*/*.gz")):
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as fh:
            source = fh.read()
        if source.startswith(".so "):  # a link to another page
            continue
        # the colophon ("跋": the translation project's name and address) is the same on every page
        pages[path.name[: -len(".gz")]] = troff_text(source).split("\n跋\n")[0].strip()
    return pages


# -- Debian Reference, plain-text rendering -> sections --------------------------------------------
_SECTION = re.compile(r"^(\d+(?:\.\d+)+)\.[ \xa0]\S.*$", re.M)
_TABLE_RULE = re.compile(r"^\s*[-+|=]+\s*$", re.M)


def reference_sections(package: Package) -> dict[str, str]:
    """``{"1.5.9": text}``: each numbered section of the Debian Reference (table rules dropped)."""
    found = sorted((package.root / "usr/share/debian-reference").glob("debian-reference.*.txt.gz"))
    if not found:
        raise click.ClickException(f"no debian-reference.*.txt.gz in {package.root}")
    with gzip.open(found[0], "rt", encoding="utf-8") as fh:
        text = _TABLE_RULE.sub("", fh.read())
    marks = list(_SECTION.finditer(text))
    sections = {}
    for m, nxt in zip(marks, [*marks[1:], None], strict=True):
        body = text[m.start() : nxt.start() if nxt else len(text)]
        sections[m.group(1)] = re.sub(r"\n{3,}", "\n\n", body).strip()
    # the tables of contents and of tables use the same numbers: their entries have no body
    return {k: v for k, v in sections.items() if len(v.split("\n", 1)[-1].strip()) >= 40}
