"""The plain values the stages pass around: a consumed record, the topic names, a batch's hops."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stream.service.stages.messages import GatherEntry, ProbeItem, Source


@dataclass(frozen=True)
class InputRecord:
    """What a stage needs of one consumed Kafka record."""

    key: bytes | None
    value: bytes | None
    source: Source


@dataclass(frozen=True)
class Topics:
    probe: str
    gather: str
    verdicts: str
    dlq: str
    gather_partitions: int  # of the gather topic and the gather state: ``routing.doc_partition``
    index_partitions: int  # of the probe topic and the block table: ``routing.bucket_partition``


def merge(into: defaultdict[int, list[Any]], more: Mapping[int, list[Any]]) -> None:
    for partition, entries in more.items():
        into[partition].extend(entries)


@dataclass
class Hops:
    """What a stage hands on: probe items and gather entries per target partition."""

    probes: defaultdict[int, list[ProbeItem]] = field(default_factory=lambda: defaultdict(list))
    gather: defaultdict[int, list[GatherEntry]] = field(default_factory=lambda: defaultdict(list))
