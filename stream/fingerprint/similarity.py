"""The verified similarity score between two fingerprints.

Seed 002 (formula 1, partly lost in capture) scores a pair as mu x (content similarity) +
(1 - mu) x (MinHash Jaccard of side information: tags, keywords, references), mu 0.8-0.9, content
first. Our content similarity is the Jaccard estimate of the two shingle sets from the stored
sketches (not a function of SimHash distance: SimHash only proposes candidates):

    score = mu * J_content + (1 - mu) * J_side   if both documents carry side information
    score = J_content                            otherwise (no evidence either way)

A pair is a near-duplicate when score >= threshold (default 0.8, the ground truth's Jaccard).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stream.fingerprint.sketch import SketchSpec, estimate_jaccard

if TYPE_CHECKING:
    from stream.fingerprint.fingerprinter import Fingerprint

SIDE_SPEC = SketchSpec(budget=256, bits=1)


def similarity(a: Fingerprint, b: Fingerprint, spec: SketchSpec | None = None, mu: float = 0.9) -> float:
    spec = spec or SketchSpec()
    if a.empty or b.empty:
        return 0.0
    content = 1.0 if a.content_hash == b.content_hash else estimate_jaccard(a.sketch, b.sketch, spec)
    if a.side is None or b.side is None:
        return content
    return mu * content + (1.0 - mu) * estimate_jaccard(a.side, b.side, SIDE_SPEC)
