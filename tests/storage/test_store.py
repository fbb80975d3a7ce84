"""KVStore backends: the same behaviour from MemoryStore and RocksStore."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.storage import BufferedStore, KVStore, MemoryStore, RocksStore
from stream.storage.kv import WritePairs, prefix_end


@pytest.fixture(params=["memory", "rocks", "buffered"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], KVStore]]:
    opened: list[KVStore] = []

    def make() -> KVStore:
        store: KVStore
        if request.param == "memory":
            store = MemoryStore()
        elif request.param == "rocks":
            store = RocksStore(str(tmp_path / "db"))
        else:  # drains every 3 writes: reads see both pending and written keys
            store = BufferedStore(RocksStore(str(tmp_path / "db")), max_ops=3)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def test_put_get_delete_multi_get(make_store: Callable[[], KVStore]) -> None:
    store = make_store()
    store.put(b"a", b"1")
    store.put(b"b", b"")
    assert store.get(b"a") == b"1"
    assert store.get(b"b") == b""  # an empty value is a value, not a missing key
    assert store.get(b"c") is None
    assert store.multi_get([b"c", b"a", b"b"]) == [None, b"1", b""]
    assert store.multi_get([]) == []
    store.delete(b"a")
    store.delete(b"never")  # deleting a missing key is a no-op
    assert store.get(b"a") is None


def test_write_ops_apply_puts_and_deletes_in_order(make_store: Callable[[], KVStore]) -> None:
    store = make_store()
    store.write_ops([(b"k1", b"v1"), (b"k2", b"v2")])
    store.write_ops([(b"k3", b"v3"), (b"k1", None)])
    assert store.multi_get([b"k1", b"k2", b"k3"]) == [None, b"v2", b"v3"]
    store.write_ops([])  # an empty batch is fine
    # in the order given (the order a changelog replays): the last write of a key wins
    store.write_ops([(b"k2", b"new"), (b"k2", None), (b"k4", None), (b"k4", b"back")])
    assert store.multi_get([b"k2", b"k4"]) == [None, b"back"]


def test_write_pairs_are_written_as_the_pairs_they_hold(make_store: Callable[[], KVStore]) -> None:
    """``WritePairs`` (keys and values as two lists, the batch path's writes) below and above a
    buffered store's batch size: the same as a list of pairs."""
    store = make_store()
    store.write_ops(WritePairs([b"a", b"b"], [b"1", b"2"]))
    store.write_ops(WritePairs([b"c", b"d", b"e", b"a"], [b"3", b"4", b"5", b"6"]))
    assert store.multi_get([b"a", b"b", b"c", b"d", b"e"]) == [b"6", b"2", b"3", b"4", b"5"]
    pairs = WritePairs([b"x", b"y"], [b"1", b"2"])
    assert list(pairs) == [(b"x", b"1"), (b"y", b"2")] == pairs[:] and pairs[1] == (b"y", b"2")
    with pytest.raises(ValueError, match="2 keys, 1 values"):
        WritePairs([b"x", b"y"], [b"1"])


def test_a_buffered_store_writes_a_big_batch_straight_down_after_the_pending_ones() -> None:
    below = MemoryStore()
    buffered = BufferedStore(below, max_ops=4)
    buffered.put(b"a", b"1")
    buffered.write_ops([(b"a", None), (b"b", b"2"), (b"c", b"3"), (b"a", b"4")])
    assert buffered.pending == 0 and below.multi_get([b"a", b"b", b"c"]) == [b"4", b"2", b"3"]
    buffered.write_ops([(b"d", b"5")])
    assert buffered.pending == 1 and below.get(b"d") is None and buffered.get(b"d") == b"5"


def test_scan_prefix_is_ordered_and_bounded(make_store: Callable[[], KVStore]) -> None:
    store = make_store()
    keys = [b"a", b"ab", b"ab\x00", b"ab\xff", b"ab\xff\xff", b"ac", b"b", b"\xff", b"\xff\x01"]
    store.write_ops([(k, k.upper()) for k in reversed(keys)])
    assert [k for k, _ in store.scan_prefix(b"ab")] == [b"ab", b"ab\x00", b"ab\xff", b"ab\xff\xff"]
    assert [k for k, _ in store.scan_prefix(b"ab\xff")] == [b"ab\xff", b"ab\xff\xff"]
    assert [k for k, _ in store.scan_prefix(b"\xff")] == [b"\xff", b"\xff\x01"]
    assert [v for _, v in store.scan_prefix(b"ac")] == [b"AC"]
    assert list(store.scan_prefix(b"zz")) == []
    assert [k for k, _ in store.scan_prefix(b"")] == sorted(keys)


def test_scan_survives_writes_between_items() -> None:
    store = MemoryStore()
    store.write_ops([(bytes([1, i]), b"x") for i in range(200)])
    seen = []
    for key, _ in store.scan_prefix(b"\x01"):
        seen.append(key)
        store.delete(key)  # the chunked scan re-locates itself by key
    assert len(seen) == 200
    assert list(store.scan_prefix(b"\x01")) == []


def test_rocks_store_persists(tmp_path: Path) -> None:
    path = str(tmp_path / "db")
    store = RocksStore(path, wal=False)
    store.write_ops([(b"p1", b"x"), (b"p2", b"y")])
    store.close()  # flushes: without a WAL only flushed data survives
    store = RocksStore(path)
    assert list(store.scan_prefix(b"p")) == [(b"p1", b"x"), (b"p2", b"y")]
    assert store.disk_bytes() > 0
    store.close()


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=4), st.lists(st.binary(max_size=5), max_size=40))
def test_scan_prefix_matches_filter(prefix: bytes, keys: list[bytes]) -> None:
    store = MemoryStore()
    store.write_ops([(k, b"v") for k in keys])
    assert [k for k, _ in store.scan_prefix(prefix)] == sorted({k for k in keys if k.startswith(prefix)})
    end = prefix_end(prefix)
    if end is not None:
        assert all(k < end for k in keys if k.startswith(prefix))
        assert end > prefix


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from([b"", b"\x01", b"\x01\x02", b"\x01\x02\x03", b"\xfb\xff", b"\xfc", b"\xfd\x00", b"\xff"]),
    st.lists(st.binary(max_size=5), max_size=40),
)
def test_rocks_scan_spans_both_column_families(prefix: bytes, keys: list[bytes]) -> None:
    """Keys below 0xFC live in the hash-memtable family: scans of any prefix still come out in key
    order, from the memtable and (after a flush) from SST files alike."""
    import tempfile

    with tempfile.TemporaryDirectory() as root:
        store = RocksStore(root + "/db")
        half = len(keys) // 2
        store.write_ops([(k, b"v") for k in keys[:half]])
        store.flush()
        store.write_ops([(k, b"w") for k in keys[half:]])
        expected = sorted({k for k in keys if k.startswith(prefix)})
        assert [k for k, _ in store.scan_prefix(prefix)] == expected
        assert store.multi_get(expected) == [store.get(k) for k in expected]
        store.close()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.binary(min_size=1, max_size=4), st.one_of(st.none(), st.binary(max_size=2))), max_size=40),
    st.integers(1, 8),
    st.binary(max_size=4),
)
def test_buffered_store_reads_like_the_plain_store(
    ops: list[tuple[bytes, bytes | None]], max_ops: int, prefix: bytes
) -> None:
    """Pending writes are visible to get, multi_get and scans, and reach the store below in order."""
    plain, below = MemoryStore(), MemoryStore()
    buffered = BufferedStore(below, max_ops=max_ops)
    for key, value in ops:
        for store in (plain, buffered):
            if value is None:
                store.delete(key)
            else:
                store.put(key, value)
        assert buffered.get(key) == plain.get(key)
    keys = sorted({key for key, _ in ops} | {b"never written"})
    assert buffered.multi_get(keys) == plain.multi_get(keys)
    assert buffered.multi_get(keys[::-1]) == plain.multi_get(keys[::-1])  # pending and not, interleaved
    assert list(buffered.scan_prefix(prefix)) == list(plain.scan_prefix(prefix))
    buffered.flush()
    assert buffered.pending == 0
    assert list(below.scan_prefix(b"")) == list(plain.scan_prefix(b""))


def test_rocks_store_opens_a_database_without_the_id_and_record_families(tmp_path: Path) -> None:
    """Databases created before doc ids and records got families of their own keep them in the default one."""
    from rocksdict import Cache, Rdict

    path = str(tmp_path / "db")
    cache = Cache(1 << 20)
    options = RocksStore._options(cache)
    options.create_missing_column_families(True)
    options.set_atomic_flush(True)
    options.set_allow_concurrent_memtable_write(False)
    legacy = Rdict(path, options, column_families={RocksStore.ENTRY_FAMILY: RocksStore._entry_options(cache)})
    legacy.put(b"\xfddoc", b"h")
    legacy.put(b"\xfcrec", b"r")
    legacy.close()
    store = RocksStore(path)
    assert store.get(b"\xfddoc") == b"h"
    assert store.multi_get([b"\xfcrec", b"\xfcnone"]) == [b"r", None]
    store.write_ops([(b"\xfddoc2", b"h2"), (b"\x01\x02\x03e", b"p"), (b"\xfcrec2", b"r2")])
    assert [k for k, _ in store.scan_prefix(b"")] == [b"\x01\x02\x03e", b"\xfcrec", b"\xfcrec2", b"\xfddoc",
                                                       b"\xfddoc2"]
    store.close()
    assert {"ids", "records"}.isdisjoint(Rdict.list_cf(path))


def test_records_have_a_family_of_their_own(tmp_path: Path) -> None:
    """A new database keeps records (and nothing else) in the record family, where their keys grow in
    order and compaction need not rewrite them."""
    from rocksdict import Cache, Rdict

    path = str(tmp_path / "db")
    store = RocksStore(path)
    store.write_ops([(b"\xfc\x00\x01", b"r1"), (b"\xfb\x00\x00e", b"e"), (b"\xfdid", b"h"), (b"\xfets", b""),
                     (b"\xffconfig", b"c"), (b"\xfc\x00\x02", b"r2")])
    assert store.multi_get([b"\xfc\x00\x02", b"\xfc\x00\x01"]) == [b"r2", b"r1"]
    store.close()
    assert "records" in Rdict.list_cf(path)
    cache = Cache(1 << 20)
    db = Rdict(path, RocksStore._options(cache),
               column_families={name: RocksStore._options(cache) for name in Rdict.list_cf(path) if name != "default"})
    records = db.get_column_family("records")
    assert [bytes(k) for k, _ in records.items()] == [b"\xfc\x00\x01", b"\xfc\x00\x02"]
    db.close()


def test_rocks_families_are_cut_at_the_index_namespaces() -> None:
    """RocksStore's column families follow the block index's key namespaces without importing the index."""
    from stream.index.records import DOC_NS, EXPIRY_NS, HANDLE_NS

    assert (RocksStore.HASHED_BELOW, RocksStore.RECORDS_FROM, RocksStore.IDS_FROM, RocksStore.IDS_UNTIL) == (
        HANDLE_NS, HANDLE_NS, DOC_NS, EXPIRY_NS)



def _bottom_files(store: RocksStore) -> list[tuple[bytes, str]]:
    """(first key, name) of the default family's files in the last level, in key order."""
    files = [f for f in store._db.live_files() if f["start_key"][:1] in (b"\xfe", b"\xff")]
    bottom = max(f["level"] for f in files)
    return sorted((f["start_key"], f["name"]) for f in files if f["level"] == bottom)


def _settle(store: RocksStore, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while any(store._db.property_int_value(f"rocksdb.{name}") for name in ("compaction-pending",
                                                                            "num-running-compactions")):
        assert time.monotonic() < deadline, "compactions still running"
        time.sleep(0.05)


def test_expiry_keys_rewrite_only_the_last_file_they_compact_into(tmp_path: Path) -> None:
    """The default family (expiry keys, metadata) sits below RocksDB's level base, so level 0 compacts
    into the last level; in files of 2 MiB (not 64) a compaction rewrites the files its keys fall in:
    for expiry keys, which grow in order, the last one (with the metadata), not the whole family."""
    store = RocksStore(str(tmp_path / "db"))
    rng = random.Random(5)

    def fill(start: int) -> None:  # four flushes of 1.6 MB: level 0 compacts at the fourth file
        for flush in range(4):
            first = start + 4_000 * flush
            # like the index: every flushed file also holds the metadata (stats), at the top of the keys
            store.write_ops([(b"\xfe" + n.to_bytes(8, "big"), rng.randbytes(400)) for n in range(first, first + 4_000)]
                            + [(b"\xffstats", str(first).encode())])
            store.flush()
        _settle(store)

    fill(0)
    old = _bottom_files(store)
    assert len(old) >= 3  # 6.4 MB in files of at most 2 MiB
    fill(16_000)  # every new expiry key is above the old ones
    new = _bottom_files(store)
    assert len(new) > len(old)
    assert {name for _, name in old[:-1]} <= {name for _, name in new}
    store.close()


def test_doc_ids_compact_in_universal_style_and_small_files(tmp_path: Path) -> None:
    """Random doc ids span every file of a level: sorted runs merged by size rewrite each ~log N times;
    ids in key order (sequence numbers, one site's URLs) rewrite few 2 MiB files."""
    path = tmp_path / "db"
    RocksStore(str(path)).close()
    sections: dict[str, dict[str, str]] = {}
    latest = max(path.glob("OPTIONS-*"), key=lambda p: int(p.name.split("-")[1]))
    for line in latest.read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = sections.setdefault(line, {})
        elif "=" in line:
            key, value = line.split("=", 1)
            section[key] = value
    assert sections['[CFOptions "ids"]']["compaction_style"] == "kCompactionStyleUniversal"
    assert sections['[CFOptions "default"]']["compaction_style"] == "kCompactionStyleLevel"
    assert sections['[CFOptions "ids"]']["target_file_size_base"] == str(2 << 20)
    assert sections['[CFOptions "default"]']["target_file_size_base"] == str(2 << 20)
    assert sections['[CFOptions "entries"]']["target_file_size_base"] == str(64 << 20)
