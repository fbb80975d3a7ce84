"""Sorted runs of band-table entries on disk, each with a Bloom filter and page fences in memory.

The older part of the band tables of an index on disk (bands/tables.py): an immutable run is a file of
10-byte entries sorted by tag (the top 40 bits of a 64-bit hash of (band table, band value), then the
document's 40-bit handle, both big-endian). In memory a run keeps a blocked Bloom filter of its tags
(12 bits per entry, 512-bit blocks, 7 probes: ~0.5% false positives) and the first tag of each page
of ``PAGE`` entries; a probe whose tag passes the filter reads that one page with ``os.pread``.
Merging two runs streams both files in chunks, so memory stays bounded whatever their size.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from numba import njit

PAGE = 256  # entries per fence: a positive probe reads 2,560 bytes
ENTRY = 10  # bytes: tag(5) handle(5)
TAG_SHIFT = np.uint64(24)  # tag = the hash's top 40 bits
BLOOM_BITS_PER_ENTRY = 12
BLOCK_WORDS = 8  # a 512-bit block: one cache line per probe
PROBES = 7
CHUNK = 1 << 20  # entries per read while merging

_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_SALT = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, inline="always")
def _mix(x):  # type: ignore[no-untyped-def]
    x = (x ^ (x >> np.uint64(30))) * _MIX1
    x = (x ^ (x >> np.uint64(27))) * _MIX2
    return x ^ (x >> np.uint64(31))


@njit(cache=True)
def band_tags(tables, values):  # type: ignore[no-untyped-def]
    """The 40-bit run tag of each (band table, band value)."""
    out = np.empty(len(values), dtype=np.uint64)
    for i in range(len(values)):
        out[i] = _mix(np.uint64(values[i]) ^ (np.uint64(tables[i] + 1) * _SALT)) >> TAG_SHIFT
    return out


@njit(cache=True, inline="always")
def _block_and_bits(tag, blocks):  # type: ignore[no-untyped-def]
    # The block grows with the tag (a tag is a hash already): a run's tags, sorted, fill its filter
    # block after block, where a hashed block cost a cache miss per entry on every merge.
    block = ((tag >> np.uint64(8)) * np.uint64(blocks)) >> np.uint64(32)
    return block, _mix(tag ^ _SALT) * _MIX2


@njit(cache=True)
def _bloom_add(words, tags):  # type: ignore[no-untyped-def]
    blocks = len(words) // BLOCK_WORDS
    for i in range(len(tags)):
        block, bits = _block_and_bits(tags[i], blocks)
        base = block * np.uint64(BLOCK_WORDS)
        for p in range(PROBES):
            bit = (bits >> np.uint64(9 * p)) & np.uint64(511)
            words[base + (bit >> np.uint64(6))] |= np.uint64(1) << (bit & np.uint64(63))


@njit(cache=True)
def _bloom_hits(words, tags, out):  # type: ignore[no-untyped-def]
    """Positions of the tags the filter may hold, into ``out``; returns how many."""
    blocks = len(words) // BLOCK_WORDS
    count = 0
    for i in range(len(tags)):
        block, bits = _block_and_bits(tags[i], blocks)
        base = block * np.uint64(BLOCK_WORDS)
        hit = True
        for p in range(PROBES):
            bit = (bits >> np.uint64(9 * p)) & np.uint64(511)
            if not words[base + (bit >> np.uint64(6))] & (np.uint64(1) << (bit & np.uint64(63))):
                hit = False
                break
        if hit:
            out[count] = i
            count += 1
    return count


@njit(cache=True)
def _match_span(raw, asked, tags, where, found, count):  # type: ignore[no-untyped-def]
    """Entries of ``raw`` (10-byte rows) whose tag is ``tags[q]`` for q in ``asked``: appended to
    ``where``/``found`` from ``count`` on while they have room; returns the new count."""
    rows = len(raw) // ENTRY
    for a in range(len(asked)):
        q = asked[a]
        want = tags[q]
        for r in range(rows):
            base = r * ENTRY
            tag = np.uint64(0)
            for b in range(5):
                tag = (tag << np.uint64(8)) | np.uint64(raw[base + b])
            if tag == want:
                handle = np.uint64(0)
                for b in range(5, 10):
                    handle = (handle << np.uint64(8)) | np.uint64(raw[base + b])
                if count < len(where):
                    where[count] = q
                    found[count] = handle
                count += 1
    return count


@njit(cache=True)
def _encode(tags, handles, out):  # type: ignore[no-untyped-def]
    for i in range(len(tags)):
        base = i * ENTRY
        for b in range(5):
            out[base + b] = (tags[i] >> np.uint64(8 * (4 - b))) & np.uint64(0xFF)
            out[base + 5 + b] = (handles[i] >> np.uint64(8 * (4 - b))) & np.uint64(0xFF)


@njit(cache=True)
def _decode(raw, tags, handles):  # type: ignore[no-untyped-def]
    for i in range(len(tags)):
        base = i * ENTRY
        tag = np.uint64(0)
        handle = np.uint64(0)
        for b in range(5):
            tag = (tag << np.uint64(8)) | np.uint64(raw[base + b])
            handle = (handle << np.uint64(8)) | np.uint64(raw[base + 5 + b])
        tags[i] = tag
        handles[i] = handle


@njit(cache=True)
def _merge(a_tags, a_handles, b_tags, b_handles, tags, handles):  # type: ignore[no-untyped-def]
    """Two tag-sorted spans into one, ``a``'s entries first among equal tags."""
    i = j = 0
    for o in range(len(tags)):
        if j == len(b_tags) or (i < len(a_tags) and a_tags[i] <= b_tags[j]):
            tags[o], handles[o] = a_tags[i], a_handles[i]
            i += 1
        else:
            tags[o], handles[o] = b_tags[j], b_handles[j]
            j += 1


# Compiled byte loops: numpy's byte-order views and slices cost ~60 ns an entry each way, and a
# merge decodes and encodes every entry of both runs.
def encode_entries(tags: np.ndarray, handles: np.ndarray) -> bytes:
    out = np.empty(len(tags) * ENTRY, dtype=np.uint8)
    _encode(tags, handles, out)
    return out.tobytes()


def decode_entries(raw: bytes) -> tuple[np.ndarray, np.ndarray]:
    count = len(raw) // ENTRY
    tags, handles = np.empty(count, dtype=np.uint64), np.empty(count, dtype=np.uint64)
    _decode(np.frombuffer(raw, dtype=np.uint8), tags, handles)
    return tags, handles


class SortedRun:
    """One run: its file, entry count, Bloom filter words and page fences."""

    def __init__(self, path: Path, count: int, bloom: np.ndarray, fences: np.ndarray) -> None:
        self.path, self.count, self.bloom, self.fences = path, count, bloom, fences
        self._fd = os.open(path, os.O_RDONLY)

    @staticmethod
    def bloom_words(count: int) -> int:
        blocks = max(1, -(-count * BLOOM_BITS_PER_ENTRY // (64 * BLOCK_WORDS)))
        return blocks * BLOCK_WORDS

    @classmethod
    def write(cls, path: Path, chunks: Iterator[tuple[np.ndarray, np.ndarray]], count: int) -> SortedRun:
        """A run of ``count`` entries from chunks of (tags, handles) in tag order; the file appears
        whole (written beside it, then renamed) with its filter and fences."""
        bloom = np.zeros(cls.bloom_words(count), dtype=np.uint64)
        fences = np.empty(-(-count // PAGE), dtype=np.uint64)
        written = 0
        partial = path.with_suffix(".part")
        with open(partial, "wb") as out:
            for tags, handles in chunks:
                _bloom_add(bloom, tags)
                first = -written % PAGE  # the chunk's first entry that starts a page
                fences[(written + first) // PAGE : (written + len(tags) + PAGE - 1) // PAGE] = tags[first::PAGE]
                out.write(encode_entries(tags, handles))
                written += len(tags)
        assert written == count, (written, count)
        np.save(path.with_suffix(".meta.npy"), np.concatenate([np.array([count, len(bloom)], dtype=np.uint64),
                                                               bloom, fences]))
        os.replace(partial, path)
        return cls(path, count, bloom, fences)

    @classmethod
    def open(cls, path: Path) -> SortedRun:
        meta = np.load(path.with_suffix(".meta.npy"))
        count, words = int(meta[0]), int(meta[1])
        return cls(path, count, meta[2 : 2 + words], meta[2 + words :])

    def find(self, tags: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(positions in ``tags``, handles) of the entries under each tag."""
        out = np.empty(len(tags), dtype=np.int64)
        maybe = out[: _bloom_hits(self.bloom, tags, out)]
        if not len(maybe):
            return maybe, np.empty(0, dtype=np.uint64)
        wanted = tags[maybe]
        # a tag's entries start in the last page that begins below it and end before the first page
        # that begins above it: one page, two where a page begins with the tag (copies of one text)
        first = np.maximum(np.searchsorted(self.fences, wanted, side="left") - 1, 0)
        last = np.searchsorted(self.fences, wanted, side="right")
        spans = first.astype(np.int64) << 32 | last.astype(np.int64)
        room = 2 * len(maybe) + 16
        where, found = np.empty(room, dtype=np.int64), np.empty(room, dtype=np.uint64)
        count = 0
        for span in np.unique(spans).tolist():
            start, stop = span >> 32, span & 0xFFFFFFFF
            size = min(max(stop - start, 1) * PAGE, self.count - start * PAGE)
            raw = np.frombuffer(os.pread(self._fd, size * ENTRY, start * PAGE * ENTRY), dtype=np.uint8)
            asked = maybe[spans == span]
            before = count
            count = _match_span(raw, asked, tags, where, found, count)
            if count > room:  # more than its room (many copies of one text): again, with room
                room = 2 * count
                where, found = np.resize(where, room), np.resize(found, room)
                count = _match_span(raw, asked, tags, where, found, before)
        return where[:count], found[:count]

    def drop_filter(self) -> None:
        """Frees the filter and fences of a run that is only read from now on (merged away): ``find``
        is then wrong."""
        self.bloom = self.fences = np.empty(0, dtype=np.uint64)

    def read(self, start: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        count = min(count, self.count - start)
        return decode_entries(os.pread(self._fd, count * ENTRY, start * ENTRY))

    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for start in range(0, self.count, CHUNK):
            yield self.read(start, CHUNK)

    def sync(self) -> None:
        """Its files on disk (a crash of the process keeps them anyway; this is for the machine's)."""
        os.fsync(self._fd)
        with open(self.path.with_suffix(".meta.npy"), "rb") as meta:
            os.fsync(meta.fileno())

    def close(self) -> None:
        os.close(self._fd)

    def remove(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
        self.path.with_suffix(".meta.npy").unlink(missing_ok=True)


def sorted_chunks(tags: np.ndarray, handles: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The entries in tag order (log order among equal tags). Sorted as one uint64 per entry, the
    40-bit tag over the entry's 24-bit position, which ``np.sort`` does ~2x faster than an argsort."""
    if len(tags) < 1 << 24:
        keyed = np.sort(tags << np.uint64(24) | np.arange(len(tags), dtype=np.uint64))
        order = (keyed & np.uint64((1 << 24) - 1)).astype(np.int64)
    else:
        order = np.argsort(tags, kind="stable")
    for start in range(0, len(order), CHUNK):
        part = order[start : start + CHUNK]
        yield tags[part], handles[part]


def merged_chunks(older: SortedRun, newer: SortedRun) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The entries of two runs in tag order (the older run's first among equal tags), chunk by
    chunk: each step takes from both buffers every entry up to the smaller of their last tags."""
    sources = [older.chunks(), newer.chunks()]
    empty = (np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.uint64))
    buffers = [next(s, empty) for s in sources]
    done = [False, False]
    while True:
        for i in (0, 1):
            if not len(buffers[i][0]) and not done[i]:
                buffers[i] = next(sources[i], empty)
                done[i] = not len(buffers[i][0])
        if all(done):
            return
        bounds = [buffers[i][0][-1] for i in (0, 1) if not done[i]]
        bound = min(bounds)
        parts = []
        for i in (0, 1):
            tags, handles = buffers[i]
            cut = int(np.searchsorted(tags, bound, side="right"))
            parts.append((tags[:cut], handles[:cut]))
            buffers[i] = (tags[cut:], handles[cut:])
        (a_tags, a_handles), (b_tags, b_handles) = parts
        tags = np.empty(len(a_tags) + len(b_tags), dtype=np.uint64)
        handles = np.empty(len(tags), dtype=np.uint64)
        _merge(a_tags, a_handles, b_tags, b_handles, tags, handles)
        yield tags, handles
