"""The consumer's fetch wait, which Faust hard-codes.

Upstream: faust-streaming creates its aiokafka consumer with ``fetch_max_wait_ms=1500``
(``AIOKafkaConsumerThread._create_worker_consumer``,
https://github.com/faust-streaming/faust/blob/v0.15.2/faust/transport/drivers/aiokafka.py#L615) and
has no setting for it. On tansu a fetch waits that long whenever some assigned partitions have no
data, and our pipeline has three consumer hops (documents -> probe -> gather), so verdicts took 3-5 s
even at low load. A short wait costs a few more idle fetch requests.

Patched: ``aiokafka.AIOKafkaConsumer.__init__`` (the value of that one keyword). Checked against
faust-streaming 0.15.3 (the same call from 0.13.2) and aiokafka 0.14.0.
"""

from __future__ import annotations

from typing import Any

import aiokafka

from stream.service.runtime.patches.target import Patch, apply

_ORIGINAL_INIT = aiokafka.AIOKafkaConsumer.__init__
_state = {"fetch_max_wait_ms": 1500}


def _init(self: Any, *topics: Any, **kwargs: Any) -> None:
    if "fetch_max_wait_ms" in kwargs:
        kwargs["fetch_max_wait_ms"] = _state["fetch_max_wait_ms"]
    _ORIGINAL_INIT(self, *topics, **kwargs)


PATCHES = (Patch(aiokafka.AIOKafkaConsumer, "__init__", _init),)


def set_fetch_max_wait(ms: int) -> None:
    """Use ``ms`` for every aiokafka consumer Faust creates from now on in this process."""
    _state["fetch_max_wait_ms"] = ms
    apply(PATCHES)
