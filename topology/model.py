"""Topology model: topics.yaml rendered for one deployment (app id, topic names, partition counts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

DEFAULT_APP_ID = "dedup"
DEFAULT_PARTITIONS = 8
DEFAULT_INDEX_PARTITIONS = 2
DEFAULT_REPLICATION = 1


@dataclass(frozen=True)
class TopicSpec:
    name: str
    role: str  # input | output | dead-letter | replay-ledger | internal | changelog
    partitions: int
    replication: int
    configs: dict[str, str] = field(default_factory=dict)
    key: str = ""
    value: str = ""

    @property
    def compacted(self) -> bool:
        return "compact" in self.configs.get("cleanup.policy", "")


@dataclass(frozen=True)
class Topology:
    app_id: str
    topics: tuple[TopicSpec, ...]

    def by_role(self, role: str) -> list[TopicSpec]:
        return [t for t in self.topics if t.role == role]

    def named(self, name: str) -> TopicSpec:
        for t in self.topics:
            if t.name == name:
                return t
        raise KeyError(name)

    def internal_name(self, suffix: str) -> str:
        """Name of an internal topic, e.g. ``internal_name("probe")`` -> ``dedup-probe``."""
        return f"{self.app_id}-{suffix}"


def raw_topology() -> dict[str, Any]:
    """topics.yaml as a dict (package data, so an installed worker finds it)."""
    text = resources.files("topology").joinpath("topics.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def load_topology(
    app_id: str = DEFAULT_APP_ID,
    partitions: int = DEFAULT_PARTITIONS,
    replication: int = DEFAULT_REPLICATION,
    documents: str = "documents",
    verdicts: str = "verdicts",
    dlq: str = "documents.dlq",
    index_partitions: int = DEFAULT_INDEX_PARTITIONS,
) -> Topology:
    """Render topics.yaml for one deployment."""
    if partitions < 1 or replication < 1 or index_partitions < 1:
        raise ValueError("partitions, index_partitions and replication must be >= 1")
    data = raw_topology()
    defaults = data.get("defaults") or {}
    names = {"app_id": app_id, "documents": documents, "verdicts": verdicts, "dlq": dlq}
    specs = []
    for entry in data["topics"]:
        count = entry.get("partitions") or defaults.get("partitions") or partitions
        specs.append(
            TopicSpec(
                name=str(entry["name"]).format(**names),
                role=str(entry["role"]),
                partitions=index_partitions if count == "index" else int(count),
                replication=int(entry.get("replication") or defaults.get("replication") or replication),
                configs={str(k): str(v) for k, v in (entry.get("configs") or {}).items()},
                key=str(entry.get("key", "")),
                value=str(entry.get("value", "")),
            )
        )
    return Topology(app_id=app_id, topics=tuple(specs))
