"""The topology as data: one definition rendered per deployment (no broker needed)."""

from __future__ import annotations

from topology import load_topology
from topology.admin import Drift, _compare


def test_default_topology_has_every_topic_the_worker_uses() -> None:
    topo = load_topology()
    names = [t.name for t in topo.topics]
    assert names[:3] == ["documents", "verdicts", "documents.dlq"]
    assert {"dedup-probe", "dedup-gather", "dedup-blocks-changelog", "dedup-gather_state-changelog"} <= set(names)
    assert topo.named("verdicts").compacted
    assert all(t.compacted for t in topo.by_role("changelog"))
    assert not topo.named("documents").compacted


def test_one_partition_count_for_all_topics_so_faust_co_partitions_them() -> None:
    topo = load_topology(app_id="x", partitions=6, replication=3, documents="in", verdicts="out", dlq="in.dlq")
    assert {t.partitions for t in topo.topics} == {6}
    assert {t.replication for t in topo.topics} == {3}
    assert topo.internal_name("probe") == "x-probe"
    assert topo.named("x-blocks-changelog").role == "changelog"
    assert [t.name for t in topo.by_role("input")] == ["in"]


def test_drift_reports_partitions_and_configs() -> None:
    spec = load_topology().named("verdicts")
    assert _compare(spec, spec.partitions, {"cleanup.policy": "compact"}) == []
    drift = _compare(spec, 3, {"cleanup.policy": "delete"})
    assert [d.problem.split()[0] for d in drift] == ["has", "cleanup.policy='delete',"]
    assert str(Drift("t", "x")) == "t: x"
