"""Detection layer: a fingerprint + the block table -> verified matches -> Verdict."""

from stream.detect.detector import Detector
from stream.detect.verdict import Match, Order, Verdict, build_verdict, revise

__all__ = ["Detector", "Match", "Order", "Verdict", "build_verdict", "revise"]
