"""A deployment's state re-keyed for other partition counts (``dedup repartition``): pure, no Kafka.

The block table's changelog holds, per index partition, the index's records (each document's
fingerprint, time, bands and payload: the serialized fingerprint with its sketch) and the probe
stage's keys beside them; the gather state's, each document's gather state. Nothing is fingerprinted
again: each document is inserted afresh (new handles, entries and splits) into the partitions its keys
map to under the new count, with its place and version keys; each gather state moves to its id's new
partition. The internal topics' input positions are left out: the new deployment's topics are new.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from stream.detect import MAX_MATCHES
from stream.errors import ConfigError
from stream.index import CONFIG_KEY, BlockIndex, StoredDocument, TableLayout, key_kind, read_records
from stream.service.stages.gather_state import GatherState
from stream.service.stages.messages import dumps, loads, version_from_json
from stream.service.stages.probe import SETTINGS_KEY, SOURCE_PREFIX, VERSION_KEY
from stream.service.stages.routing import doc_partition, tables_by_partition
from stream.storage import MemoryStore

INSERT_CHUNK = 4096
KeyValues = list[tuple[bytes, bytes]]


@dataclass
class BlockState:
    """The documents of every old block-table partition, one entry per id (its tables merged), and the
    probe stage's keys: where each document's input record is, the newest version of each id."""

    skip_prefix: bytes  # keys left out: the probe agent's input positions
    config: bytes | None = None
    settings: bytes | None = None
    documents: dict[str, StoredDocument] = field(default_factory=dict)
    sources: dict[str, dict[bytes, bytes]] = field(default_factory=dict)  # doc id -> its place keys
    versions: dict[bytes, bytes] = field(default_factory=dict)

    def add_partition(self, items: Mapping[bytes, bytes]) -> None:
        """One old partition's keys (the latest value of each, deleted ones left out)."""
        records = []
        for key, value in items.items():
            kind = key_kind(key)
            if kind == "record":
                records.append(value)
            elif kind == "meta" and not key.startswith(self.skip_prefix):
                self._add_meta(key, value)
        if not records:
            return
        if self.config is None:
            self.config = items.get(CONFIG_KEY)
        if self.config is None or items.get(CONFIG_KEY) != self.config:
            raise ConfigError("block table partitions hold index records of different settings (or none)")
        for doc in read_records(self.config, records):
            self._add_document(doc)

    def _add_meta(self, key: bytes, value: bytes) -> None:
        if key == SETTINGS_KEY:
            if self.settings is not None and self.settings != value:
                raise ConfigError("block table partitions were built with different settings")
            self.settings = value
        elif key.startswith(SOURCE_PREFIX):
            doc = key[len(SOURCE_PREFIX) + 9 :].decode("utf-8", "surrogatepass")  # after ts(8) and b"\0"
            self.sources.setdefault(doc, {})[key] = value
        elif key.startswith(VERSION_KEY):
            known = self.versions.get(key)
            if known is None or _version(value) > _version(known):
                self.versions[key] = value

    def _add_document(self, doc: StoredDocument) -> None:
        known = self.documents.get(doc.doc_id)
        if known is None:
            self.documents[doc.doc_id] = doc
            return
        if (known.fingerprint, known.ts, known.bands, known.payload) != (doc.fingerprint, doc.ts, doc.bands,
                                                                          doc.payload):
            raise ConfigError(f"document {doc.doc_id!r} is indexed as two versions in two partitions: its "
                              "newest version is still being indexed (let the old deployment finish)")
        self.documents[doc.doc_id] = known._replace(tables=known.tables | doc.tables)

    def layout(self) -> TableLayout:
        if self.config is None:
            return TableLayout()
        settings = loads(self.config)
        return TableLayout(int(settings["k"]), int(settings["bands"]), int(settings["bits"]))


def _version(raw: bytes) -> tuple[float, float, int, int]:
    version = version_from_json(loads(raw))
    return version if version is not None else (float("-inf"), 0.0, 0, 0)


def routed(state: BlockState, partitions: int) -> list[list[tuple[StoredDocument, list[int]]]]:
    """Per new partition, its documents in canonical order (time, id) with the tables it owns of each.
    A document whose fingerprint routes to other tables than its records name is refused: its records
    were written by other settings or code."""
    layout = state.layout()
    out: list[list[tuple[StoredDocument, list[int]]]] = [[] for _ in range(partitions)]
    for doc in sorted(state.documents.values(), key=lambda d: (d.ts, d.doc_id)):
        targets = tables_by_partition(layout.routing_keys(doc.fingerprint, doc.bands), partitions)
        if frozenset(t for tables in targets.values() for t in tables) != doc.tables:
            raise ConfigError(f"document {doc.doc_id!r} is indexed in tables {sorted(doc.tables)}, its fingerprint "
                              "routes to others: the index was built by other settings")
        for partition, tables in targets.items():
            out[partition].append((doc, tables))
    return out


def block_partition(state: BlockState, documents: list[tuple[StoredDocument, list[int]]]) -> KeyValues:
    """The changelog of one new block-table partition: its index built afresh from ``documents``, their
    place keys, every id's version key (every partition hears of every document) and the settings."""
    layout = state.layout()
    store = MemoryStore()
    index = BlockIndex(None, k=layout.k, bands=layout.bands, bits=layout.bits, store=store, sole_writer=True)
    for start in range(0, len(documents), INSERT_CHUNK):
        chunk = documents[start : start + INSERT_CHUNK]
        index.insert_many([d.fingerprint for d, _ in chunk], [d.doc_id for d, _ in chunk], [d.ts for d, _ in chunk],
                          [d.bands for d, _ in chunk], [tables for _, tables in chunk], [d.payload for d, _ in chunk])
    index.flush()
    out: KeyValues = [(key, value) for key, value in store.scan_prefix(b"") if key_kind(key) != "derived"]
    if state.settings is not None:
        out.append((SETTINGS_KEY, state.settings))
    for doc, _ in documents:
        out.extend(state.sources.get(doc.doc_id, {}).items())
    out.extend(state.versions.items())
    return out


def block_partitions(state: BlockState, partitions: int) -> Iterator[tuple[int, KeyValues]]:
    """Every new block-table partition's changelog, one partition at a time (one index in memory)."""
    for partition, documents in enumerate(routed(state, partitions)):
        yield partition, block_partition(state, documents)


@dataclass
class GatherStates:
    """The old gather states re-keyed: per new partition its (id, state) records."""

    partitions: list[KeyValues]
    unfinished: list[str]  # ids whose current round has not completed: the old deployment was not done

    @property
    def count(self) -> int:
        return sum(len(p) for p in self.partitions)


def gather_partitions(old: Iterable[Mapping[bytes, bytes]], partitions: int, skip_prefix: bytes,
                      limit: int = MAX_MATCHES) -> GatherStates:
    """Each gather state to its id's partition under the new count, as a deployment with that count would
    hold it: a finished round answered by every new partition (every partition answers every document)."""
    out = GatherStates([[] for _ in range(partitions)], [])
    for items in old:
        for key, value in items.items():
            if key.startswith(skip_prefix):
                continue
            state = GatherState.from_json(loads(value), limit)
            if not state.complete:
                out.unfinished.append(state.doc)
                continue
            state.expected, state.got = partitions, list(range(partitions))
            doc = key.decode("utf-8", "surrogatepass")
            out.partitions[doc_partition(doc, partitions)].append((key, dumps(state.to_json())))
    return out
