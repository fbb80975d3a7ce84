"""Shared fixtures and the run's order. ``broker``: one tansu broker on a free 127.0.0.1 port per test
process (its consumer-group joins are slow, so every integration test of the process shares it, each
test with its own topics and consumer group). With pytest-xdist each worker process has its own.

Before the first test, numba's cache is warmed once for the whole run (``tests.harness.warm``), and
integration tests, which mostly wait on the broker, are scheduled first, longest files first, so that
the many short unit tests fill the gaps at the end. ``no_process_left_behind``: every test module stops
what it started."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

WARM_LOCK = "DEDUP_TEST_WARM_LOCK"  # a file locked while the warm-up runs; inherited by xdist workers
# integration files from the longest to the shortest (measured with --durations; only the order matters)
LONG_FIRST = ("test_dlq", "test_lifecycle", "test_faults", "test_versions", "test_pipeline", "test_operations",
              "test_fuzz", "test_outage", "test_bench_reliability", "test_demo", "test_console")
# modules whose tests share a module-scoped deployment and run in order: one xdist process runs each
ONE_PROCESS = ("tests/integration/test_console.py",)
_WARM = pytest.StashKey[subprocess.Popen[bytes]]()
SESSION_PROCESSES: set[int] = set()  # started for the whole run (broker, warm-up): they outlive every module

# Bytecode is cached for the run whatever PYTHONDONTWRITEBYTECODE says: otherwise every xdist process and
# every `dedup` subprocess compiles the package and the tests from source again (collecting the tests:
# 8.5 s of CPU per process without the cache, 3.4 s with it). It goes to __pycache__/, ignored by git.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Temp dirs in memory when the machine has a tmpfs and the caller chose no TMPDIR: RocksDB syncs its files
# as a store opens, flushes and closes, which takes 70-100 ms a store on this VM's disk and 10-20 ms on
# tmpfs, and the tests open hundreds of stores. A SIGKILL keeps what was written either way.
SHM = Path("/dev/shm")
if "TMPDIR" not in os.environ and SHM.is_dir() and os.access(SHM, os.W_OK):
    os.environ["TMPDIR"] = str(SHM)  # inherited by the xdist processes and every subprocess
    tempfile.tempdir = None


def _cache_stamp(root: Path) -> str:
    """What numba's cached kernels depend on, and which ones the cache holds: the sources' sizes and times,
    the interpreter's and the compiler's versions, and the names of the cache's index files."""
    from importlib.metadata import version

    cache = Path(os.environ["NUMBA_CACHE_DIR"]) if os.environ.get("NUMBA_CACHE_DIR") else root / "stream"
    sources = [*sorted((root / "stream").rglob("*.py")), root / "tests" / "harness" / "warm.py"]
    parts = [sys.version, *(version(name) for name in ("numba", "llvmlite", "numpy")), str(cache)]
    parts += [f"{path.relative_to(root)} {path.stat().st_size} {path.stat().st_mtime_ns}" for path in sources]
    parts += sorted(str(path.relative_to(cache)) for path in cache.rglob("*.nbi"))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _stamp_path(root: Path) -> Path:
    return root / "tests" / "harness" / "__pycache__" / "warm.stamp"


def pytest_configure(config: pytest.Config) -> None:
    """In the controlling process: start the warm-up, holding the lock until it exits, unless the last
    complete warm-up left the cache as it is now (loading every kernel only to check costs ~4 s of CPU)."""
    if hasattr(config, "workerinput") or os.environ.get(WARM_LOCK) or config.option.collectonly:
        return
    stamp = _stamp_path(config.rootpath)
    if stamp.exists() and stamp.read_text() == _cache_stamp(config.rootpath):
        return
    fd, path = tempfile.mkstemp(prefix="dedup-warm-", suffix=".lock")
    fcntl.flock(fd, fcntl.LOCK_EX)
    # the child holds the lock through the inherited descriptor: released when it exits, however it exits
    config.stash[_WARM] = subprocess.Popen([sys.executable, "-m", "tests.harness.warm"], cwd=config.rootpath,
                                           pass_fds=(fd,), stdout=subprocess.DEVNULL)
    SESSION_PROCESSES.add(config.stash[_WARM].pid)
    os.close(fd)
    os.environ[WARM_LOCK] = path


def pytest_unconfigure(config: pytest.Config) -> None:
    warm = config.stash.get(_WARM, None)
    if warm is not None:
        warm.terminate()  # when the run ended first (numba writes each cache file whole, or not at all)
        if warm.wait() == 0:  # complete: the kernels the tests compiled since count too
            stamp = _stamp_path(config.rootpath)
            stamp.parent.mkdir(exist_ok=True)
            stamp.write_text(_cache_stamp(config.rootpath))
        os.unlink(os.environ.pop(WARM_LOCK))


@pytest.fixture(scope="session", autouse=True)
def numba_cache_warm() -> None:
    """Wait for the warm-up (a kernel it has not saved yet would be compiled by every process at once)."""
    path = os.environ.get(WARM_LOCK)
    if path:
        with open(path) as lock:
            fcntl.flock(lock, fcntl.LOCK_SH)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's loadscope scheduling with a scope per test, except one per ONE_PROCESS module. (Its
    ``--dist loadgroup`` cannot group with pytest 9.2, whose node ids no longer take xdist's group suffix.)
    A process is given more work once two or fewer of its tests are pending, so a long test waits
    behind at most two others."""
    from xdist.scheduler import LoadScopeScheduling

    class PerTest(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in ONE_PROCESS else nodeid

    return PerTest(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        if item.get_closest_marker("integration") is None:
            return len(LONG_FIRST) + 1
        name = item.path.stem
        return LONG_FIRST.index(name) if name in LONG_FIRST else len(LONG_FIRST)

    items.sort(key=rank)  # stable: the order inside each rank stays


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
