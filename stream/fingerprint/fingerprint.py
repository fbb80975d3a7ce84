"""The ``Fingerprint`` value: what a document is reduced to, and its byte form (index payloads, probe
messages). docs/fingerprint.md has the layout."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from stream.fingerprint.sketch import ANCHOR_SHARE, SHORT_SPEC, SIDE_SPEC, Sketch, SketchSpec, sketch_anchors

_HEAD = struct.Struct("<2sBQ16sHBH")  # magic, flags, simhash, content hash, sketch bytes, bits, bands
_BAND_COUNT = struct.Struct("<H")  # the head's last field
_BAND_COUNT_AT = _HEAD.size - _BAND_COUNT.size
_NO_BANDS = _BAND_COUNT.pack(0)


@dataclass(frozen=True, eq=False)
class Fingerprint:
    doc_id: str
    simhash: int
    content_hash: bytes  # 16 bytes: mmh3 x64 128-bit of the normalized content's exact form
    sketch: Sketch
    bands: list[tuple[int, int]]
    schema: str
    spec: SketchSpec = field(default_factory=SketchSpec)
    side: Sketch | None = None
    empty: bool = False
    short_grams: Sketch | None = None  # exact character 3-grams of a short text (short-text safeguard)

    @property
    def hex(self) -> str:
        return f"{self.simhash:016x}"

    def anchors(self, share: int = ANCHOR_SHARE) -> tuple[np.ndarray, int]:
        """``sketch_anchors`` of its sketch: the shingle hashes an anchor table indexes it by, and
        their bound (derived from what the sketch stores: texts of at most ``sketch_exact_shingles``
        and of at least ``sketch_sample_from`` shingles have them, others none)."""
        return sketch_anchors(self.sketch, share)

    def to_bytes(self) -> bytes:
        flags = int(self.empty)
        parts = [_HEAD.pack(b"F1", flags, self.simhash, self.content_hash, self.spec.budget, self.spec.bits,
                            len(self.bands))]
        flat = [x for band in self.bands for x in band]
        parts.append(struct.pack(f"<{len(flat)}Q", *flat))  # one call, as from_bytes reads them
        for text in (self.schema, self.doc_id):
            raw = text.encode()
            parts.append(struct.pack("<H", len(raw)) + raw)
        for sk, sk_spec in ((self.sketch, self.spec), (self.side, SIDE_SPEC), (self.short_grams, SHORT_SPEC)):
            raw = sk.to_bytes(sk_spec) if sk is not None else b""
            parts.append(struct.pack("<I", len(raw)) + raw)
        return b"".join(parts)

    @classmethod
    def from_bytes(cls, raw: bytes) -> Fingerprint:
        magic, flags, sim, chash, budget, bits, nb = _HEAD.unpack_from(raw)
        if magic != b"F1":
            raise ValueError("not a serialized Fingerprint")
        pos = _HEAD.size
        flat = struct.unpack_from(f"<{2 * nb}Q", raw, pos)  # one call: the service decodes candidates often
        bands = list(zip(flat[::2], flat[1::2], strict=True))
        pos += 16 * nb
        texts = []
        for _ in range(2):
            (n,) = struct.unpack_from("<H", raw, pos)
            texts.append(raw[pos + 2 : pos + 2 + n].decode())
            pos += 2 + n
        spec = SketchSpec(budget, bits)
        sketches: list[Sketch | None] = []
        for sk_spec in (spec, SIDE_SPEC, SHORT_SPEC):
            (n,) = struct.unpack_from("<I", raw, pos)
            sketches.append(Sketch.from_bytes(raw[pos + 4 : pos + 4 + n], sk_spec) if n else None)
            pos += 4 + n
        sketch = sketches[0]
        assert sketch is not None
        return cls(doc_id=texts[1], simhash=sim, content_hash=chash, sketch=sketch,
                   bands=bands, schema=texts[0], spec=spec,
                   side=sketches[1], empty=bool(flags & 1), short_grams=sketches[2])


def without_bands(raw: bytes) -> bytes:
    """A serialized fingerprint with an empty band list: the form the detector stores. The index
    keeps every document's band values in its record already, verification reads the sketch, and
    the 24 bands are 384 of ~970 bytes that each write copies (``Detector``)."""
    (count,) = _BAND_COUNT.unpack_from(raw, _BAND_COUNT_AT)
    if not count:
        return raw
    return b"".join((raw[:_BAND_COUNT_AT], _NO_BANDS, raw[_HEAD.size + 16 * count :]))


def split_bands(raws: Sequence[bytes], bands: int) -> tuple[np.ndarray | None, list[bytes]]:
    """The LSH bands of serialized fingerprints (``Fingerprint.to_bytes``) and each one
    ``without_bands``. The bands come as an ``(n, bands, 2)`` uint64 array of (value, extension), read
    from the bytes without decoding them (~0.1 us per fingerprint against ~3 us from
    ``Fingerprint.bands``' Python ints), or None unless every one has ``bands`` bands; then every
    band list ends at the same offset, so each is cut out without reading its count."""
    count = _BAND_COUNT.pack(bands)
    start, stop = _HEAD.size, _HEAD.size + 16 * bands
    if any(raw[_BAND_COUNT_AT:start] != count for raw in raws):
        return None, list(map(without_bands, raws))
    flat = np.frombuffer(b"".join([raw[start:stop] for raw in raws]), dtype="<u8")
    payloads = [b"".join((raw[:_BAND_COUNT_AT], _NO_BANDS, raw[stop:])) for raw in raws]
    return flat.astype(np.uint64).reshape(len(raws), bands, 2), payloads
