"""The embedded broker (stream/service/runtime/embedded.py) on a port another process listens on."""

from __future__ import annotations

import socket

import pytest

from stream.service.runtime.embedded import BrokerError, EmbeddedBroker
from tests.harness import listen_port


def test_a_port_another_process_listens_on_is_refused_not_taken_for_the_broker() -> None:
    """Before, the other listener made the port look ready at once: ``start`` returned a broker whose
    tansu had exited, unable to bind it (``dedup demo`` and the embedded default would have talked to
    whatever listened there)."""
    port = listen_port()
    with socket.socket() as other:
        other.bind(("127.0.0.1", port))
        other.listen()
        broker = EmbeddedBroker(port=port)
        with pytest.raises(BrokerError, match=f"127.0.0.1:{port} is in use by another process"):
            broker.start()
        assert broker.proc is None  # no tansu was started
