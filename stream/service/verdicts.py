"""``dedup verdicts``: tail the verdict topic (table or JSON lines) with running counts and latency.

Reads with a group-less confluent-kafka consumer (``assign`` to every partition from the start): no
consumer-group join, so it starts at once (a group join takes ~20 s on tansu).
Latency = verdict ``processed_at`` - input record timestamp, first verdicts only (revisions are
reported as revisions, not as slow verdicts).
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from stream.service.settings import Settings


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, max(0, round(q / 100 * (len(sorted_values) - 1))))
    return sorted_values[i]


@dataclass
class VerdictStats:
    counts: Counter[str] = field(default_factory=Counter)
    revised: int = 0
    latencies: list[float] = field(default_factory=list)
    latest: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, verdict: dict[str, Any]) -> None:
        self.latest[verdict["id"]] = verdict
        if verdict.get("revised"):
            self.revised += 1
        else:
            src = verdict.get("source") or {}
            if "timestamp" in src and "processed_at" in verdict:
                self.latencies.append(float(verdict["processed_at"]) - float(src["timestamp"]))

    def table_counts(self) -> Counter[str]:
        return Counter(v["verdict"] for v in self.latest.values())

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies)
        return {
            "documents": len(self.latest), "verdicts": dict(self.table_counts()), "revisions": self.revised,
            "latency_ms": {f"p{q}": round(percentile(lat, q) * 1000, 1) for q in (50, 90, 99)} if lat else {},
        }


def open_consumer(settings: Settings, topic: str) -> Any:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(settings.confluent(**{"group.id": "dedup-verdicts-tail", "enable.auto.commit": False,
                                              "auto.offset.reset": "earliest"}))
    meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
    if meta is None or meta.error is not None:
        raise SystemExit(f"topic {topic} not found")
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in meta.partitions])
    return consumer


def tail(settings: Settings, topic: str, follow: bool, as_json: bool, idle_timeout: float = 5.0) -> VerdictStats:
    from rich.console import Console

    consumer = open_consumer(settings, topic)
    stats = VerdictStats()
    console = Console(stderr=as_json)
    last = time.monotonic()
    try:
        while True:
            msgs = consumer.consume(500, 0.5)
            for msg in msgs:
                if msg.error() or msg.value() is None:
                    continue
                v = json.loads(msg.value())
                stats.add(v)
                last = time.monotonic()
                if as_json:
                    sys.stdout.write(json.dumps(v, ensure_ascii=False) + "\n")
                else:
                    sim = v["matches"][0]["similarity"] if v.get("matches") else ""
                    lat = ""
                    if not v.get("revised") and v.get("source", {}).get("timestamp"):
                        lat = f"{(v['processed_at'] - v['source']['timestamp']) * 1000:.0f}"
                    console.print(f"{v['id'][:40]:40} {v['verdict']:15} {(v['canonical'] or '-')[:40]:40} "
                                  f"{sim!s:6} {'yes' if v.get('revised') else '':4} {lat}")
            if msgs and as_json:
                sys.stdout.flush()
            if not follow and time.monotonic() - last > idle_timeout:
                break
            if follow and msgs:
                counts = stats.table_counts()
                console.print(f"[dim]-- {len(stats.latest)} documents: {counts.get('unique', 0)} unique, "
                              f"{counts.get('near_duplicate', 0)} near-duplicate, {counts.get('duplicate', 0)} "
                              f"duplicate, {stats.revised} revisions[/dim]")
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    console.print(json.dumps(stats.summary(), ensure_ascii=False))
    return stats
