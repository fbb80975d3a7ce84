"""The detector's state for ``dedup scan``: in memory, or a directory kept between runs.

Layout of a state directory: ``index/`` (BlockIndex, RocksDB; its records keep the serialized
fingerprints for verification), ``meta.json`` (schema id, settings, next arrival number), ``ids/``
(the ids judged, with their order and fingerprint hash: ``known.py``). A directory
built under one fingerprint schema refuses another: fingerprints of different schemas do not compare.

The index is written without RocksDB's write-ahead log (~1.5 KB of writes per document that a
rerun makes unneeded; docs/decisions/scan-state-no-wal.md). What a crash can cost: the index keeps a
prefix of its writes (the last flush; the column families flush atomically), ``ids/`` (with its
log) may be ahead of it, and ``meta.json``'s arrival number is the last clean close's. Scanning the
same input again redoes every document after it: a document ``ids/`` knows keeps its order and the
index takes it again (an insert of a document already there changes nothing), so the verdicts are
those of a run that never crashed (tests/batch/test_scan_crash.py).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stream.batch.known import KnownDocuments
from stream.detect import Detector, MatchSettings, differences
from stream.errors import ConfigError
from stream.fingerprint import FingerprintConfig, Fingerprinter
from stream.fingerprint.schema import schema_changes
from stream.index import BlockIndex


@dataclass
class ScanState:
    fingerprinter: Fingerprinter
    detector: Detector
    matching: MatchSettings
    next_seq: int
    path: Path | None
    known: KnownDocuments = field(init=False)  # the ids judged: their order and fingerprint hash

    def __post_init__(self) -> None:
        self.known = KnownDocuments(None if self.path is None else self.path / "ids")

    def save(self) -> None:
        if self.path is None:
            return
        self.known.flush()
        meta = _meta(self.fingerprinter, self.matching, self.next_seq)
        tmp = self.path / "meta.json.tmp"
        tmp.write_text(json.dumps(meta, indent=1))
        os.replace(tmp, self.path / "meta.json")
        self.fingerprinter.save()
        self.detector.index.flush()

    def close(self) -> None:
        self.save()
        self.detector.index.close()
        self.known.close()


def state_index(path: str, k: int, bands: int) -> BlockIndex:
    """The index of a state directory, as ``dedup scan`` opens it: without the write-ahead log (module doc)."""
    return BlockIndex(path, k=k, bands=bands, wal=False)


def _meta(fp: Fingerprinter, matching: MatchSettings, next_seq: int) -> dict[str, Any]:
    return {"schema": fp.schema, "fingerprint": fp.describe(),
            "matching": matching.describe(), "next_seq": next_seq}


def _schema_mismatch(root: Path, meta: dict[str, Any], fingerprinter: Fingerprinter) -> str:
    """What differs (the settings, and what each schema version means) and what to do."""
    changed, new_version = schema_changes(meta.get("fingerprint") or {},
                                          fingerprinter.describe())
    if new_version:
        advice = "this release cannot make the old fingerprints; scan the documents again into a new --state directory"
    else:
        advice = "run with the settings the state was built with, or scan into a new --state directory"
    return (f"state {root} was built with fingerprint schema {meta['schema']}, this run uses {fingerprinter.schema} "
            f"({'; '.join(changed)}). Fingerprints of different schemas do not compare: {advice}")


def open_state(path: str | None, config: FingerprintConfig, matching: MatchSettings) -> ScanState:
    fingerprinter = Fingerprinter(config, idf_path=str(Path(path) / "idf.json") if path else None)
    if path is None:
        index = BlockIndex(None, k=matching.k, bands=config.band_tables)
        return ScanState(fingerprinter, matching.detector(index), matching, 0, None)
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    next_seq = 0
    meta_file = root / "meta.json"
    if meta_file.exists():
        meta = json.loads(meta_file.read_text())
        if meta["schema"] != fingerprinter.schema:
            raise ConfigError(_schema_mismatch(root, meta, fingerprinter))
        changed = differences(meta.get("matching", {}), matching.describe())
        if changed:
            raise ConfigError(f"state {root} was built with other settings ({'; '.join(changed)}): use the same "
                              "settings or a new --state directory")
        next_seq = int(meta["next_seq"])
    try:
        index = state_index(str(root / "index"), matching.k, config.band_tables)
    except ValueError as exc:  # e.g. an index of an older format: say which directory, without a traceback
        raise ConfigError(f"state {root}: {exc}") from exc
    state = ScanState(fingerprinter, matching.detector(index), matching, next_seq, root)
    state.save()
    return state
