"""What the scenarios of ``python -m benchmarks reliability`` share: their sizes, the run (poems, the
uninterrupted answer, a deployment per scenario) and the closing accounting."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.tang import poem_stream
from stream.service.runtime.embedded import EmbeddedBroker
from tests.harness import Deployment, Row, accounted, compare, reference, settled_table

Publishable = tuple[bytes | None, bytes | None]


@dataclass(frozen=True)
class Scale:
    fuzz_bad: int
    fuzz_good: int
    sigkill_docs: int
    kill_at: tuple[float, ...]  # fractions of the documents judged when a worker is SIGKILLed
    disk_docs: int
    disk_size: str  # the tmpfs the first worker runs on
    pause_docs: int
    pause_seconds: float
    copies: int
    deliveries: int
    background: int  # documents judged before the repeated deliveries of one id
    timeout: float  # seconds any one wait may take
    two_key_ids: int = 300  # ids sent twice, the older version under another key
    outage_seconds: float = 240.0  # the broker SIGSTOPped this long: within the default task_timeout (5 min)
    backlog_docs: int = 250_000  # published before the worker starts
    backlog_seconds: float | None = None  # judging stops after this long (a memory figure within a time budget)


SIZES = {
    "full": Scale(10_000, 2_000, 50_000, (0.3, 0.7), 20_000, "3m", 20_000, 45.0, 1_000, 300, 500, 1200.0),
    "small": Scale(1_000, 200, 3_000, (0.3, 0.7), 2_000, "1m", 2_000, 15.0, 200, 300, 100, 300.0,
                   outage_seconds=40.0, backlog_docs=5_000),
}


@dataclass
class Run:
    """What the scenarios share: the poems, the uninterrupted answer, a temp dir, worker settings."""

    poems: list[dict[str, Any]]
    scale: Scale
    tmp: Path
    echo: Callable[[str], None]
    worker_env: dict[str, str] = field(default_factory=lambda: {"DEDUP_BATCH_SIZE": "256"})
    _expected: dict[str, Row] = field(default_factory=dict)
    _expected_n: int = 0

    def docs(self, n: int) -> list[dict[str, Any]]:
        return poem_stream(self.poems, n)

    def expected(self, n: int) -> dict[str, Row]:
        """The uninterrupted answer for ``docs(n)``: ``reference`` (one process, same core and settings).
        A verdict depends only on canonically earlier documents, so the answer for the longest stream
        asked for holds for every prefix of it."""
        if n > self._expected_n:
            started = time.perf_counter()
            self._expected, self._expected_n = reference(self.docs(n)), n
            self.echo(f"  uninterrupted answer for {n:,} documents: {time.perf_counter() - started:.0f} s")
        ids = [d["id"] for d in self.docs(n)]
        return {i: self._expected[i] for i in ids}

    @contextmanager
    def deployment(self, name: str) -> Iterator[Deployment]:
        tmp = self.tmp / name
        tmp.mkdir(parents=True, exist_ok=True)
        with EmbeddedBroker(log_path=tmp / "tansu.log") as broker, Deployment.running(broker, tmp) as d:
            yield d


def encode(doc: dict[str, Any]) -> Publishable:
    return doc["id"].encode(), json.dumps(doc, ensure_ascii=False).encode()


def finish(run: Run, d: Deployment, docs: list[dict[str, Any]], inputs: int, expected: dict[str, Row]
            ) -> dict[str, Any]:
    table = settled_table(d, [doc["id"] for doc in docs], run.scale.timeout)
    counts = accounted(d, inputs)
    logs = "".join(p.read_text(errors="replace") for p in d.tmp.glob("*.log") if p.name != "tansu.log")
    compared = compare(table, expected)
    return {**counts, "equal": compared["equal"], "compare": compared, "tracebacks_in_logs": logs.count("Traceback"),
            "table": table}
