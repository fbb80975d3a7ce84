"""Text normalization applied before any feature is taken.

NFKC already folds full-width ASCII forms (U+FF01..U+FF5E) and the ideographic space to their
half-width forms; we apply it, then case-fold, then collapse every whitespace run to one space.
"""

from __future__ import annotations

import re
import unicodedata

_WS = re.compile(r"\s+")


def to_halfwidth(text: str) -> str:
    """Full-width ASCII variants and the ideographic space -> half-width (kept explicit for clarity)."""
    out = []
    for ch in text:
        code = ord(ch)
        if code == 0x3000:
            out.append(" ")
        elif 0xFF01 <= code <= 0xFF5E:
            out.append(chr(code - 0xFEE0))
        else:
            out.append(ch)
    return "".join(out)


def normalize(text: str) -> str:
    """NFKC, full-width -> half-width, case folding, whitespace collapsed and stripped."""
    text = unicodedata.normalize("NFKC", text)
    text = to_halfwidth(text)
    text = text.casefold()
    return _WS.sub(" ", text).strip()
