"""Shared fixtures. ``broker``: one tansu broker on a free 127.0.0.1 port for the whole session
(its consumer-group joins are slow, so every integration test shares it, each test with its own
topics and consumer group)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from stream.service.runtime.embedded import EmbeddedBroker

    log = tmp_path_factory.mktemp("broker") / "tansu.log"
    b = EmbeddedBroker(log_path=log).start()
    try:
        yield b
    finally:
        b.stop()
