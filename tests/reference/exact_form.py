"""The exact form written out: what ``stream.text.normal_form.exact_form_into`` computes on code points.

A normalized text without the spaces that separate no words: a space stays only between two letters
or digits of a spaced script (below the CJK blocks at U+2E80). The content hash is mmh3 of it."""

from __future__ import annotations

import itertools

import numpy as np

from stream.text import char_classes, code_points, decode_code_points, exact_form_into


def spaced(char: str) -> bool:
    """A character between which and another such a space separates words: letters and digits of
    the scripts that write spaces."""
    return char.isalnum() and char < "\u2e80"


def exact_form(normalized: str) -> str:
    """A loop over the space-separated pieces."""
    pieces = normalized.split(" ")
    out = [pieces[0]]
    for before, piece in itertools.pairwise(pieces):
        if before and piece and spaced(before[-1]) and spaced(piece[0]):
            out.append(" ")
        out.append(piece)
    return "".join(out)


def compiled_exact_form(normalized: str) -> str:
    """The product's ``exact_form_into`` on ``normalized``, as a string."""
    codes = code_points(normalized)
    out = np.empty(len(codes), dtype=np.uint32)
    return decode_code_points(out[: exact_form_into(codes, char_classes(), out)])
