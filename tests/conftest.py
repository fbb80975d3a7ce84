"""Shared fixtures. ``broker``: one tansu broker on a free 127.0.0.1 port for the whole session
(its consumer-group joins are slow, so every integration test shares it, each test with its own
topics and consumer group). ``no_process_left_behind``: every test module stops what it started."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SESSION_PROCESSES: set[int] = set()  # started by session fixtures: they outlive every module


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from stream.service.runtime.embedded import EmbeddedBroker

    log = tmp_path_factory.mktemp("broker") / "tansu.log"
    b = EmbeddedBroker(log_path=log).start()
    assert b.proc is not None
    SESSION_PROCESSES.add(b.proc.pid)
    try:
        yield b
    finally:
        b.stop()


def _descendants() -> dict[int, str]:
    """This process's live (not zombie) descendants: pid -> command line."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        state, ppid = stat[stat.rindex(")") + 2:].split()[:2]  # the name before may hold spaces
        if state != "Z":
            parents[int(entry.name)] = int(ppid)
    found: set[int] = set()
    frontier = {os.getpid()}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return {pid: _command(pid) for pid in found}


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:200]
    except OSError:
        return "?"


@pytest.fixture(scope="module", autouse=True)
def no_process_left_behind(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails the module (and kills the leftovers) if a worker, console, browser or command it started
    still runs once its fixtures are torn down: a process left running once slowed and confused the
    tests after it. Autouse, so torn down after the module's other fixtures."""
    before = set(_descendants())
    yield
    deadline = time.monotonic() + 15  # a terminated process may take a moment to go
    while (left := {pid: cmd for pid, cmd in _descendants().items() if pid not in before | SESSION_PROCESSES}) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    if left:
        pytest.fail(f"{request.module.__name__} left {len(left)} processes running (now killed): "
                    + "; ".join(f"{pid} {cmd}" for pid, cmd in sorted(left.items())), pytrace=False)
