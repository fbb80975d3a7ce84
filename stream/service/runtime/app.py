"""The Faust application of one worker: topics, tables and the three agents.

Faust does the consuming, the consumer group, co-partitioned assignment (topics of one partition
count land together: partition i of the documents topic and of the positions table on one worker;
partition j of the probe topic, the block table, the gather topic and the gather state on one
worker) and table recovery from the changelogs. Output goes through ``Output``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Container, Mapping
from pathlib import Path
from typing import Any, NoReturn

import faust
from faust.types import EventT

from stream.detect import DecodedFingerprints
from stream.errors import EXIT_CONFIG, EXIT_INTERNAL, EXIT_RESTART, ConfigError, DedupError
from stream.index import DERIVED_NAMESPACES, rebuild_derived_keys
from stream.service import metrics
from stream.service.runtime.backlog import Backlog
from stream.service.runtime.group_offsets import reading_starts
from stream.service.runtime.health import Health
from stream.service.runtime.ledger import TP, InputLedger, decode_position, encode_position, ledger_key
from stream.service.runtime.patches import (
    LEVEL0_OPTION,
    MEMORY_OPTION,
    committed_offsets,
    held_offsets,
    install_patches,
    known_ends,
    partition_db,
    request_seek,
)
from stream.service.runtime.process_tuning import heap_trimmer, set_switch_interval
from stream.service.runtime.recovery import DATA_LOSS_MARKER
from stream.service.runtime.rocks_memory import RocksMemory
from stream.service.runtime.tablestore import FaustTableStore
from stream.service.settings import Settings
from stream.service.stages import DocumentStage, GatherStage, InputRecord, Pipeline, ProbeStage, Topics
from stream.service.stages.messages import GatherEntry, ProbeItem, Source, entry_from_json, loads
from stream.service.stages.output import Batch, Output

log = logging.getLogger("dedup.worker")

# raw bytes everywhere; note: passing a faust.Schema here is silently ignored by 0.15.3 for keys
RAW_TOPIC: dict[str, Any] = {"key_type": bytes, "value_type": bytes, "key_serializer": "raw", "value_serializer": "raw"}
BLOCKS_TABLE = "blocks"  # names fixed by topology/topics.yaml: {app_id}-blocks-changelog
GATHER_TABLE = "gather_state"
POSITIONS_TABLE = "positions"
LEDGER_SAVE_SECONDS = 1.0
HEAP_TRIM_SECONDS = 60.0  # how often freed C-heap pages go back to the system (process_tuning.heap_trimmer)


READY_FILE = "READY"
BAND_RUNS_DIR = "index-band-runs"  # in Faust's table dir: one directory of band runs per block-table partition
# RocksDB memtables per table partition (Faust's default: three of 64 MiB for each of the worker's ~12
# partition databases); every partition database shares the worker's block cache and memtable limit
# (RocksMemory, runtime/rocks_memory.py)
TABLE_MEMORY: dict[str, dict[str, int]] = {
    "blocks": {"write_buffer_size": 32 << 20, "max_write_buffer_number": 2},
    "gather_state": {"write_buffer_size": 16 << 20, "max_write_buffer_number": 2},
    "positions": {"write_buffer_size": 1 << 20, "max_write_buffer_number": 2},
}


# Level-0 files that start a compaction of a table partition's database, where not RocksDB's 4. Faust
# keeps a partition in one family, where the index's random entry keys make every file span the key
# range, so each compaction from level 0 rewrites the level below: at 16 files, 4x fewer rewrites
# (docs/decisions/worker-table-compaction.md)
TABLE_LEVEL0_FILES: dict[str, int] = {"blocks": 16}


def table_options(table: str, memory: RocksMemory) -> dict[str, Any]:
    """Faust's ``options`` of one of the worker's tables: rocksdict, its memtables, the shared budget,
    its level-0 compaction trigger."""
    options: dict[str, Any] = {"driver": "rocksdict", **TABLE_MEMORY[table], MEMORY_OPTION: memory}
    if table in TABLE_LEVEL0_FILES:
        options[LEVEL0_OPTION] = TABLE_LEVEL0_FILES[table]
    return options


class ReadyMarker(faust.Sensor):
    """``<data dir>/READY`` (holding the worker's pid) while the worker is assigned, recovered and
    consuming: written when a rebalance ends, removed when the next one starts, at start-up and at
    stop; ``health.ready`` says the same for ``GET /ready``. (tansu's DescribeGroups lists no members,
    so the group's state cannot tell.)"""

    def __init__(self, path: Path, health: Health) -> None:
        super().__init__()
        self.path, self.health = path, health

    def clear(self, because: str = "stopping") -> None:
        self.health.set_ready(False, because)
        self.path.unlink(missing_ok=True)

    def on_rebalance_start(self, app: Any) -> dict[str, Any]:
        self.clear("rebalancing: partitions are being reassigned and their tables recovered")
        return super().on_rebalance_start(app)

    def on_rebalance_end(self, app: Any, state: dict[str, Any]) -> None:
        super().on_rebalance_end(app, state)
        self.path.write_text(f"{os.getpid()}\n")
        self.health.set_ready(True)


def ready_pid(data_dir: Path) -> int | None:
    """The pid in a worker's READY file if that process is running, else None: a stopped (SIGSTOP) or
    zombie process answers ``kill(pid, 0)`` but consumes nothing, and its partitions may have moved."""
    try:
        pid = int((Path(data_dir) / READY_FILE).read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return None if process_state(pid) in STOPPED_STATES else pid


STOPPED_STATES = frozenset("TtZX")  # stopped, traced, zombie, dead (proc(5), /proc/PID/stat field 3)


def process_state(pid: int) -> str | None:
    """The state letter of a process from /proc (Linux), None where /proc does not tell."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces or ")": the state follows the last ")"
    return stat[stat.rindex(")") + 2:][:1] or None


def _source(event: EventT) -> Source:
    m = event.message
    return Source(m.topic, m.partition, m.offset, float(m.timestamp))


def faust_app(s: Settings) -> faust.App:
    """The Faust app of a worker: raw bytes everywhere, RocksDB tables, our recovery checks."""
    return faust.App(
        s.app_id,
        broker=s.faust_broker,
        broker_credentials=s.security.faust(),
        datadir=str(s.data_dir),
        store="rocksdb://",
        web_enabled=False,
        topic_partitions=s.partitions,
        topic_replication_factor=s.replication,
        topic_allow_declare=True,
        table_standby_replicas=s.standby_replicas,
        consumer_auto_offset_reset="earliest",
        broker_rebalance_timeout=s.rebalance_timeout,
        broker_session_timeout=max(s.rebalance_timeout, 10.0),
        broker_heartbeat_interval=1.0,
        broker_commit_every=s.batch_size * 4,
        broker_commit_interval=1.0,
        key_serializer="raw",
        value_serializer="raw",
        stream_buffer_maxsize=max(4096, s.batch_size * 8),
        # per partition and fetch (aiokafka's max_partition_fetch_bytes; a larger first record batch still
        # comes whole): a backlog is read partition by partition in chunks this size, so the canonical
        # order of what is judged lags by a chunk across partitions, and each lag is a revision
        consumer_max_fetch_size=256 << 10,
        recovery_consistency_check=False,  # patches/data_loss_check.py says it better
    )


class DedupApp:
    def __init__(self, settings: Settings, health: Health) -> None:
        self.settings = s = settings
        self.health = health
        set_switch_interval()
        install_patches(s.fetch_max_wait_ms, s.confluent(), self._on_data_loss)
        topology = s.topology()
        self.app = faust_app(s)
        self.ready = ReadyMarker(Path(s.data_dir) / READY_FILE, health)
        self.app.sensors.add(self.ready)
        self.output = Output(s.confluent(**{"client.id": f"{s.app_id}-worker"}), task_timeout=s.task_timeout)
        self.topics = Topics(
            probe=topology.internal_name("probe"),
            gather=topology.internal_name("gather"),
            verdicts=s.verdicts_topic,
            dlq=s.dlq_topic,
            gather_partitions=s.index_partitions,
            index_partitions=s.index_partitions,
        )
        self.rocks_memory = RocksMemory()

        def options(table: str) -> dict[str, Any]:
            return table_options(table, self.rocks_memory)

        self.blocks = self.app.Table(BLOCKS_TABLE, partitions=s.index_partitions, key_type=bytes, value_type=bytes,
                                     options=options(BLOCKS_TABLE))
        self.gather_state = self.app.Table(GATHER_TABLE, partitions=s.index_partitions, key_type=bytes,
                                           value_type=bytes, options=options(GATHER_TABLE))
        self.positions = self.app.Table(POSITIONS_TABLE, partitions=s.partitions, key_type=bytes, value_type=bytes,
                                        options=options(POSITIONS_TABLE))
        self.documents_topic = self.app.topic(s.documents_topic, partitions=s.partitions, **RAW_TOPIC)
        self.probe_topic = self.app.topic(self.topics.probe, partitions=s.index_partitions, internal=True,
                                          **RAW_TOPIC)
        self.gather_topic = self.app.topic(self.topics.gather, partitions=s.index_partitions, internal=True,
                                           **RAW_TOPIC)
        self._make_stages()
        # each table's open stores, with the topics co-partitioned with it (a revocation names topic partitions)
        self._block_topics = {self.topics.probe, self.blocks.changelog_topic.get_topic_name()}
        self._stores_by_topics = [
            (self._block_topics, self._block_stores),
            ({self.topics.gather, self.gather_state.changelog_topic.get_topic_name()}, self._gather_stores),
            ({s.documents_topic, self.positions.changelog_topic.get_topic_name()}, self._position_stores),
        ]
        # one ledger per agent; positions live in the state table co-partitioned with its input (partition =
        # input partition), at most once a second per partition (a lagging position only re-reads, idempotently)
        self._ledger_stores = {"documents": self._positions_store, "probe": self._block_store,
                               "gather": self._gather_store}
        self.ledgers = {stage: InputLedger(self._position_loader(store), save_every=LEDGER_SAVE_SECONDS)
                        for stage, store in self._ledger_stores.items()}
        for stage, ledger in self.ledgers.items():
            metrics.watch_ledger(stage, ledger)
        self._define_agents()

    def _make_stages(self) -> None:
        s = self.settings
        config, matching = s.fingerprint_config(), s.match_settings()
        # the fingerprints the document stage serializes, decoded once for every probe partition here
        decoded = DecodedFingerprints()
        self.backlog = Backlog(s.backlog_lag, settle=s.revision_interval)
        self.documents = DocumentStage(config, matching, self.topics, self.output, decoded)
        self._block_stores: dict[int, FaustTableStore] = {}
        self._gather_stores: dict[int, FaustTableStore] = {}
        self._position_stores: dict[int, FaustTableStore] = {}
        band_runs = Path(self.app.conf.tabledir) / BAND_RUNS_DIR  # dropped with the tables after an unclean stop
        self.probes = ProbeStage(config, matching, self.topics, self._block_store,
                                 self.output, verify_once=s.verify_once, late_allowance=s.late_allowance,
                                 band_dir=lambda partition: band_runs / str(partition), decoded=decoded)
        self.gather = GatherStage(self.topics, self.output, self._gather_store, max_matches=matching.max_matches,
                                  revision_interval=s.revision_interval, backlog_hold=s.backlog_hold,
                                  behind=self.backlog)
        self.pipeline = Pipeline(self.documents, self.probes, self.gather, self.output, self.topics,
                                 owned=self._owned if s.local_hops else frozenset)
        self.pipeline.warm_up()

    def _request_seeks(self, seeks: dict[TP, int]) -> None:
        """Ask the fetch loop to read these input partitions again from the given offsets."""
        for (topic, partition), offset in seeks.items():
            request_seek(self.app.consumer, faust.types.TP(topic, partition), offset)

    def _owned(self) -> Container[tuple[str, int]]:
        """The partitions this worker owns with their tables recovered: none during a rebalance
        (Faust sets ``rebalancing`` from the revocation until recovery completes), so a hop then
        goes over Kafka as before."""
        if self.app.rebalancing:
            return frozenset()
        return self.app.assignor.assigned_actives()

    @staticmethod
    def _position_loader(store: Callable[[int], FaustTableStore]) -> Callable[[TP], int | None]:
        return lambda tp: decode_position(store(tp[1]).get(ledger_key(tp[0])))

    def _gather_store(self, partition: int) -> FaustTableStore:
        """The gather state table's partition: gather states and the gather agent's input positions."""
        return self._store(self.gather_state, self._gather_stores, partition)[0]

    def _positions_store(self, partition: int) -> FaustTableStore:
        """The positions table's partition: the documents agent's input positions (the table co-partitioned
        with the documents topic)."""
        return self._store(self.positions, self._position_stores, partition)[0]

    def _block_store(self, partition: int) -> FaustTableStore:
        """The block table's partition (and the probe agent's input positions). The index's doc-id and
        expiry keys stay out of the changelog (they follow from its records): a newly opened partition
        derives them from what recovery restored, before the first probe reads them."""
        store, opened = self._store(self.blocks, self._block_stores, partition, DERIVED_NAMESPACES)
        if opened:
            try:
                rebuild_derived_keys(store)
            except ValueError as exc:
                raise ConfigError(f"block table partition {partition}: {exc}") from None
        return store

    def _store(self, table: Any, cache: dict[int, FaustTableStore], partition: int,
               unlogged: bytes = b"") -> tuple[FaustTableStore, bool]:
        """The store of a table partition, and whether it was opened now."""
        db = partition_db(table, partition)
        store = cache.get(partition)
        if store is None or store.db is not db:  # Faust reopened the partition after a rebalance
            store = cache[partition] = FaustTableStore(table, partition, self.output, unlogged)
            return store, True
        return store, False

    def _on_data_loss(self, lost: list[str]) -> NoReturn:
        """The broker no longer has what this worker's tables hold: stop (exit 3, the data dir marked
        until ``dedup reset``) or, with ``on_broker_data_loss: rebuild``, exit 75 so that the restart
        drops the local tables and starts from scratch."""
        self.ready.clear()
        what = "; ".join(lost[:4]) + (f" (and {len(lost) - 4} more)" if len(lost) > 4 else "")
        if self.settings.on_broker_data_loss == "rebuild":
            log.critical("the broker lost data this worker had (%s): on_broker_data_loss is 'rebuild', so the "
                         "restart drops the local tables and starts from scratch (exit 75)", what)
            code = EXIT_RESTART
        else:
            marker = Path(self.settings.data_dir) / DATA_LOSS_MARKER
            marker.write_text(what + "\n")
            log.critical("the broker lost data this worker had (%s). Its local state no longer matches the "
                         "changelogs, and documents judged before are gone from the broker. To start from "
                         "scratch: dedup reset --data-dir %s (or set on_broker_data_loss: rebuild). Exit 3.",
                         what, self.settings.data_dir)
            code = EXIT_CONFIG
        logging.shutdown()
        os._exit(code)

    def fatal(self, exc: BaseException, agent: str) -> NoReturn:
        """Stop the worker at once, its batch unacknowledged: the restarted worker re-reads the batch
        and, finding no clean-stop mark, rebuilds its tables from the changelogs (recovery.py). Not
        acknowledging alone is not enough: a crashed agent would hold its events and stall every later
        commit, and Faust would restart the agent past them."""
        code = exc.exit_code if isinstance(exc, DedupError) else EXIT_INTERNAL
        self.ready.clear()
        cause = "a bug" if code == EXIT_INTERNAL else "not the input's fault"
        log.critical("%s agent stopped the worker (exit %d, %s; a restart re-reads the unfinished batch): %s: %s",
                     agent, code, cause, type(exc).__name__, exc, exc_info=code == EXIT_INTERNAL)
        logging.shutdown()
        os._exit(code)

    async def _flush(self, mark: Batch) -> None:
        """Deliver the batch's output before Faust may acknowledge its input (raises ``OutputError``)."""
        await self.output.flush(mark)

        def persist(topic: str, partition: int, offset: int) -> None:
            # what Faust's own changelog callback does: recovery then starts after this offset
            for table in (self.blocks, self.gather_state, self.positions):
                if table.changelog_topic.get_topic_name() == topic:
                    store: Any = table.data
                    store.set_persisted_offset(faust.types.TP(topic, partition), offset)

        self.output.take_delivered(persist)

    async def _batch(self, stage: str, events: list[EventT], handle: Callable[[list[EventT]], None]) -> None:
        """One agent batch: check it against the stage's input ledger, handle it, deliver everything it
        produced, and only then return, after which Faust may acknowledge its input events."""
        t0, mark = time.perf_counter(), self.output.mark()
        ledger = self.ledgers[stage]
        records = [((e.message.topic, e.message.partition), e.message.offset) for e in events]
        # a partition's first batch with no stored position: where reading began, before admitting it (the
        # timer may not have asked yet), so that a lost first record is a gap and not the start
        await self._learn_starts(ledger, ledger.unstarted({tp for tp, _ in records}))
        keep, seeks = ledger.admit(records)
        self._request_seeks(seeks)
        for (topic, partition), position in ledger.to_write().items():
            self._ledger_stores[stage](partition).put(ledger_key(topic), encode_position(position))
        handle([e for e, k in zip(events, keep, strict=True) if k])
        t1 = time.perf_counter()
        await self._flush(mark)
        metrics.DELIVERY_WAIT.labels(stage).observe(time.perf_counter() - t1)
        ledger.delivered()
        metrics.BATCH_SECONDS.labels(stage).observe(time.perf_counter() - t0)
        metrics.BATCH_EVENTS.labels(stage).observe(len(events))

    async def _guarded(self, stage: str, events: list[EventT], handle: Callable[[list[EventT]], None]) -> None:
        """``_batch``, and anything it raises stops the worker (``fatal``): the stages dead-letter what
        is a document's fault, so what arrives here is the store's, the producer's, or a bug."""
        try:
            await self._batch(stage, events, handle)
        except Exception as exc:
            self.fatal(exc, stage)

    async def _run_agent(self, stage: str, batches: Any, handle: Callable[[list[EventT]], None]) -> None:
        """An agent's loop; ``health`` knows whether it runs."""
        self.health.agents[stage] = True
        try:
            async for events in batches:
                await self._guarded(stage, events, handle)
        finally:
            self.health.agents[stage] = False

    def _handle_documents(self, events: list[EventT]) -> None:
        self.pipeline.documents_batch([InputRecord(e.key, e.value, _source(e)) for e in events])

    def _handle_probes(self, events: list[EventT]) -> None:
        self.pipeline.probe_batch([(e.message.partition, [ProbeItem.from_json(d) for d in loads(e.value)])
                                   for e in events])

    def _handle_gather(self, events: list[EventT]) -> None:
        by_partition: dict[int, list[GatherEntry]] = {}
        for e in events:
            by_partition.setdefault(e.message.partition, []).extend(entry_from_json(d) for d in loads(e.value))
        self.pipeline.gather_batch(by_partition)

    def _define_agents(self) -> None:
        s = self.settings

        # Faust's take() windows (batch_within), not "take what is buffered": measured at 110 docs/s
        # on 1 worker (docs/decisions/take-windows.md), taking what is buffered gave batches of 1-5,
        # ~1.5x the messages per document and ~15% more worker and broker CPU; p99 0.9-1.3 s vs 0.3-0.7 s.
        @self.app.agent(self.documents_topic)
        async def documents(stream: Any) -> None:
            await self._run_agent("documents", stream.take_events(s.batch_size, within=s.batch_within),
                                  self._handle_documents)

        @self.app.agent(self.probe_topic)
        async def probe(stream: Any) -> None:
            await self._run_agent("probe", stream.take_events(64, within=s.batch_within), self._handle_probes)

        @self.app.agent(self.gather_topic)
        async def gather(stream: Any) -> None:
            await self._run_agent("gather", stream.take_events(64, within=s.batch_within), self._handle_gather)

        inputs = {"documents": s.documents_topic, "probe": self.topics.probe, "gather": self.topics.gather}

        @self.app.timer(interval=2.0)
        async def repeat_ledger_seeks() -> None:
            lag, measured = 0, False
            for stage, ledger in self.ledgers.items():
                self._request_seeks(ledger.due())
                if not self.app.rebalancing:
                    ends, fetched = known_ends(self.app.consumer, inputs[stage])
                    await self._learn_starts(ledger, ledger.unstarted(ends))
                    committed = committed_offsets(self.app.consumer)
                    held = held_offsets(self.app, inputs[stage])
                    self._request_seeks(ledger.stalled(ends, fetched, committed, held))
                    lags = self._lags(ledger, ends, committed)
                    metrics.set_lag(stage, {tp: n or 0 for tp, n in lags.items()})
                    # a new group's partition before its first batch: all of it is still to come
                    lag += sum(max(0, ends[tp] if n is None else n) for tp, n in lags.items())
                    measured = measured or bool(ends)
            if measured:
                self.backlog.measure(lag)
                metrics.BEHIND.set(int(self.backlog()))

        @self.app.timer(interval=1.0)
        async def release_revisions() -> None:
            try:
                await self._release_revisions()
            except Exception as exc:
                self.fatal(exc, "gather")

        trim = heap_trimmer()
        if trim is not None:
            @self.app.timer(interval=HEAP_TRIM_SECONDS)
            async def trim_heap() -> None:
                trim()

        self.app.on_partitions_revoked.connect(self._on_revoked)  # type: ignore[arg-type]

    async def _release_revisions(self) -> None:
        """Publish the held revisions that are due in the gather partitions this worker owns; only once
        they are delivered are they marked published (a crash before then publishes them again)."""
        owned = self._owned()
        partitions = [p for p in range(self.settings.index_partitions) if (self.topics.gather, p) in owned]
        if not partitions:
            return
        mark = self.output.mark()
        released = {p: self.gather.release(p) for p in partitions}
        released = {p: r for p, r in released.items() if r}
        if not released:
            return
        await self._flush(mark)
        mark = self.output.mark()
        for partition, done in released.items():
            self.gather.released(partition, done)
        await self._flush(mark)

    async def _learn_starts(self, ledger: InputLedger, tps: list[TP]) -> None:
        """Tell the ledger where reading began in ``tps`` (nothing processed there yet); if the broker
        does not answer, the next tick asks again."""
        if not tps:
            return
        try:
            starts = await asyncio.to_thread(reading_starts, self.settings, tps)
        except Exception as exc:
            log.debug("where reading began in %s: %s", tps, exc)
            return
        for tp, offset in starts.items():
            ledger.start(tp, offset)

    @staticmethod
    def _lags(ledger: InputLedger, ends: dict[TP, int], committed: Mapping[Any, int | None]) -> dict[TP, int | None]:
        """Per assigned partition: records up to ``end`` not yet processed, from the ledger's position,
        else (nothing processed since the assignment) from the group's committed offset; None when
        neither is known (a new group before its first batch)."""
        lags: dict[TP, int | None] = {}
        for tp, end in ends.items():
            position = ledger.position(tp)
            if position is None:
                position = committed.get(tp)  # faust's TP is a (topic, partition) named tuple
            lags[tp] = end - position if position is not None else None
        return lags

    async def _on_revoked(self, sender: Any, revoked: set[Any], **kwargs: Any) -> None:
        for stage in self.ledgers:
            metrics.set_lag(stage, {})  # the next timer tick sets the partitions this worker still has
        for ledger in self.ledgers.values():
            ledger.forget((tp.topic, tp.partition) for tp in revoked)
        # Faust closes a revoked partition's database only by dropping its reference (it does not
        # call close): one we keep holds the RocksDB lock, and when the partition comes back Faust's
        # reopen fails for 30 s and the worker crashes (seen: a worker left, its partitions returned).
        for topics, stores in self._stores_by_topics:
            for p in {tp.partition for tp in revoked if tp.topic in topics}:
                stores.pop(p, None)
        self.probes.forget({tp.partition for tp in revoked if tp.topic in self._block_topics})
