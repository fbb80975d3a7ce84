"""`dedup scan --state` killed with SIGKILL mid-run: scanning the same input again gives the verdicts of
a run that never crashed. The state's index is written without RocksDB's write-ahead log (stream/batch/scan_state.py),
so the kill loses its unflushed writes while ``ids/`` keeps its own: the rerun must mend both."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.harness import demo_docs

pytestmark = pytest.mark.integration  # starts processes of its own (see pyproject.toml)

ROUNDS = 3  # copies of the 400 bundled poems: 3 chunks of dedup scan, so a kill after the 1st lands mid-run


def _input(path: Path) -> Path:
    lines = []
    for r in range(ROUNDS):
        for doc in demo_docs():
            # each round a near copy of the last (one character more), under its own id
            lines.append(json.dumps({**doc, "id": f"{doc['id']}~{r}", "text": doc["text"] + "。" * r,
                                     "ts": doc["ts"] + r * 1000}, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _scan(docs: Path, out: Path, state: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "stream", "scan", str(docs), "--out", str(out),
                             "--state", str(state)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _summary(out: Path) -> dict[str, tuple[Any, ...]]:
    rows = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        v = json.loads(line)
        rows[v["id"]] = (v["verdict"], v["canonical"], v["match_count"], tuple(m["id"] for m in v["matches"]))
    return rows


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_a_scan_killed_mid_run_gives_the_uncrashed_verdicts_when_run_again(tmp_path: Path) -> None:
    docs = _input(tmp_path / "docs.jsonl")
    total = ROUNDS * 400
    reference = _scan(docs, tmp_path / "reference.jsonl", tmp_path / "reference-state")
    _, err = reference.communicate(timeout=300)
    assert reference.returncode == 0, err

    state, first = tmp_path / "state", tmp_path / "first.jsonl"
    crashed = _scan(docs, first, state)
    deadline = time.monotonic() + 120
    while _lines(first) < total // 3 and crashed.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(crashed.pid, signal.SIGKILL)
    assert crashed.wait(30) == -signal.SIGKILL  # killed, not finished
    assert 0 < _lines(first) < total

    again = _scan(docs, tmp_path / "again.jsonl", state)
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    expected, got = _summary(tmp_path / "reference.jsonl"), _summary(tmp_path / "again.jsonl")
    assert len(expected) == total and sum(v[0] != "unique" for v in expected.values()) > total // 2
    assert got == expected
