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


def test_two_partition_counts_each_shared_by_topics_faust_co_partitions() -> None:
    """The internal topics and tables have the index's count; the public topics and the documents
    agent's positions, the deployment's."""
    topo = load_topology(app_id="x", partitions=6, replication=3, documents="in", verdicts="out", dlq="in.dlq",
                         index_partitions=2)
    index = {"x-probe", "x-blocks-changelog", "x-gather", "x-gather_state-changelog"}
    assert topo.named("x-positions-changelog").partitions == 6
    assert {t.partitions for t in topo.topics if t.name in index} == {2}
    assert {t.partitions for t in topo.topics if t.name not in index} == {6}
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
