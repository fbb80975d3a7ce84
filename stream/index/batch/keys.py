"""Keys and values of a whole batch of documents at once (``BlockIndex.insert_many``).

Building an insert's 7 keys one document at a time costs ~10 us of Python (int shifts, ``to_bytes``,
concatenations; docs/decisions/index-hot-paths.md). Here numpy lays out the bytes of every key of a batch
as the rows of one uint8 matrix and Python only cuts the rows apart. Each function returns exactly
the bytes the per-document code builds (tests compare them).
"""

from __future__ import annotations

import numpy as np

_SIGN = np.uint64(1 << 63)


def big_endian(values: np.ndarray, width: int) -> np.ndarray:
    """The low ``width`` bytes of each uint64, big-endian: an (n, width) uint8 matrix."""
    return values.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - width :]


def rows(matrix: np.ndarray) -> list[bytes]:
    """Each row of a uint8 matrix as bytes. Viewed as one opaque (void) item per row, ``tolist`` makes
    the bytes objects in C: 10 us for 256 rows, against 50 us slicing one buffer in a Python loop (an
    ``S`` view would be as fast but drops trailing zero bytes)."""
    matrix = np.ascontiguousarray(matrix)
    return matrix.view(f"V{matrix.shape[1]}").ravel().tolist()


def concat(*columns: np.ndarray | bytes) -> np.ndarray:
    """Rows made of the given columns side by side; a ``bytes`` column is the same in every row."""
    n = next(c.shape[0] for c in columns if isinstance(c, np.ndarray))
    widths = [len(c) if isinstance(c, bytes) else c.shape[1] for c in columns]
    out = np.empty((n, sum(widths)), dtype=np.uint8)
    at = 0
    for column, width in zip(columns, widths, strict=True):
        out[:, at : at + width] = np.frombuffer(column, dtype=np.uint8) if isinstance(column, bytes) else column
        at += width
    return out


def ts_keys(ts: np.ndarray) -> np.ndarray:
    """``records.ts_key`` of each float64: 8 bytes whose order is the numeric order."""
    bits = (ts + 0.0).view(np.uint64)  # + 0.0 turns -0.0 into 0.0, as ts_key does
    ordered = np.where(bits & _SIGN, ~bits, bits | _SIGN)
    return big_endian(ordered, 8)


def float_bytes(values: np.ndarray) -> np.ndarray:
    """Each float64 as 8 big-endian IEEE 754 bytes (``struct`` ">d")."""
    return values.astype(">f8").view(np.uint8).reshape(-1, 8)
