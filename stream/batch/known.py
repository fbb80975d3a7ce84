"""The documents a scan state has judged: one id is one document.

A document whose id the state holds is that document again. With the same fingerprint (the same
serialized ``Fingerprint``: content, title, side information, settings) it is judged at the place in
canonical order it had, so it gets the verdict it had and never matches itself or a copy that came
after it. With another fingerprint it is a new version: the old one leaves the index and the new one
is judged as a new arrival.

A line whose event time ``ts`` is earlier than that of the id's known version is an older version
(``older_than_known``): it changes nothing (docs/service.md, "One truth per id"). Without a ``ts`` on
either line, the later line is the newer version.

Per id: the canonical order's ts (8 bytes), a 128-bit hash of the fingerprint (16 bytes) and the event
time, if the document had one (8 bytes); in a dict for a scan without ``--state``, in RocksDB (``ids/``
in the state directory) with one.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import mmh3

from stream.detect import Detector, Order
from stream.fingerprint import Fingerprint

_TS = struct.Struct(">d")
_VERSIONED = 2 * _TS.size + 16  # a value with the event time of the version


class Placed(NamedTuple):
    order: Order
    payload: bytes  # ``fp.to_bytes()``, for the detector (7 us a document: made once)
    again: bool  # the same document as before, at its earlier order


class KnownDocuments:
    def __init__(self, path: Path | None = None) -> None:
        self._memory: dict[bytes, bytes] = {}
        self._db = None
        if path is not None:
            from rocksdict import Options, Rdict

            self._db = Rdict(str(path), Options(raw_mode=True))

    def _get(self, key: bytes) -> bytes | None:
        return self._memory.get(key) if self._db is None else self._db.get(key)

    def older_than_known(self, doc_id: str, event_ts: float | None) -> float | None:
        """The event time of the id's known version if it is later than ``event_ts``, else None."""
        stored = None if event_ts is None else self._get(doc_id.encode("utf-8", "surrogatepass"))
        if stored is None or len(stored) < _VERSIONED:  # unknown, or judged without an event time
            return None
        known = float(_TS.unpack_from(stored, _VERSIONED - _TS.size)[0])
        return known if event_ts is not None and known > event_ts else None

    def place(self, fp: Fingerprint, fresh: Order, detector: Detector,
              before_forget: Callable[[], None] | None = None, event_ts: float | None = None) -> Placed:
        """Where to judge ``fp``: at its earlier order if this id was judged with this very fingerprint
        (``again``), else at ``fresh`` (after removing an earlier version of the id from the index;
        ``before_forget`` runs first: a scan judges the documents it holds back before that)."""
        key = fp.doc_id.encode("utf-8", "surrogatepass")
        payload = fp.to_bytes()
        digest = mmh3.hash_bytes(payload)
        stored = self._get(key)
        if stored is not None:
            if stored[_TS.size : _TS.size + len(digest)] == digest:
                return Placed((_TS.unpack_from(stored)[0], fp.doc_id), payload, True)
            if before_forget is not None:
                before_forget()
            detector.forget(fp.doc_id)  # a new version with nothing to index (empty) must not leave the old
        value = _TS.pack(fresh[0]) + digest + (b"" if event_ts is None else _TS.pack(event_ts))
        if self._db is None:
            self._memory[key] = value
        else:
            self._db[key] = value
        return Placed(fresh, payload, False)

    def forget(self, doc_id: str) -> None:
        """The document was deleted: a later one with its id is a new arrival."""
        key = doc_id.encode("utf-8", "surrogatepass")
        if self._db is None:
            self._memory.pop(key, None)
        else:
            del self._db[key]

    def flush(self) -> None:
        if self._db is not None:
            self._db.flush()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
