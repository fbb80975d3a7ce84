"""One measured override of a value Faust hard-codes: the consumer's fetch wait.

faust 0.15.3 builds its aiokafka consumer with ``fetch_max_wait_ms=1500``
(faust/transport/drivers/aiokafka.py). On tansu a fetch waits that long whenever some assigned
partitions have no data, and our pipeline has three consumer hops (documents -> probe -> gather),
so verdicts took 3-5 s even at low load. A short wait costs a few more idle fetch requests.
"""

from __future__ import annotations

from typing import Any

import aiokafka

_ORIGINAL = aiokafka.AIOKafkaConsumer.__init__
_state = {"fetch_max_wait_ms": 1500}


def _init(self: Any, *topics: Any, **kwargs: Any) -> None:
    if "fetch_max_wait_ms" in kwargs:
        kwargs["fetch_max_wait_ms"] = _state["fetch_max_wait_ms"]
    _ORIGINAL(self, *topics, **kwargs)


def set_fetch_max_wait(ms: int) -> None:
    """Use ``ms`` for every aiokafka consumer Faust creates from now on in this process."""
    _state["fetch_max_wait_ms"] = ms
    aiokafka.AIOKafkaConsumer.__init__ = _init
