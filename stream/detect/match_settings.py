"""When two documents are reported: the detector's settings, shared by ``dedup scan`` and the worker.

Every one of them changes which pairs are reported, so each is recorded with the state it built
(``describe``) and a state built with other values is refused.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from stream.detect.verdict import MAX_MATCHES
from stream.errors import ConfigError

if TYPE_CHECKING:  # not at run time: reading settings (every command does) must not load the index and numba
    from stream.detect.detector import DecodedFingerprints, Detector
    from stream.index import AnchorOwner, BlockIndex

# Containment rule defaults (docs/detect.md, "Design choices"): a pair whose similarity is below the
# threshold is still reported, as "contained", when at least this share of the shorter document's
# shingles is in the longer one and the shorter has at least CONTAINMENT_MIN_SHINGLES distinct shingles
# (shorter texts are contained by chance). An estimated containment must clear the threshold by
# CONTAINMENT_MARGIN of its standard error: the estimate from two sketches of very unequal sets is
# mostly error (docs/detect.md, "Containment from two sketches").
CONTAINMENT_THRESHOLD = 0.8
CONTAINMENT_MIN_SHINGLES = 50
CONTAINMENT_MARGIN = 0.75
# A count of the shorter text's hashes found in the longer one's hash sample is a binomial estimate
# whose error (Agresti & Coull) is already conservative; it clears the threshold by this margin
# (docs/decisions/containment-sample-margin.md).
CONTAINMENT_SAMPLE_MARGIN = 0.5
# Documents per anchor beyond which it proposes no pair (0: no anchor table): the index's
# DEFAULT_ANCHOR_CAP, not imported (reading settings must not load the index). States written before
# this setting existed were built with 64: ``describe`` leaves it out at that value.
ANCHOR_CAP = 64


@dataclass(frozen=True)
class MatchSettings:
    k: int = 3  # SimHash Hamming radius of the lossless block tables
    threshold: float = 0.8  # verified similarity at which two documents are near-duplicates
    containment_threshold: float = CONTAINMENT_THRESHOLD  # below threshold: 'contained' from this share
    containment_min_shingles: int = CONTAINMENT_MIN_SHINGLES  # the shorter document's minimum for 'contained'
    retention: float | None = None  # seconds: match only documents whose event times are this close
    max_matches: int = MAX_MATCHES  # matches a verdict lists (output only: not recorded)
    anchor_cap: int = ANCHOR_CAP  # the anchor table's cap: a short text inside a long one (0: no table)

    def __post_init__(self) -> None:
        if not 0 <= self.k <= 31:
            raise ConfigError(f"k must be between 0 and 31, got {self.k}")
        for name in ("threshold", "containment_threshold"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"{name} must be between 0 and 1, got {getattr(self, name)}")
        if self.retention is not None and self.retention <= 0:
            raise ConfigError(f"retention must be positive, got {self.retention}")
        if self.max_matches < 1:
            raise ConfigError(f"max_matches must be at least 1, got {self.max_matches}")
        if self.anchor_cap < 0:
            raise ConfigError(f"anchor_cap must be at least 0, got {self.anchor_cap}")

    def detector(self, index: BlockIndex, once: bool = False, decoded: DecodedFingerprints | None = None,
                 anchor_owner: AnchorOwner | None = None) -> Detector:
        """A detector with these settings (``decoded``, ``anchor_owner``: see ``Detector``)."""
        from stream.detect.detector import Detector

        return Detector(index, self.threshold, once=once, containment_threshold=self.containment_threshold,
                        containment_min_shingles=self.containment_min_shingles, retention=self.retention,
                        decoded=decoded, anchor_cap=self.anchor_cap or None, anchor_owner=anchor_owner)

    def describe(self) -> dict[str, Any]:
        """The settings that decide which pairs are reported (``max_matches`` only shortens the lists)."""
        d = asdict(self)
        del d["max_matches"]
        if d["anchor_cap"] == ANCHOR_CAP:
            del d["anchor_cap"]
        return d


def differences(stored: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """``name: stored -> current`` for every setting that differs."""
    return [f"{key}: {stored.get(key)!r} -> {current.get(key)!r}"
            for key in sorted(set(stored) | set(current)) if stored.get(key) != current.get(key)]
