"""Fingerprint settings and the schema id that pins them.

Every setting that changes a fingerprint is part of the schema. An index directory remembers the
schema it was built with and refuses a different one (mixing would silently compare apples with
oranges). Segmenter backends that give identical tokens (jieba and rjieba with HMM off)
share a token class, so switching between them keeps fingerprints and the schema compatible;
the backend's name is still recorded.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from stream.errors import ConfigError

if TYPE_CHECKING:  # not at run time: reading settings must not load numba
    from stream.fingerprint.sketch import SampleSpec

SCHEMA_VERSION = 3  # raised whenever a fingerprint of the same input changes (tests/fingerprint/test_golden.py)
# What each schema version means beyond the settings ``describe`` lists (for the message that
# refuses state of another version).
SCHEMA_VERSIONS = {
    1: "character shingles from a CJK share of 0.3, else word 3-grams; content hash of the normalized text",
    2: "character shingles from a CJK share of 0.3, else word 3-grams; content hash without the spaces "
       "that separate no words",
    3: "character shingles from a CJK share of cjk_share (default 0.05), else word 3-grams; content hash "
       "as in version 2",
}
SIMHASH_FEATURES = ("words", "shingles")


def schema_changes(stored: dict[str, Any], current: dict[str, Any]) -> tuple[list[str], bool]:
    """What differs between two ``FingerprintConfig.describe()`` results (``name: old -> new``, and what
    each schema version means), and whether the versions differ (then no setting makes the old ones)."""
    changed = [f"{key}: {stored.get(key)!r} -> {current.get(key)!r}"
               for key in sorted(set(stored) | set(current)) if stored.get(key) != current.get(key)]
    versions = stored.get("version") != current.get("version")
    if versions:
        changed += [f"version {v}: {SCHEMA_VERSIONS.get(v, 'unknown to this release')}"
                    for v in (stored.get("version"), current.get("version")) if isinstance(v, int)]
    return changed, versions


@dataclass(frozen=True)
class FingerprintConfig:
    segmenter: str = "auto"  # auto (rjieba, else jieba) | rjieba | jieba: same tokens (HMM off)
    simhash_features: str = "words"  # words: segmented + weighted (docs/text.md); shingles: binary
    weighting: str = "tf"  # stream.text.weights.WEIGHTINGS; the best SimHash F1: docs/decisions/weighting-tf-default.md
    pos_tags: bool = False  # pos_weighted (POS-weighted SimHash) with jieba POS tags (cut_pos: ~15% slower than cut)
    idf: str = "jieba"  # jieba: jieba's bundled table; stream: document frequencies learned from the stream
    short_text_features: int = 16  # fewer word features -> add character n-grams to the SimHash
    short_text_ngram: int = 2
    # Opt-in: texts up to this many characters are also verified on exact character 3-grams, so one
    # changed character in a 40-character text stays a near-duplicate. Off by default: on the Tang
    # track it adds 112 pairs (the same poem with 1-2 variant characters) that the 5-gram ground truth
    # calls different, P 0.994 -> 0.845 at 40 characters (docs/detect.md "Short texts").
    short_text_chars: int = 0
    char_n: int = 5  # shingle sizes, as the ground truth defines similarity
    word_n: int = 3
    # Character shingles when at least this share of the non-space characters are Han, kana or
    # Hangul: mixed Chinese/English technical text is Chinese text (docs/text.md, "Shingles").
    cjk_share: float = 0.05
    sketch_bytes: int = 512
    sketch_bits: int = 1
    # Texts with up to this many distinct shingles keep them all (32-bit hashes: up to 4 bytes each
    # beyond ``sketch_bytes``), so containment and Jaccard between two short texts are exact, not
    # estimates with a ~0.05 standard error (docs/detect.md, "Containment"). 0: what fits sketch_bytes.
    sketch_exact_shingles: int = 512
    # Texts with at least this many distinct shingles also keep every 32-bit hash below 2^32 /
    # ``sketch_sample_share``, at most ``sketch_sample_most`` of them (4 bytes each): a short text's
    # containment in them is then tested on its own hashes (docs/detect.md, "Containment"). 0: none.
    # One past ``sketch_exact_shingles``: every text keeps its exact hashes or a sample of them.
    sketch_sample_from: int = 513
    sketch_sample_share: int = 4
    sketch_sample_most: int = 2048
    bands: int = 16
    rows: int = 5
    # LSH bands over the shingles of the first ``prefix_chars`` characters of the content only, in
    # band tables after the ``bands`` ones: a truncated or excerpted repost keeps its original's
    # beginning, so it collides there even when its Jaccard to the whole original is low
    # (docs/decisions/prefix-bands.md).
    prefix_bands: int = 8
    prefix_rows: int = 5
    prefix_chars: int = 400
    html_backend: str = "fast"  # stream.text.html.EXTRACTORS
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.simhash_features not in SIMHASH_FEATURES:
            raise ConfigError(f"simhash_features must be one of {SIMHASH_FEATURES}")
        if self.sketch_bits not in (1, 2, 4, 8) or self.sketch_bytes < 16:
            raise ConfigError("sketch_bits must be 1, 2, 4 or 8 and sketch_bytes >= 16")
        if self.idf not in ("jieba", "stream"):
            raise ConfigError("idf must be 'jieba' or 'stream'")
        if self.bands < 0 or self.rows < 1 or self.prefix_bands < 0 or self.prefix_rows < 1:
            raise ConfigError("bands and prefix_bands must be >= 0, rows and prefix_rows >= 1")
        if self.prefix_bands and self.prefix_chars < self.char_n:
            raise ConfigError(f"prefix_chars must be >= char_n ({self.char_n})")
        if self.sketch_exact_shingles < 0:
            raise ConfigError("sketch_exact_shingles must be >= 0")
        if self.sketch_sample_from < 0 or self.sketch_sample_share < 1 or self.sketch_sample_most < 1:
            raise ConfigError("sketch_sample_from must be >= 0, sketch_sample_share and sketch_sample_most >= 1")
        if not 0.0 <= self.cjk_share <= 1.0:
            raise ConfigError("cjk_share must be between 0 and 1")

    @property
    def sample(self) -> SampleSpec:
        """The hash sample long texts keep beside their b-bit sketch."""
        from stream.fingerprint.sketch import SampleSpec

        return SampleSpec(self.sketch_sample_from, self.sketch_sample_share, self.sketch_sample_most)

    @property
    def band_tables(self) -> int:
        """LSH band tables an index needs for these fingerprints (whole-document and prefix bands)."""
        return self.bands + self.prefix_bands

    def with_(self, **changes: Any) -> FingerprintConfig:
        return replace(self, **changes)

    def describe(self, token_settings: str = "") -> dict[str, Any]:
        """Everything that determines a fingerprint; the segmenter appears as its token settings."""
        d = asdict(self)
        d["segmenter"] = token_settings or self.segmenter
        d["version"] = SCHEMA_VERSION
        return d

    def schema_id(self, token_settings: str = "") -> str:
        blob = json.dumps(self.describe(token_settings), sort_keys=True).encode()
        return f"v{SCHEMA_VERSION}-{hashlib.sha256(blob).hexdigest()[:12]}"

