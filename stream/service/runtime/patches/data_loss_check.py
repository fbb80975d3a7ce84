"""Stop with a message, not a crash loop, when a changelog ends before what a local table applied.

Upstream: after ``Recovery._build_offsets``
(https://github.com/faust-streaming/faust/blob/v0.15.2/faust/tables/recovery.py#L717), Faust raises a
``ConsistencyError`` when a table's local offset is past the changelog's end: the broker's data is
gone (a restarted in-memory broker, a deleted topic), and the worker would crash at every start. The
app turns Faust's own check off (``recovery_consistency_check=False``) and the patched method hands
the partitions to a callback instead, which stops the worker saying what happened and what to do
(``stream.service.runtime.app``). It compares with the bounds ``recovery_bounds`` computed.

Patched: ``faust.tables.recovery.Recovery._build_offsets``. Checked against faust-streaming 0.15.3
(the same method from 0.13.2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faust.tables.recovery import Recovery

from stream.service.runtime.patches.recovery_bounds import highwaters
from stream.service.runtime.patches.target import Patch, apply

_ORIGINAL_BUILD_OFFSETS = Recovery._build_offsets


def _ignore(lost: list[str]) -> None:
    """Until ``install_data_loss_check`` names a callback."""


_state: dict[str, Callable[[list[str]], None]] = {"on_loss": _ignore}


async def _build_offsets(self: Any, consumer: Any, tps: Any, destination: Any, title: str) -> None:
    await _ORIGINAL_BUILD_OFFSETS(self, consumer, tps, destination, title)
    bounds = highwaters(self)
    lost = [f"{tp.topic}[{tp.partition}] ends at offset {bounds[tp]}, this worker has applied up to "
            f"{destination[tp]}" for tp in tps
            if tp in bounds and destination[tp] is not None and destination[tp] > bounds[tp]]
    if lost:
        _state["on_loss"](lost)


PATCHES = (Patch(Recovery, "_build_offsets", _build_offsets),)


def install_data_loss_check(on_loss: Callable[[list[str]], None]) -> None:
    """Call ``on_loss(descriptions)`` when a changelog ends before the offset a local table already
    applied (instead of Faust's ConsistencyError, which the app turns off)."""
    _state["on_loss"] = on_loss
    apply(PATCHES)
