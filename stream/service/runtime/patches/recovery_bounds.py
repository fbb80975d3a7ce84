"""Table recovery reads each changelog to its real last record.

Upstream: Faust's ``Recovery._build_highwaters`` takes (high watermark - 1) as the last offset of each
changelog partition to restore
(https://github.com/faust-streaming/faust/blob/v0.15.2/faust/tables/recovery.py#L669). tansu reports
the high watermark as (base offset of the LAST record batch) + 1, not (last offset) + 1, so recovery
would stop at the first record of the last batch and silently lose the rest (Apache Kafka reports
last + 1). The patched method raises each bound to the offset of the last record actually read
(``stream.service.runtime.recovery.exact_last_offsets``); on Kafka that is the same number.

Patched: ``faust.tables.recovery.Recovery._build_highwaters``. Checked against faust-streaming 0.15.3
(the same method from 0.13.2).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from faust.tables.recovery import Recovery

from stream.service.runtime.patches.target import Patch, apply
from stream.service.runtime.recovery import exact_last_offsets

log = logging.getLogger("dedup.recovery")

_ORIGINAL_BUILD_HIGHWATERS = Recovery._build_highwaters
_state: dict[str, dict[str, Any]] = {"conf": {}}  # the confluent-kafka settings that read the bounds


async def _build_highwaters(self: Any, consumer: Any, tps: Any, destination: Any, title: str) -> None:
    await _ORIGINAL_BUILD_HIGHWATERS(self, consumer, tps, destination, title)  # destination[tp] = reported - 1
    reported = {(tp.topic, tp.partition): int(destination[tp]) + 1 for tp in tps}
    exact = await asyncio.get_running_loop().run_in_executor(None, exact_last_offsets, _state["conf"], reported)
    for tp in tps:
        bound = exact[(tp.topic, tp.partition)]
        if bound != destination[tp]:
            log.info("%s changelog %s[%d]: recovery reads to offset %d (broker reported %d)",
                     title, tp.topic, tp.partition, bound, destination[tp])
        destination[tp] = bound
    highwaters(self).update({tp: destination[tp] for tp in tps})


def highwaters(recovery: Any) -> dict[Any, int]:
    """tp -> the last changelog offset recovery reads to, as this patch set it (for ``data_loss_check``)."""
    found: dict[Any, int] = recovery.__dict__.setdefault("_dedup_highwaters", {})
    return found


PATCHES = (Patch(Recovery, "_build_highwaters", _build_highwaters),)


def install_exact_recovery_bounds(conf: dict[str, Any]) -> None:
    """Make Faust's table recovery (this process) read each changelog to its real last record; ``conf``:
    the confluent-kafka settings of the consumer that reads the last batches."""
    _state["conf"] = conf
    apply(PATCHES)
