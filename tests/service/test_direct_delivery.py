"""Faust's fetch loop delivers a record inline when nothing makes it wait (patches.direct_delivery._wait_first).

Run on a real ``mode.Service`` (what Faust's consumer is), with the call the fetch loop makes:
``wait_first(delivery, flow_suspended.wait())``. A delivery that waits must keep Faust's semantics:
it finishes when what it waits for is done, and is cancelled when the flow is suspended first.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mode import Service

from stream.service.runtime.patches.direct_delivery import _wait_first


class Fetcher(Service):
    pass


async def counting_tasks() -> list[Any]:
    """The tasks created on this loop from now on."""
    created: list[Any] = []
    loop = asyncio.get_running_loop()

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        task = asyncio.Task(coro, loop=loop, **kwargs)
        created.append(task)
        return task

    loop.set_task_factory(factory)  # type: ignore[arg-type]
    return created


def test_a_delivery_that_does_not_wait_runs_inline_without_tasks() -> None:
    delivered: list[int] = []

    async def deliver(offset: int) -> int:
        delivered.append(offset)
        return offset

    async def main() -> tuple[Any, list[Any], bool]:
        created = await counting_tasks()
        suspended = asyncio.Event()
        flow_wait = suspended.wait()
        result = await _wait_first(Fetcher(), deliver(7), flow_wait)
        return result, list(created), flow_wait.cr_frame is None

    result, created, flow_wait_closed = asyncio.run(main())
    assert delivered == [7]
    assert result.results == [7] and not result.stopped
    assert created == []  # Faust's wait_first makes four
    assert flow_wait_closed  # the flow waiter was closed, never left pending


def test_a_delivery_that_waits_finishes_after_what_it_waits_for() -> None:
    steps: list[str] = []

    async def deliver(room: asyncio.Future[None]) -> str:
        steps.append("put")
        await room  # a full stream buffer
        steps.append("queued")
        return "done"

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        room: asyncio.Future[None] = loop.create_future()
        loop.call_later(0.05, room.set_result, None)
        return await _wait_first(Fetcher(), deliver(room), asyncio.Event().wait())

    result = asyncio.run(main())
    assert steps == ["put", "queued"]
    assert result.results == ["done"] and not result.stopped


def test_a_waiting_delivery_is_cancelled_when_the_flow_is_suspended_first() -> None:
    steps: list[str] = []

    async def deliver(room: asyncio.Future[None]) -> None:
        steps.append("put")
        try:
            await room
            steps.append("queued")
        except asyncio.CancelledError:
            steps.append("cancelled")
            raise

    async def main() -> tuple[Any, bool]:
        loop = asyncio.get_running_loop()
        room: asyncio.Future[None] = loop.create_future()  # never has room
        suspended = asyncio.Event()
        loop.call_later(0.05, suspended.set)
        result = await _wait_first(Fetcher(), deliver(room), suspended.wait())
        await asyncio.sleep(0)  # the cancellation reaches the delivery
        return result, room.cancelled()

    result, room_cancelled = asyncio.run(main())
    assert steps == ["put", "cancelled"]
    assert result.results == [True]  # the flow waiter won, as in Faust's wait_first
    assert room_cancelled


@pytest.mark.parametrize("waits_first", [False, True])
def test_a_failing_delivery_raises_its_error(waits_first: bool) -> None:
    async def deliver() -> None:
        if waits_first:
            await asyncio.sleep(0.01)
        raise KeyError("no stream for this partition")

    async def main() -> bool:
        flow_wait = asyncio.Event().wait()
        with pytest.raises(KeyError):
            await _wait_first(Fetcher(), deliver(), flow_wait)
        await asyncio.sleep(0)  # Faust's wait_first cancels what is left; the cancellation runs
        return flow_wait.cr_frame is None

    assert asyncio.run(main())


def test_a_stopped_consumer_takes_faust_s_path() -> None:
    delivered: list[int] = []

    async def deliver() -> None:
        delivered.append(1)

    async def main() -> Any:
        fetcher = Fetcher()
        fetcher._stopped.set()
        return await _wait_first(fetcher, deliver(), asyncio.Event().wait())

    assert asyncio.run(main()).stopped  # what Faust returns to a stopping fetch loop
