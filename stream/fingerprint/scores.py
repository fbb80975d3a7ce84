"""The verified similarity score between two fingerprints.

Wang & Wang 2019 (formula 1, partly lost in capture) score a pair as mu x (content similarity) +
(1 - mu) x (MinHash Jaccard of side information: tags, keywords, references), mu 0.8-0.9, content
first. Our content similarity is the Jaccard estimate of the two shingle sets from the stored
sketches (not a function of SimHash distance: SimHash only proposes candidates):

    score = mu * J_content + (1 - mu) * J_side   if both documents carry side information
    score = J_content                            otherwise (no evidence either way)

A pair is a near-duplicate when score >= threshold (default 0.8, the ground truth's Jaccard).
Short-text safeguard: when both texts are short (``short_text_chars``), J_content is the larger of
the 5-gram and the character 3-gram Jaccard, so one changed character in a 40-character text stays
a near-duplicate (its cost on the Tang track: docs/detect.md "Short texts").

``overlap`` also gives the containment of the pair: the share of the smaller document's content
shingles found in the larger one (``estimate_containment``), which the detector uses to report a
truncated or excerpted repost that Jaccard alone calls different.
"""

from __future__ import annotations

from dataclasses import dataclass

from stream.fingerprint.fingerprint import Fingerprint
from stream.fingerprint.sketch import (
    SHORT_SPEC,
    SIDE_SPEC,
    SketchSpec,
    containment_error,
    containment_in_sample,
    containment_in_sketch,
    estimate_containment,
    estimate_jaccard,
)


@dataclass(frozen=True)
class Overlap:
    score: float  # the verified similarity (module docstring)
    containment: float  # share of the smaller document's content shingles found in the larger one
    smaller: int  # distinct content shingles of the smaller document
    containment_error: float = 0.0  # standard error of ``containment`` (0: exact)
    containment_sampled: bool = False  # ``containment`` mostly counted on the longer text's hash sample


# the bins' estimate this many standard errors below the containment asked about is not refined
# on the sample: the count would have to contradict it by as much to matter
SAMPLE_REACH = 3.0


def overlap(a: Fingerprint, b: Fingerprint, spec: SketchSpec | None = None, mu: float = 0.9,
            near: float | None = None) -> Overlap:
    """The pair's score and containment, the same whichever side comes first; with ``near`` (a
    containment threshold), the count on the sample is skipped when the bins' estimate is
    ``SAMPLE_REACH`` errors below it."""
    spec = spec or SketchSpec()
    if a.empty or b.empty:
        return Overlap(0.0, 0.0, 0)
    if (b.sketch.size, b.content_hash) < (a.sketch.size, a.content_hash):
        # one order per pair: the worker meets a pair from either side (a revision comes from the
        # later-arriving one), and the estimates below take the first of two equal sizes as the smaller
        a, b = b, a
    smaller = min(a.sketch.size, b.sketch.size)
    error, sampled = 0.0, False
    if a.content_hash == b.content_hash:
        jaccard = containment = 1.0
    else:
        jaccard = estimate_jaccard(a.sketch, b.sketch, spec)
        containment = estimate_containment(a.sketch, b.sketch, spec, jaccard)
        error = containment_error(a.sketch, b.sketch, spec, jaccard)
        small, large = (a.sketch, b.sketch) if a.sketch.size <= b.sketch.size else (b.sketch, a.sketch)
        # a short text against a long one: the better of the two estimates from the b-bit bins
        # (Broder's, or its shingles tested against the long one's bins), then combined with the
        # count on the long one's sample
        tested = containment_in_sketch(small, large, spec) if error > 0.1 else None
        if tested is not None and tested[1] < error:
            containment, error = tested
        wanted = error > 0 and (near is None or containment + SAMPLE_REACH * error >= near)
        counted = containment_in_sample(small, large) if wanted else None
        if counted is not None:
            (containment, error), sampled = combined((containment, error), counted)
    content = jaccard
    if a.short_grams is not None and b.short_grams is not None:
        content = max(content, estimate_jaccard(a.short_grams, b.short_grams, SHORT_SPEC))
    if a.side is not None and b.side is not None:
        content = mu * content + (1.0 - mu) * estimate_jaccard(a.side, b.side, SIDE_SPEC)
    return Overlap(content, containment, smaller, error, sampled)


def combined(bins: tuple[float, float], sample: tuple[float, float]) -> tuple[tuple[float, float], bool]:
    """Two estimates of one containment, (value, standard error) each, weighted by inverse variance,
    and whether the sample's weighs more. Their errors are near independent: the bins are chosen by
    a mix of each hash (fmix64), the sample by the hash itself. A sample count of 0 error (every
    hash of the shorter text tested) is exact and stands alone."""
    if sample[1] <= 0.0:
        return sample, True
    w_bins, w_sample = 1.0 / bins[1] ** 2, 1.0 / sample[1] ** 2
    value = (bins[0] * w_bins + sample[0] * w_sample) / (w_bins + w_sample)
    return (value, (w_bins + w_sample) ** -0.5), w_sample >= w_bins


def similarity(a: Fingerprint, b: Fingerprint, spec: SketchSpec | None = None, mu: float = 0.9) -> float:
    return overlap(a, b, spec, mu).score
