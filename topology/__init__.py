"""The Kafka topology of the dedup service as data (topics.yaml) plus helpers to render and apply it.

``load_topology(...)`` gives concrete ``TopicSpec``s for one deployment; ``apply``/``check`` in
``topology.admin`` create missing topics and report drift through confluent-kafka's AdminClient.
"""

from topology.model import DEFAULT_INDEX_PARTITIONS, TopicSpec, Topology, load_topology

__all__ = ["DEFAULT_INDEX_PARTITIONS", "TopicSpec", "Topology", "load_topology"]
