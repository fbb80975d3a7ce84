"""``until_stopped``: the stop flag of a command that runs until Ctrl-C or SIGTERM, even when SIGINT
came ignored (a command started with ``nohup ... &`` by a non-interactive shell)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import pytest

from stream.service.commands.common import until_stopped


def _delivered(flag: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 5
    while not flag() and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_raises_the_flag_even_when_sigint_came_ignored(signum: int) -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with until_stopped() as stopped:
            assert not stopped()
            os.kill(os.getpid(), signum)
            _delivered(stopped)
            assert stopped()
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN  # what was inherited, back on leaving
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_second_signal_interrupts_at_once() -> None:
    with until_stopped() as stopped, pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        _delivered(stopped)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)  # the handler runs here and raises
