"""Detection layer: a fingerprint + the block table -> verified matches -> Verdict.

``__all__`` is what other layers use. The names load on first use (PEP 562), so that reading the
settings (every command does) does not load the index and numba.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stream.exports import lazy_exports

if TYPE_CHECKING:
    from stream.detect.detector import DecodedFingerprints, Detector
    from stream.detect.match_settings import MatchSettings, differences
    from stream.detect.verdict import (
        MAX_MATCHES,
        Match,
        MatchSummary,
        Order,
        Verdict,
        build_verdict,
        later_matches,
    )
    from stream.detect.warm import WARM_TEXT, warm_up, warm_up_fingerprints

_MODULE_OF = {
    **dict.fromkeys(["DecodedFingerprints", "Detector"], "detector"),
    **dict.fromkeys(["MatchSettings", "differences"], "match_settings"),
    **dict.fromkeys(["MAX_MATCHES", "Match", "MatchSummary", "Order", "Verdict", "build_verdict", "later_matches"],
                    "verdict"),
    **dict.fromkeys(["WARM_TEXT", "warm_up", "warm_up_fingerprints"], "warm"),
}
__getattr__ = lazy_exports(__name__, _MODULE_OF)

__all__ = [
    "MAX_MATCHES",
    "WARM_TEXT",
    "DecodedFingerprints",
    "Detector",
    "Match",
    "MatchSettings",
    "MatchSummary",
    "Order",
    "Verdict",
    "build_verdict",
    "differences",
    "later_matches",
    "warm_up",
    "warm_up_fingerprints",
]
