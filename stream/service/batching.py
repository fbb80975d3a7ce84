"""Adaptive batching for the agents: take whatever has arrived, without waiting for a window.

Faust's ``Stream.take_events(max_, within)`` returns a batch when ``max_`` events are buffered or
``within`` seconds have passed. At low load the window is pure waiting: each of our three hops
(documents -> probe -> gather) paid up to ``within`` per document. ``take_ready`` hands the agent
the events that are already in the stream's queue as soon as there is at least one, so batches are
as large as the backlog that built up while the agent was busy: one event at a trickle, up to
``max_`` under load. Same buffering and acking scheme as ``take_events`` (faust 0.15.3): events are
acknowledged only after the agent's loop body for the batch has finished.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from faust.types import EventT


async def take_ready(stream: Any, max_: int, idle: float = 1.0) -> AsyncGenerator[list[EventT], None]:
    """Yield lists of 1..``max_`` events: everything buffered once at least one is there.

    ``idle``: how often an empty wait re-checks whether the stream is stopping.
    """
    events: list[EventT] = []
    ready = asyncio.Event()  # at least one event buffered
    room = asyncio.Event()  # the buffer is below max_ again
    room.set()
    consuming: asyncio.Future[None] | None = None  # set while the agent handles a batch

    async def add_to_buffer(value: Any) -> Any:
        # runs in the stream's passive drainer for every event, in arrival order
        nonlocal consuming
        if consuming is not None:
            await consuming  # the agent is handling a batch: this event goes into the next one
        event = stream.current_event
        if event is None:
            raise RuntimeError("take_ready found current_event is None")
        events.append(event)
        ready.set()
        if len(events) >= max_:
            room.clear()
            await stream.wait(room)  # never more than max_ per batch
        return value

    queue = getattr(stream.channel, "queue", None)  # fetched events the stream has not taken yet
    enable_acks = stream.enable_acks
    stream.enable_acks = False  # we ack each event after its batch was handled
    stream.add_processor(add_to_buffer)
    stream._enable_passive(aiter(stream.channel))
    try:
        while not stream.should_stop:
            await stream.wait_for_stopped(ready, timeout=idle)
            if not events:
                continue
            # The drainer moves an event from the channel's queue into the buffer in a few loop
            # turns: let it move everything already queued (measured: without this, batches of 1-2
            # events under load, twice the per-document cost). Bounded, and it stops when the
            # queue is empty and the buffer has not grown for a few turns.
            turns = idle_turns = 0
            while len(events) < max_ and idle_turns < 3 and turns < 8 * max_:
                size = len(events)
                await asyncio.sleep(0)
                turns += 1
                idle_turns = 0 if len(events) > size or not _empty(queue) else idle_turns + 1
            loop = asyncio.get_running_loop()
            consuming = loop.create_future()
            batch = list(events)
            try:
                yield batch
            finally:
                del events[: len(batch)]
                for event in batch:
                    await stream.ack(event)
                if not events:
                    ready.clear()
                room.set()
                waiting, consuming = consuming, None
                if not waiting.done():
                    waiting.set_result(None)
    finally:
        stream.enable_acks = enable_acks
        stream._processors.remove(add_to_buffer)


def _empty(queue: Any) -> bool:
    return queue is None or bool(queue.empty())
