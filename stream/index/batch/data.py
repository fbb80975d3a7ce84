"""A validated batch of documents for ``BlockIndex``'s batch calls (batch/calls.py): what each document
brings (fingerprint, id, time, bands, tables, payload), checked once and kept as arrays."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Bands = Sequence[tuple[int, int]]
# per document a sequence of (band value, extension) pairs, or all of them as an (n, bands, 2) uint64
# array (a caller holding serialized fingerprints reads them without a Python int per value)
BatchBands = Sequence[Bands] | np.ndarray


@dataclass
class DocumentBatch:
    """A validated batch: per document its fingerprint, id, time, bands, tables and payload.

    ``part[i, t]``: document i uses table t (``TableLayout.tables_for``); ``has_bands[i]``: it has
    bands, their values and extensions in ``values``/``exts``, ``(n, bands)`` (zero rows for a
    document without); ``once[i]``: the tables ``query(once=True)`` answers for (None: every hit
    counts)."""

    fps: list[int]
    array: np.ndarray
    ids: list[str]
    id_keys: list[bytes]
    times: list[float]
    has_bands: np.ndarray
    values: np.ndarray
    exts: np.ndarray
    part: np.ndarray
    used: list[frozenset[int]]
    payloads: list[bytes]
    once: list[frozenset[int] | None]
    all_simhash: bool  # every document uses every SimHash table (pairs need no table check)

    def __len__(self) -> int:
        return len(self.fps)

    def slice(self, start: int, stop: int) -> DocumentBatch:
        cut = slice(start, stop)
        return DocumentBatch(self.fps[cut], self.array[cut], self.ids[cut], self.id_keys[cut], self.times[cut],
                     self.has_bands[cut], self.values[cut], self.exts[cut], self.part[cut], self.used[cut],
                     self.payloads[cut], self.once[cut], self.all_simhash)

    def band_pairs(self, i: int) -> tuple[tuple[int, int], ...]:
        """Document i's bands as ``insert`` and ``query`` take them."""
        if not self.has_bands[i]:
            return ()
        return tuple(zip(self.values[i].tolist(), self.exts[i].tolist(), strict=True))
