"""Apply and check a Topology against a live cluster (confluent-kafka AdminClient).

``apply`` creates missing topics; it never deletes or re-partitions existing ones (that loses data
or breaks key->partition routing), it reports them as drift instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from topology.model import TopicSpec, Topology


@dataclass
class Drift:
    topic: str
    problem: str
    role: str = ""  # the topic's role in the topology
    partitions: bool = False  # a partition count differs (the rest: configs)

    def __str__(self) -> str:
        return f"{self.topic}: {self.problem}"


@dataclass
class Report:
    created: list[str] = field(default_factory=list)
    ok: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.missing and not self.drift


def _admin(conf: dict[str, Any]) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(conf)


def _partition_counts(admin: Any, names: Iterable[str], timeout: float) -> dict[str, int]:
    wanted = set(names)
    md = admin.list_topics(timeout=timeout)
    return {n: len(t.partitions) for n, t in md.topics.items() if n in wanted and not t.error}


def partition_counts(conf: dict[str, Any], names: Iterable[str], timeout: float = 10.0) -> dict[str, int]:
    """The partition count of each existing topic among ``names``."""
    return _partition_counts(_admin(conf), names, timeout)


def _describe(admin: Any, names: list[str], timeout: float) -> tuple[dict[str, int], dict[str, dict[str, str]]]:
    """Partition counts and explicitly set configs of the existing topics among ``names``."""
    from confluent_kafka.admin import ConfigResource

    partitions = _partition_counts(admin, names, timeout)
    configs: dict[str, dict[str, str]] = {}
    if partitions:
        futures = admin.describe_configs([ConfigResource("topic", n) for n in partitions])
        for res, fut in futures.items():
            try:
                entries = fut.result(timeout=timeout)
            except Exception:  # a broker without DescribeConfigs: configs are simply not checked
                continue
            configs[res.name] = {k: str(v.value) for k, v in entries.items()}
    return partitions, configs


def _compare(spec: TopicSpec, partitions: int, configs: dict[str, str] | None) -> list[Drift]:
    drift = []
    if partitions != spec.partitions:
        drift.append(Drift(spec.name, f"has {partitions} partitions, topology says {spec.partitions}", spec.role,
                           partitions=True))
    if configs is not None:
        for key, want in spec.configs.items():
            have = configs.get(key)
            if have != want:
                drift.append(Drift(spec.name, f"{key}={have!r}, topology says {want!r}", spec.role))
    return drift


def check(topology: Topology, conf: dict[str, Any], timeout: float = 10.0) -> Report:
    admin = _admin(conf)
    names = [t.name for t in topology.topics]
    partitions, configs = _describe(admin, names, timeout)
    report = Report()
    for spec in topology.topics:
        if spec.name not in partitions:
            report.missing.append(spec.name)
            continue
        drift = _compare(spec, partitions[spec.name], configs.get(spec.name))
        if drift:
            report.drift.extend(drift)
        else:
            report.ok.append(spec.name)
    return report


def apply(topology: Topology, conf: dict[str, Any], timeout: float = 10.0) -> Report:
    """Create the missing topics, then check everything again."""
    from confluent_kafka.admin import NewTopic

    admin = _admin(conf)
    first = check(topology, conf, timeout)
    wanted = [topology.named(n) for n in first.missing]
    created = []
    if wanted:
        futures = admin.create_topics(
            [NewTopic(s.name, s.partitions, s.replication, config=dict(s.configs)) for s in wanted],
            operation_timeout=timeout,
        )
        for name, fut in futures.items():
            try:
                fut.result(timeout=timeout)
                created.append(name)
            except Exception as exc:
                # another worker created it between our check and create: fine
                if "TOPIC_ALREADY_EXISTS" not in str(exc) and "already exists" not in str(exc):
                    raise
    report = check(topology, conf, timeout)
    report.created = created
    return report
