"""Whether a worker is behind its input: what holds revisions back while a backlog is read."""

from __future__ import annotations

import time
from collections.abc import Callable


class Backlog:
    """Behind from a measured lag above ``lag_limit`` records until the lag has stayed at or below it
    for ``settle`` seconds: the documents read just before the catch-up still reach the gather stage
    (through the probe and gather hops) in that time, so their revisions join the held ones."""

    def __init__(self, lag_limit: int, settle: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.lag_limit, self.settle, self.clock = lag_limit, settle, clock
        # until a lag is measured (a worker starts on a backlog as often as not): held
        self.behind = True
        self.measured = False
        self._below_since: float | None = None

    def measure(self, lag: int) -> None:
        """The records not yet processed in the worker's input partitions, all stages together. The
        first measurement at or below the limit ends the wait at once: there was no backlog."""
        first, self.measured = not self.measured, True
        if lag > self.lag_limit:
            self.behind, self._below_since = True, None
            return
        now = self.clock()
        if self._below_since is None:
            self._below_since = now
        if first or (self.behind and now - self._below_since >= self.settle):
            self.behind = False

    def __call__(self) -> bool:
        return self.behind
