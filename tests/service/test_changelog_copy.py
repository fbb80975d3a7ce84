"""``dedup repartition``'s writer: a record the broker never takes fails the command, naming it."""

from __future__ import annotations

import pytest

from stream.errors import BrokerUnavailable
from stream.service import changelog_copy
from stream.service.settings import load_settings


def test_a_record_never_delivered_fails_the_writer(monkeypatch: pytest.MonkeyPatch) -> None:
    # no broker listens on port 1: the record times out after a second, and the producer's delivery
    # callback (one for the producer, not per record) must still see it
    monkeypatch.setitem(changelog_copy.PRODUCER, "message.timeout.ms", 1000)
    settings = load_settings(env={"DEDUP_BROKER": "kafka://127.0.0.1:1"})
    writer = changelog_copy._Writer(settings)
    writer.write("app-blocks-changelog", 3, [(b"key", b"value")])
    assert writer.written == {"app-blocks-changelog": 1}
    with pytest.raises(BrokerUnavailable, match=r"app-blocks-changelog\[3\]"):
        writer.close()
