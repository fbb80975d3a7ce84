"""Detection layer: a fingerprint + the block table -> verified matches -> Verdict."""

from stream.detect.detector import Detector, fingerprint_of
from stream.detect.settings import MatchSettings, differences
from stream.detect.verdict import (
    MAX_MATCHES,
    Match,
    MatchSummary,
    Order,
    Verdict,
    build_verdict,
    later_matches,
)
from stream.detect.warm import warm_up

__all__ = [
    "MAX_MATCHES",
    "Detector",
    "Match",
    "MatchSettings",
    "MatchSummary",
    "Order",
    "Verdict",
    "build_verdict",
    "differences",
    "fingerprint_of",
    "later_matches",
    "warm_up",
]
