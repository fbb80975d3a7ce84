"""The detector's state for ``dedup scan``: in memory, or a directory kept between runs.

Layout of a state directory: ``index/`` (BlockIndex, RocksDB; its records keep the serialized
fingerprints for verification), ``meta.json`` (schema id, settings, next arrival number). A directory
built under one fingerprint schema refuses another: fingerprints of different schemas do not compare.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stream.detect import Detector
from stream.detect.detector import CONTAINMENT_MIN_SHINGLES, CONTAINMENT_THRESHOLD
from stream.errors import ConfigError
from stream.fingerprint import FingerprintConfig, Fingerprinter
from stream.index import BlockIndex


@dataclass(frozen=True)
class Matching:
    """When two documents are reported: the detector's settings (recorded in meta.json)."""

    threshold: float = 0.8
    containment_threshold: float = CONTAINMENT_THRESHOLD
    containment_min_shingles: int = CONTAINMENT_MIN_SHINGLES

    def detector(self, index: BlockIndex) -> Detector:
        return Detector(index, self.threshold, containment_threshold=self.containment_threshold,
                        containment_min_shingles=self.containment_min_shingles)


@dataclass
class ScanState:
    fingerprinter: Fingerprinter
    detector: Detector
    next_seq: int
    path: Path | None

    def save(self) -> None:
        if self.path is None:
            return
        meta = _meta(self.fingerprinter, self.detector, self.next_seq)
        tmp = self.path / "meta.json.tmp"
        tmp.write_text(json.dumps(meta, indent=1))
        os.replace(tmp, self.path / "meta.json")
        self.fingerprinter.save()
        self.detector.index.flush()

    def close(self) -> None:
        self.save()
        self.detector.index.close()


def _meta(fp: Fingerprinter, det: Detector, next_seq: int) -> dict[str, Any]:
    return {"schema": fp.schema, "fingerprint": fp.config.describe(fp.segmenter.settings), "k": det.index.k,
            "threshold": det.threshold, "containment_threshold": det.containment_threshold,
            "containment_min_shingles": det.containment_min_shingles, "next_seq": next_seq}


def open_state(path: str | None, config: FingerprintConfig, k: int, matching: Matching) -> ScanState:
    fingerprinter = Fingerprinter(config, idf_path=str(Path(path) / "idf.json") if path else None)
    if path is None:
        index = BlockIndex(None, k=k, bands=config.band_tables)
        return ScanState(fingerprinter, matching.detector(index), 0, None)
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    next_seq = 0
    meta_file = root / "meta.json"
    if meta_file.exists():
        meta = json.loads(meta_file.read_text())
        if meta["schema"] != fingerprinter.schema:
            raise ConfigError(f"state {root} was built with fingerprint schema {meta['schema']}, this run uses "
                              f"{fingerprinter.schema}: use the same settings or a new --state directory")
        if meta["k"] != k:
            raise ConfigError(f"state {root} was built with k={meta['k']}, not k={k}")
        next_seq = int(meta["next_seq"])
    try:
        index = BlockIndex(str(root / "index"), k=k, bands=config.band_tables)
    except ValueError as exc:  # e.g. an index of an older format: say which directory, without a traceback
        raise ConfigError(f"state {root}: {exc}") from exc
    state = ScanState(fingerprinter, matching.detector(index), next_seq, root)
    state.save()
    return state
