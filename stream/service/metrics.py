"""Prometheus metrics of a worker (prometheus-client); served with /health on ``metrics_port`` (runtime/health.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import Counter, Gauge, Histogram

if TYPE_CHECKING:
    from stream.service.runtime.ledger import InputLedger

DOCUMENTS = Counter("dedup_documents_total", "Input documents consumed")
DEAD_LETTERS = Counter("dedup_dead_letters_total", "Input records sent to the dead-letter topic, by stage and code",
                       ["stage", "code"])
SUPERSEDED = Counter("dedup_superseded_total", "Input records replaced by a later record of the same id before "
                     "they had a verdict (their outcome: the later record's verdict)")
KEY_MISMATCH = Counter("dedup_key_mismatch_total", "Input records whose Kafka key is not their id (judged under "
                       "the id; the producer should key records by id)")
DELETES = Counter("dedup_deletes_total", "Deletions: requested (input records), removed / absent (per probed "
                  "partition), published (tombstones) / unknown (ids that never had a verdict: a no-op)", ["result"])
EXPIRED = Counter("dedup_expired_total", "Index entries deleted because retention leaves them nothing to match")
PROBES = Counter("dedup_probes_total", "Per-partition document probes run")
CANDIDATES = Counter("dedup_candidates_total", "Index candidates verified")
VERDICTS = Counter("dedup_verdicts_total", "Verdict records published, first verdicts and revisions alike "
                   "(revised=true: a later document changed an earlier verdict)", ["verdict", "revised"])
# what a person means by "documents judged": one per document, by its first verdict; revisions apart
JUDGED = Counter("dedup_documents_judged_total", "Documents judged, counted once each by their first verdict",
                 ["verdict"])
REVISED = Counter("dedup_verdicts_revised_total", "Verdicts revised after publication, by the new verdict (not "
                  "new documents)", ["verdict"])
READY = Gauge("dedup_ready", "1 while the worker is assigned, its tables recovered and consuming (GET /ready)")
LAG = Gauge("dedup_consumer_lag", "Records of an input partition not yet processed by this worker (the partition's "
            "end minus the agent's position); stage documents is the documents topic", ["stage", "topic", "partition"])
BEHIND = Gauge("dedup_backlog_holding_revisions", "1 while the worker is behind its input (lag above backlog_lag, "
                "until it has stayed below for a revision interval) and holds revisions until it catches up")
HOPS = Counter("dedup_hops_total", "Messages handed to the next stage, by hop (probe/gather) and route: "
               "local (a partition this worker owns, no Kafka round trip) or kafka", ["hop", "route"])
REVISIONS = Counter("dedup_revisions_sent_total", "Revisions sent to later documents (one per pair)")
REVISION_ENTRIES = Counter("dedup_revision_entries_total", "Internal revision entries: one per revising document "
                           "and gather partition, however many later documents it revises")
BATCH_SECONDS = Histogram("dedup_batch_seconds", "Time to process one agent batch", ["agent"],
                          buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
DELIVERY_WAIT = Histogram("dedup_batch_delivery_wait_seconds", "Part of a batch's time spent waiting for its "
                          "output to be acknowledged", ["agent"],
                          buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
BATCH_EVENTS = Histogram("dedup_batch_events", "Input events per agent batch (small batches mean per-message "
                         "overhead dominates)", ["agent"], buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256))
LATENCY = Histogram("dedup_verdict_latency_seconds", "Input record timestamp to verdict publish",
                    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))

# counts kept by each agent's input ledger (read when scraped); "accepted" are records given up for
# good (a compacted topic, or past retention): the one to alert on
INPUT_REREADS = Gauge("dedup_input_rereads", "Input re-reads by the agent's ledger since start: gaps found, "
                      "silent partitions found, gaps accepted as lost", ["agent", "kind"])


_lag_labels: dict[str, set[tuple[str, str, str]]] = {}


def set_lag(stage: str, lags: dict[tuple[str, int], int]) -> None:
    """Set the lag of ``stage``'s assigned partitions; drop partitions it no longer has."""
    labels = {(stage, topic, str(partition)) for topic, partition in lags}
    for gone in _lag_labels.get(stage, set()) - labels:
        LAG.remove(*gone)
    for (topic, partition), lag in lags.items():
        LAG.labels(stage, topic, str(partition)).set(max(0, lag))
    _lag_labels[stage] = labels


def watch_ledger(agent: str, ledger: InputLedger) -> None:
    INPUT_REREADS.labels(agent, "gap").set_function(lambda: ledger.gaps_found)
    INPUT_REREADS.labels(agent, "stall").set_function(lambda: ledger.stalls_found)
    INPUT_REREADS.labels(agent, "accepted").set_function(lambda: ledger.gaps_accepted)
