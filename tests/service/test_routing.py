"""Which partition owns what: stable hashes (stream/service/stages/routing.py)."""

from __future__ import annotations

from stream.service.stages.messages import Source
from stream.service.stages.routing import bucket_partition, doc_partition, tables_by_partition

SRC = Source("documents", 1, 42, 1000.0)


def test_routing_is_stable_and_groups_tables() -> None:
    assert bucket_partition(2, b"\x02\xab\xcd", 8) == bucket_partition(2, b"\x02\xab\xcd", 8)
    assert 0 <= doc_partition("doc-1", 4) < 4
    grouped = tables_by_partition([(0, b"a"), (1, b"a"), (2, b"zz")], 1)
    assert grouped == {0: [0, 1, 2]}
