"""The verified similarity score between two fingerprints.

Seed 002 (formula 1, partly lost in capture) scores a pair as mu x (content similarity) +
(1 - mu) x (MinHash Jaccard of side information: tags, keywords, references), mu 0.8-0.9, content
first. Our content similarity is the Jaccard estimate of the two shingle sets from the stored
sketches (not a function of SimHash distance: SimHash only proposes candidates):

    score = mu * J_content + (1 - mu) * J_side   if both documents carry side information
    score = J_content                            otherwise (no evidence either way)

A pair is a near-duplicate when score >= threshold (default 0.8, the ground truth's Jaccard).
Short-text safeguard: when both texts are short (``short_text_chars``), J_content is the larger of
the 5-gram and the character 3-gram Jaccard, so one changed character in a 40-character text stays
a near-duplicate (measured cost on the Tang track: README "Accuracy").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stream.fingerprint.sketch import SketchSpec, estimate_jaccard

if TYPE_CHECKING:
    from stream.fingerprint.fingerprinter import Fingerprint

SIDE_SPEC = SketchSpec(budget=256, bits=1)
SHORT_SPEC = SketchSpec(budget=1024, bits=1)  # exact up to 256 three-grams


def similarity(a: Fingerprint, b: Fingerprint, spec: SketchSpec | None = None, mu: float = 0.9) -> float:
    spec = spec or SketchSpec()
    if a.empty or b.empty:
        return 0.0
    content = 1.0 if a.content_hash == b.content_hash else estimate_jaccard(a.sketch, b.sketch, spec)
    if a.short_grams is not None and b.short_grams is not None:
        content = max(content, estimate_jaccard(a.short_grams, b.short_grams, SHORT_SPEC))
    if a.side is None or b.side is None:
        return content
    return mu * content + (1.0 - mu) * estimate_jaccard(a.side, b.side, SIDE_SPEC)
