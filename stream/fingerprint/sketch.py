"""Verification sketch: what each indexed document keeps so that candidates can be verified.

Candidates from the block table are only candidates; every one is verified by estimating the
Jaccard similarity of shingle sets from two stored sketches: verification is what lifts precision and
recall past SimHash's ceiling (SimHash alone: F1 0.58-0.78 on the accuracy tracks; with
verification 0.97-0.99; docs/fingerprint.md). Two forms, one byte budget:
- ``exact``: all shingle hashes (32 bits each) when they fit the budget: exact Jaccard, so short
  texts (the hard case) are judged exactly;
- ``bbit``: b-bit one-permutation MinHash with ``8 * budget / b`` bins. Per byte, 1-bit MinHash is
  far more accurate than 32-bit MinHash: at J = 0.8 the standard error with 4096 one-bit bins is
  2 * sqrt(p (1 - p) / 4096) ~ 0.009 (p = (1 + J) / 2) versus sqrt(J (1 - J) / 128) ~ 0.035 with 128
  32-bit values (Li & König 2010).
An exact sketch can always be turned into the b-bit form, so any two sketches compare.
A long text's b-bit sketch also keeps a ``sample``: every 32-bit shingle hash below a fixed threshold
(``SampleSpec``), so a short text's shingles below it are tested exactly against it: containment of a
short text in a 10,000-shingle one is then a binomial count with a ~0.04 standard error, where the
estimate from the b-bit bins has 0.2-1.0 (``containment_in_sample``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from stream.fingerprint.hashing import U64, fmix64
from stream.fingerprint.minhash import oph_of_h32

_KIND_EXACT, _KIND_BBIT = 0, 1
EXACT = _KIND_EXACT


@dataclass(frozen=True)
class SketchSpec:
    budget: int = 512  # bytes per document
    bits: int = 1  # b of b-bit MinHash

    @property
    def bins(self) -> int:
        return self.budget * 8 // self.bits


@dataclass(frozen=True)
class SampleSpec:
    """Which texts keep a hash sample, and how large: sets of at least ``from_shingles`` keep every
    32-bit hash below 2^32 / ``share``, at most ``most`` of them (then the ``most`` smallest)."""

    from_shingles: int = 0  # 0: no sample
    share: int = 4
    most: int = 2048

    @property
    def below(self) -> int:
        return (1 << 32) // self.share


NO_SAMPLE = SampleSpec()
# anchors: a text's shingle hashes below 2^32 / 16 (sketch_anchors); ~1/16 of its shingles as index keys
ANCHOR_SHARE = 16
SAMPLE_MIN = 16  # sampled shingles of the smaller text below which the sample is not used
SIDE_SPEC = SketchSpec(budget=256, bits=1)  # side information (tags, keywords...): Wang & Wang 2019's term
SHORT_SPEC = SketchSpec(budget=1024, bits=1)  # exact character 3-grams of a short text, up to 256 of them


@dataclass(frozen=True, eq=False)
class Sketch:
    kind: int
    data: np.ndarray  # exact: sorted unique uint32 hashes; bbit: uint8 bin values (low b bits)
    size: int  # number of distinct shingles
    # bbit only, optional: sorted unique uint32 hashes, every one of the set's below ``sample_below``
    sample: np.ndarray | None = None
    sample_below: int = 0

    def to_bytes(self, spec: SketchSpec) -> bytes:
        head = bytes([self.kind]) + int(self.size).to_bytes(4, "little")
        if self.kind == _KIND_EXACT:
            return head + self.data.astype("<u4").tobytes()
        # after the bins (their length follows from the spec): the sample's bound and hashes, if any
        tail = b"" if self.sample is None else (
            int(self.sample_below).to_bytes(8, "little") + self.sample.astype("<u4").tobytes())
        if spec.bits == 1:  # the default: one packbits instead of a (bins x 1) bit matrix (~40 us)
            return head + np.packbits(self.data, bitorder="little").tobytes() + tail
        bits = np.unpackbits(self.data[:, None], axis=1, count=spec.bits, bitorder="little")
        return head + np.packbits(bits.ravel(), bitorder="little").tobytes() + tail

    @classmethod
    def from_bytes(cls, raw: bytes, spec: SketchSpec) -> Sketch:
        kind, size = raw[0], int.from_bytes(raw[1:5], "little")
        body = np.frombuffer(raw[5:], dtype=np.uint8)
        if kind == _KIND_EXACT:
            return cls(kind, body.view("<u4").astype(np.uint32), size)
        end = spec.bins * spec.bits // 8
        sample, below = None, 0
        if len(body) > end:
            below = int.from_bytes(raw[5 + end : 13 + end], "little")
            sample = body[end + 8 :].view("<u4").astype(np.uint32)
        if spec.bits == 1:
            return cls(kind, np.unpackbits(body[:end], count=spec.bins, bitorder="little"), size, sample, below)
        bits = np.unpackbits(body[:end], bitorder="little")[: spec.bins * spec.bits].reshape(spec.bins, spec.bits)
        values = np.packbits(bits, axis=1, bitorder="little")[:, 0]
        return cls(kind, values, size, sample, below)


def make_sketch(shingles: np.ndarray, spec: SketchSpec, exact_shingles: int = 0,
                sample: SampleSpec = NO_SAMPLE) -> Sketch:
    """Sketch of a sorted unique uint64 shingle-hash array: exact when its 32-bit hashes fit the
    budget or there are at most ``exact_shingles`` of them; else b-bit, with a hash sample when
    ``sample`` asks for one."""
    h32 = (shingles >> U64(32)).astype(np.uint32)
    if len(h32) * 4 <= spec.budget or len(h32) <= exact_shingles:
        return Sketch(_KIND_EXACT, np.unique(h32), len(shingles))
    kept, below = None, 0
    if sample.from_shingles and len(h32) >= sample.from_shingles:  # hash_sample, written with numpy
        kept, below = np.unique(h32[h32 < sample.below]), sample.below
        if len(kept) > sample.most:
            kept, below = kept[: sample.most], int(kept[sample.most - 1]) + 1
    return Sketch(_KIND_BBIT, _bbit(h32, spec), len(shingles), kept, below)  # OPH ignores repeats


@njit(cache=True)
def hash_sample(h32: np.ndarray, size: int, from_shingles: int, below: int, most: int) -> tuple[np.ndarray, int]:
    """(the sorted unique hashes of ``h32`` under a bound, the bound): ``below``, lowered to keep at
    most ``most`` of them; (empty, 0) for a set of fewer than ``from_shingles`` (or 0) shingles.
    For compiled callers (fused.py): called from Python, its returned array can fail numba's
    conversion ("descr is NULL") after other kernels ran, so ``make_sketch`` does the same in numpy."""
    if from_shingles <= 0 or size < from_shingles:
        return np.empty(0, dtype=np.uint32), 0
    kept = np.empty(len(h32), dtype=np.uint32)
    n = 0
    for h in h32:
        if h < below:
            kept[n] = h
            n += 1
    kept = np.unique(kept[:n])
    if len(kept) > most:
        return kept[:most], int(kept[most - 1]) + 1
    return kept, below


def sketch_anchors(sketch: Sketch, share: int) -> tuple[np.ndarray, int]:
    """(the sorted 32-bit shingle hashes the sketch keeps below 2^32 / ``share``, the bound they are
    all of the set's hashes under): an exact sketch's under 2^32 / ``share``, a sample's under the lower
    of that and its own bound; (empty, 0) for a b-bit sketch without a sample. The same hashes for
    the same set, so two documents' anchors in common are shingles in common (index/anchors.py)."""
    bound = (1 << 32) // share
    if sketch.kind == _KIND_EXACT:
        hashes = sketch.data
    elif sketch.sample is not None:
        hashes, bound = sketch.sample, min(bound, sketch.sample_below)
    else:
        return np.empty(0, dtype=np.uint32), 0
    return hashes[: int(np.searchsorted(hashes, bound))], bound


def _bbit(h32: np.ndarray, spec: SketchSpec) -> np.ndarray:
    return _low_bits(oph_of_h32(np.ascontiguousarray(h32, dtype=np.uint32), spec.bins), spec.bits)


@njit(cache=True)
def _low_bits(mins: np.ndarray, bits: int) -> np.ndarray:
    out = np.empty(len(mins), dtype=np.uint8)
    mask = np.uint64((1 << bits) - 1)
    for i in range(len(mins)):
        out[i] = mins[i] & mask
    return out


def estimate_containment(a: Sketch, b: Sketch, spec: SketchSpec, jaccard: float | None = None) -> float:
    """Share of the smaller set's shingles found in the larger one: exact for two exact sketches,
    else from the Jaccard estimate and the set sizes (Broder 1997): |A n B| = J (|A| + |B|) / (1 + J).

    The error of the estimate grows with the size ratio: with r = |B| / |A| >= 1 it is the Jaccard
    estimate's error times (1 + r) / (1 + J)^2 (about 2.3x at r = 3, J = 1/3).
    """
    small = min(a.size, b.size)
    if small == 0:
        return 1.0 if a.size == b.size else 0.0
    if a.kind == _KIND_EXACT and b.kind == _KIND_EXACT:
        return len(np.intersect1d(a.data, b.data, assume_unique=True)) / min(len(a.data), len(b.data))
    j = estimate_jaccard(a, b, spec) if jaccard is None else jaccard
    return min(1.0, j * (a.size + b.size) / (1.0 + j) / small)


def containment_error(a: Sketch, b: Sketch, spec: SketchSpec, jaccard: float) -> float:
    """Standard error of ``estimate_containment`` (0 when it is exact).

    b-bit MinHash over k informative bins has Var(J) = P (1 - P) / (k (1 - c)^2), P = c + (1 - c) J,
    c = 2^-b (Li & König 2010); a densified one-permutation sketch has at most one informative bin
    per shingle of the union, so k = min(bins, |A u B|). Broder's containment multiplies that error by
    (|A| + |B|) / ((1 + J)^2 min): at a size ratio of 50 it is ~0.8, so a long page "contains" any
    short one by chance; the detector asks the estimate to clear its threshold by a margin of it.
    """
    small = min(a.size, b.size)
    if small == 0 or (a.kind == _KIND_EXACT and b.kind == _KIND_EXACT):
        return 0.0
    total = a.size + b.size
    informative = max(1.0, min(float(spec.bins), total / (1.0 + jaccard)))
    chance = 1.0 / (1 << spec.bits)
    p = chance + (1.0 - chance) * jaccard
    se_jaccard = (p * (1.0 - p) / informative) ** 0.5 / (1.0 - chance)
    return se_jaccard * total / ((1.0 + jaccard) ** 2 * small)


def containment_in_sketch(small: Sketch, large: Sketch, spec: SketchSpec) -> tuple[float, float] | None:
    """Containment of an exact set in a much larger one, and its standard error, from the shingles of
    the small set tested against the large one's b-bit minimums; None when it does not apply.

    A shingle a of the small set falls in one bin of the large set's one-permutation sketch. If a is
    in the large set and is its bin's minimum, the stored low bits are a's; otherwise they agree
    with a's by chance (c = 2^-b). With lambda = |B| / bins shingles per bin, a (of rank u in [0, 1)
    within its bin) is the minimum with probability p = exp(-lambda u), so E[agree] = c + C p (1 - c)
    and C = sum((agree - c) p) / ((1 - c) sum(p^2)), standard error sqrt(c (1 - c) / sum(p^2)) / (1 - c).
    At a size ratio of 50 this is ~0.15 against ~0.8 for the estimate from Jaccard. Applies when
    the large set fills nearly every bin (|B| >= 2 bins: densified bins only pull the estimate down).
    """
    if small.kind != _KIND_EXACT or large.kind != _KIND_BBIT or large.size < 2 * spec.bins or not len(small.data):
        return None
    h = fmix64(small.data.astype(np.uint64))  # the sketch's OPH of the 32-bit hashes
    shift = U64(spec.bins.bit_length() - 1)
    bins = (h & U64(spec.bins - 1)).astype(np.intp)
    values = h >> shift
    chance = 1.0 / (1 << spec.bits)
    agree = (values & U64((1 << spec.bits) - 1)).astype(np.uint8) == large.data[bins]
    rank = values.astype(np.float64) / float(1 << (64 - int(shift)))
    p = np.exp(-(large.size / spec.bins) * rank)
    weight = float(np.dot(p, p))
    estimate = float(np.dot(agree - chance, p)) / ((1.0 - chance) * weight)
    error = (chance * (1.0 - chance) / weight) ** 0.5 / (1.0 - chance)
    return min(1.0, max(0.0, estimate)), error


def containment_in_sample(small: Sketch, large: Sketch) -> tuple[float, float] | None:
    """Containment of the smaller set in the larger one, and its standard error, from the hashes of
    the smaller one (all of an exact sketch, else its sample) under the larger one's sample bound,
    tested exactly against that sample; None without a sample or with fewer than SAMPLE_MIN of them.

    The hashes below a bound are a uniform sample of the smaller set, so the share m / n of them
    found is a binomial estimate; its error is Agresti & Coull 1998's ((m + 2) / (n + 4): an all-found
    count of a few hashes does not read as certain), with the finite-population factor.
    """
    if large.sample is None or large.kind != _KIND_BBIT:
        return None
    if small.kind == _KIND_EXACT:
        bound, mine = large.sample_below, small.data
    elif small.sample is not None:
        bound, mine = min(small.sample_below, large.sample_below), small.sample
    else:
        return None
    n, found = _sample_hits(mine, bound, large.sample)
    if n < SAMPLE_MIN:
        return None
    p = (found + 2) / (n + 4)
    finite = max(0.0, (small.size - n) / max(1, small.size - 1))
    return found / n, (p * (1.0 - p) / (n + 4) * finite) ** 0.5


@njit(cache=True)
def _sample_hits(mine: np.ndarray, bound: int, sample: np.ndarray) -> tuple[int, int]:
    # (hashes of ``mine`` below ``bound``, how many of them are in ``sample``): one merge of two sorted arrays
    n = found = j = 0
    for h in mine:
        if h >= bound:
            break
        n += 1
        while j < len(sample) and sample[j] < h:
            j += 1
        if j < len(sample) and sample[j] == h:
            found += 1
    return n, found


def estimate_jaccard(a: Sketch, b: Sketch, spec: SketchSpec) -> float:
    """Jaccard estimate: exact for two exact sketches, b-bit MinHash otherwise."""
    if a.size == 0 or b.size == 0:
        return 1.0 if a.size == b.size else 0.0
    if a.kind == _KIND_EXACT and b.kind == _KIND_EXACT:
        inter = len(np.intersect1d(a.data, b.data, assume_unique=True))
        return inter / (len(a.data) + len(b.data) - inter)
    # Sizes bound Jaccard from above: J <= min/max. This also rejects most pairs without work.
    bound = min(a.size, b.size) / max(a.size, b.size)
    va = _bbit(a.data, spec) if a.kind == _KIND_EXACT else a.data
    vb = _bbit(b.data, spec) if b.kind == _KIND_EXACT else b.data
    p_equal = float(np.count_nonzero(va == vb)) / len(va)
    chance = 1.0 / (1 << spec.bits)
    return max(0.0, min(bound, (p_equal - chance) / (1.0 - chance)))
