"""The LSH band tables: recent entries in memory (``BandMap``), the rest in sorted runs on disk.

An index on disk meets ~24 band values per document, almost all of them new: at 10M documents its
band tables hold 240M entries, more than memory should (the map takes 13-26 bytes each), and one
RocksDB key per entry costs 1-2 us of Python per write and per read. So the band tables of an index
with a directory are a small log-structured merge tree of their own:
- new entries go to the map (the *memtable*, which answers the batch path's find-and-add) and to an
  append-only log of (40-bit tag, handle);
- once the log holds ``memtable_entries``, it is sorted by tag and written as an immutable run
  (bands/runs.py), and the map starts empty; a new run is merged with the one before it while that
  one is at most twice its size, so ~log2(entries / memtable_entries) runs stay;
- a probe asks the map, then each run (a Bloom filter in memory, one page read on a positive).
Handles found are candidates: the caller checks the band value in the record, as for the map's own
32-bit tags. So runs are never edited: a deleted or replaced document's old entries fail that check.

The records hold every band value, so the runs are derived state. ``close`` writes the memtable as a
run and a manifest with a fresh stamp, which the index also writes into its store; an open that finds
the same stamp in both uses the runs as they are (and removes the stamp from the store before any
change, so a crash after it is told apart); anything else rebuilds them from the records. Without a
directory (an index in memory, or on a caller's store) everything stays in the map.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

import numpy as np

from stream.index.bands.memtable import BandMap
from stream.index.bands.runs import SortedRun, band_tags, merged_chunks, sorted_chunks

DEFAULT_MEMTABLE_ENTRIES = 1 << 22  # ~175k documents of 24 bands; ~140 MB with its log
MANIFEST = "manifest.json"
# How a run's filter is addressed (bands/runs.py): runs of another layout are rebuilt from the records.
RUN_LAYOUT = 2


class BandTables:
    """(band table, band value) -> handles, as ``BandMap``, with the older entries on disk."""

    def __init__(self, directory: Path | None = None, stamp: bytes | None = None,
                 memtable_entries: int = DEFAULT_MEMTABLE_ENTRIES) -> None:
        self.directory = directory
        self.memtable = BandMap()
        self.memtable_entries = memtable_entries
        self.runs: list[SortedRun] = []
        self._log_tags = np.empty(0, dtype=np.uint64)
        self._log_handles = np.empty(0, dtype=np.uint64)
        self._logged = 0
        self.dead = 0  # entries of the runs whose documents were removed since (they stay in the runs)
        self.reused = False  # the runs on disk were the store's (same stamp): nothing to rebuild
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
            self.reused = self._open_runs(stamp)

    def __len__(self) -> int:
        return len(self.memtable) + sum(run.count for run in self.runs) - self.dead

    # -- the BandMap interface ------------------------------------------------------------------

    def add_many(self, tables: np.ndarray, values: np.ndarray, handles: np.ndarray) -> None:
        self.memtable.add_many(tables, values, handles)
        if self.directory is not None and len(values):
            self._log(_tags(tables, values), handles)

    def remove_many(self, tables: np.ndarray, values: np.ndarray, handles: np.ndarray) -> None:
        """From the memtable; runs keep the entries, which the record check drops (module doc)."""
        before = len(self.memtable)
        self.memtable.remove_many(tables, values, handles)
        if self.runs:
            self.dead += len(values) - (before - len(self.memtable))

    def find_many(self, tables: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        where, found = self.memtable.find_many(tables, values)
        if not self.runs or not len(values):
            return where, found
        return self._with_runs(_tags(tables, values), where, found)

    def find_add_many(self, tables: np.ndarray, values: np.ndarray, handles: np.ndarray,
                      ) -> tuple[np.ndarray, np.ndarray]:
        where, found = self.memtable.find_add_many(tables, values, handles)
        if self.directory is None or not len(values):
            return where, found
        tags = _tags(tables, values)  # once, for the runs and the log
        if self.runs:
            where, found = self._with_runs(tags, where, found)
        self._log(tags, handles)
        return where, found

    # -- runs -----------------------------------------------------------------------------------

    def _with_runs(self, tags: np.ndarray, where: np.ndarray, found: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        wheres, founds = [where], [found]
        for run in self.runs:
            w, f = run.find(tags)
            wheres.append(w)
            founds.append(f)
        where, found = np.concatenate(wheres), np.concatenate(founds)
        # a replaced document may sit in the memtable and in a run under one tag: once is enough
        pairs = np.unique(where.astype(np.uint64) << np.uint64(40) | found)
        return (pairs >> np.uint64(40)).astype(np.int64), pairs & np.uint64((1 << 40) - 1)

    def _log(self, tags: np.ndarray, handles: np.ndarray) -> None:
        end = self._logged + len(tags)
        if end > len(self._log_tags):  # once at the memtable's size, kept across flushes (pages are touched once)
            size = max(2 * len(self._log_tags), end, self.memtable_entries)
            self._log_tags = _grown(self._log_tags, self._logged, size)
            self._log_handles = _grown(self._log_handles, self._logged, size)
        self._log_tags[self._logged : end] = tags
        self._log_handles[self._logged : end] = handles
        self._logged = end
        if self._logged >= self.memtable_entries:
            self.flush_memtable()

    def flush_memtable(self) -> None:
        """The memtable as a new run (then merged while the run before is at most twice its size)."""
        if self.directory is None or not self._logged:
            return
        tags, handles = self._log_tags[: self._logged], self._log_handles[: self._logged]
        self.dead += self._logged - len(self.memtable)  # logged, then removed from the memtable
        run = SortedRun.write(self._run_path(), sorted_chunks(tags, handles), len(tags))
        self.memtable = BandMap(self.memtable_entries)
        self._logged = 0
        while self.runs and self.runs[-1].count <= 2 * run.count:
            older = self.runs.pop()
            # their filters go before the merged one is made: ~1.5 bytes per entry less at the peak
            older.drop_filter()
            run.drop_filter()
            merged = SortedRun.write(self._run_path(), merged_chunks(older, run), older.count + run.count)
            older.remove()
            run.remove()
            run = merged
        self.runs.append(run)

    def _run_path(self) -> Path:
        assert self.directory is not None
        return self.directory / f"run-{secrets.token_hex(8)}.dat"

    # -- persistence ----------------------------------------------------------------------------

    def persist(self) -> bytes | None:
        """Everything into runs and a manifest with a new stamp, returned for the store (None: no
        directory)."""
        if self.directory is None:
            return None
        self.flush_memtable()
        for run in self.runs:
            run.sync()
        stamp = secrets.token_hex(16).encode()
        manifest = {"stamp": stamp.decode(), "layout": RUN_LAYOUT, "runs": [run.path.name for run in self.runs],
                    "dead": self.dead}
        partial = self.directory / (MANIFEST + ".part")
        with open(partial, "w") as out:
            out.write(json.dumps(manifest))
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, self.directory / MANIFEST)
        return stamp

    def close(self) -> None:
        for run in self.runs:
            run.close()
        self.runs = []

    def _open_runs(self, stamp: bytes | None) -> bool:
        """The runs of the manifest if its stamp is ``stamp``; else none (every run file removed)."""
        assert self.directory is not None
        path = self.directory / MANIFEST
        manifest: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        matched = (stamp is not None and manifest.get("stamp", "").encode() == stamp
                   and manifest.get("layout") == RUN_LAYOUT)
        keep: set[str] = set(manifest["runs"]) if matched else set()
        if matched:
            self.runs = [SortedRun.open(self.directory / name) for name in manifest["runs"]]
            self.dead = manifest.get("dead", 0)
        else:
            path.unlink(missing_ok=True)
        for file in self.directory.iterdir():
            if file.name != MANIFEST and file.name.split(".")[0] + ".dat" not in keep:
                file.unlink()
        return matched


def _grown(array: np.ndarray, used: int, size: int) -> np.ndarray:
    """``array``'s first ``used`` items in a new array of ``size`` (np.resize would fill the rest too)."""
    grown = np.empty(size, dtype=array.dtype)
    grown[:used] = array[:used]
    return grown


def _tags(tables: np.ndarray, values: np.ndarray) -> np.ndarray:
    return band_tags(np.ascontiguousarray(tables, dtype=np.int64), np.ascontiguousarray(values, dtype=np.uint64))
