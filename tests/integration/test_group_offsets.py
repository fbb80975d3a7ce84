"""Where a consumer group begins reading, asked of a real broker: the committed offset, else the log's
first offset (what the input ledger compares a new deployment's first records with)."""

from __future__ import annotations

import pytest

from tests.harness import Deployment

pytestmark = pytest.mark.integration


def test_a_group_starts_at_its_committed_offset_else_at_the_log_start(deployment: Deployment) -> None:
    from confluent_kafka import Consumer, TopicPartition

    from stream.service.runtime.group_offsets import reading_starts
    from stream.service.settings import load_settings

    deployment.publish([{"id": f"d{i}", "text": f"document {i}"} for i in range(20)])
    settings = load_settings(env=deployment.env())
    tps = [(deployment.documents, p) for p in range(4)]
    assert reading_starts(settings, tps) == dict.fromkeys(tps, 0)
    committer = Consumer(settings.confluent(**{"group.id": settings.app_id, "enable.auto.commit": False}))
    committer.commit(offsets=[TopicPartition(deployment.documents, 1, 3)], asynchronous=False)
    committer.close()
    assert reading_starts(settings, tps) == {**dict.fromkeys(tps, 0), (deployment.documents, 1): 3}
