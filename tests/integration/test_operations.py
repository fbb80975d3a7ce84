"""The operator's commands and endpoints against a real broker and worker: publish and dlq errors,
the verdicts views, /ready and the metrics of a live worker."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from stream.service.runtime.app import ready_pid
from tests.harness import Deployment, listen_port

pytestmark = pytest.mark.integration


def dedup(deployment: Deployment, *args: str, env: dict[str, str] | None = None, stdin: Any = subprocess.DEVNULL,
          timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stream", *args], capture_output=True, text=True, timeout=timeout,
                          env={**deployment.env(), **(env or {})}, stdin=stdin)


def error_line(result: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_publish_refuses_plain_text_and_writes_codes_of_rejected_lines(deployment: Deployment, tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("Dear operator,\nthis file is prose, not JSON lines.\n\nIt has four lines.\n")
    error_line(dedup(deployment, "publish", str(text)), 2, "notes.txt is not JSONL", '{"id": "a1", "text": "..."}',
               "nothing was published")
    assert deployment.read_raw(deployment.documents, timeout=5) == []
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text('{"id": "a", "text": "one"}\n{not json\n{"text": "no id"}\n{"id": "b", "text": "two"}\n')
    errors = tmp_path / "errors.jsonl"
    result = dedup(deployment, "publish", str(mixed), "--errors", str(errors))
    assert result.returncode == 1 and "published 2 documents" in result.stderr, result.stderr
    lines = [json.loads(line) for line in errors.read_text().splitlines()]
    assert [(e["line"], e["code"]) for e in lines] == [(2, "not_json"), (3, "bad_id")]  # as scan --errors writes
    assert all(e["error"] for e in lines)


def test_dlq_selectors_that_cannot_select_anything_are_errors(deployment: Deployment) -> None:
    error_line(dedup(deployment, "dlq", "replay", "--reason", "bogus_code"), 2, "--reason bogus_code",
               "not a dead-letter code")
    error_line(dedup(deployment, "dlq", "list", "--since", "9:0"), 2, "no partition 9", "partitions 0-3")
    for ok in (("dlq", "list", "--reason", "not_json"), ("dlq", "list", "--reason", "probe_failed"),
               ("dlq", "list", "--since", "3:0")):
        result = dedup(deployment, *ok)
        assert result.returncode == 0 and "0 dead letters" in result.stderr, (ok, result.stderr)


def _records(deployment: Deployment) -> list[tuple[bytes, bytes | None]]:
    """(key, value) of every record of the verdict topic."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(deployment.verdicts, bootstrap_servers=deployment.broker.bootstrap,
                             auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=2000)
    try:
        return [(m.key, m.value) for m in consumer]
    finally:
        consumer.close()


def _tsv(result: subprocess.CompletedProcess[str]) -> list[dict[str, str]]:
    lines = result.stdout.splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]


def _sigint_ignored() -> None:
    """What a command started with ``nohup ... &`` by a non-interactive shell inherits (the full suite run
    that way once saw --follow ignore SIGINT): --follow must stop on it all the same."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_verdicts_current_answer_filters_and_follow(deployment: Deployment, corpus: list[dict[str, Any]]) -> None:
    docs = corpus[:60]
    deployment.start_worker("w")
    deployment.publish(docs)
    table = deployment.final_table(len(docs))
    gone = next(doc_id for doc_id, v in table.items() if v["verdict"] == "unique")
    deployment.publish([{"id": gone, "op": "delete"}])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and all(v is not None for _, v in _records(deployment)):
        time.sleep(1)
    records = _records(deployment)
    assert (gone.encode(), None) in records, "the deletion's tombstone never came"

    current = dedup(deployment, "verdicts")
    assert current.returncode == 0, current.stderr
    rows = _tsv(current)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)) == len(docs) - 1 and gone not in ids  # one row per id, the deleted one left out
    assert f"{len(docs) - 1} documents:" in current.stderr and "1 deleted" in current.stderr
    assert "{" not in current.stderr  # a summary for a person
    every = dedup(deployment, "verdicts", "--all")
    assert len(_tsv(every)) == len(records)  # first verdicts, revisions, the tombstone
    assert [r["id"] for r in _tsv(dedup(deployment, "verdicts", "--verdict", "deleted"))] == [gone]
    near = _tsv(dedup(deployment, "verdicts", "--verdict", "near_duplicate", "--verdict", "duplicate"))
    assert near and {r["verdict"] for r in near} <= {"near_duplicate", "duplicate"}
    assert len(near) == sum(v["verdict"] in ("near_duplicate", "duplicate") for k, v in table.items() if k != gone)
    one = dedup(deployment, "verdicts", "--json", "--id", ids[0])
    assert [json.loads(line)["id"] for line in one.stdout.splitlines()] == [ids[0]]
    assert json.loads(one.stderr)["documents"] == 1  # --json: the summary is JSON too
    assert len(_tsv(dedup(deployment, "verdicts", "--since", "1h"))) == len(docs) - 1

    follow = subprocess.Popen([sys.executable, "-m", "stream", "verdicts", "--follow", "--json"],
                              env=deployment.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              preexec_fn=_sigint_ignored)
    try:
        time.sleep(8)  # started, at the end of the topic
        fresh = [{"id": "fresh-1", "text": "一段全新的文字，从未在这里出现过。" * 4, "ts": 1},
                 {"id": "fresh-2", "text": "另一段同样全新的文字，与前面的没有关系。" * 4, "ts": 2}]
        deployment.publish(fresh)
        deadline = time.monotonic() + 60
        seen: list[str] = []
        assert follow.stdout is not None
        os.set_blocking(follow.stdout.fileno(), False)
        while time.monotonic() < deadline and len(seen) < 2:
            line = follow.stdout.readline()
            if line:
                seen.append(json.loads(line)["id"])
            else:
                time.sleep(0.2)
    finally:
        follow.send_signal(signal.SIGINT)
        try:
            _, err = follow.communicate(timeout=30)
        finally:
            follow.kill()  # never left running for the tests after this one
    assert sorted(seen) == ["fresh-1", "fresh-2"], (seen, err)  # only what arrived after the start
    assert follow.returncode == 0 and json.loads(err.strip().splitlines()[-1])["documents"] == 2


def _get(url: str, token: str | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return 0, str(exc)


def _metric(text: str, name: str) -> float:
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name))


def test_a_live_worker_s_endpoints_metrics_and_ready_state(deployment: Deployment, corpus: list[dict[str, Any]],
                                                           tmp_path: Path) -> None:
    port, token = listen_port(), "t0ken"
    data = deployment.tmp / "w-0"
    worker = deployment.start_worker("w", data=data, env={"DEDUP_METRICS_PORT": str(port),
                                                          "DEDUP_METRICS_TOKEN": token})
    deployment.wait_ready(data)
    url = f"http://127.0.0.1:{port}"
    assert _get(f"{url}/ready")[0] == 401
    code, body = _get(f"{url}/ready", token)
    assert code == 200 and json.loads(body)["reasons"] == []

    # the same metrics port for a second worker: one line, exit 2, not "internal error" (70)
    busy = dedup(deployment, "worker", "--data-dir", str(tmp_path / "second"),
                 env={"DEDUP_METRICS_PORT": str(port)})
    error_line(busy, 2, f"metrics port 127.0.0.1:{port} is already in use", "--metrics-port")

    docs = corpus[:80]
    deployment.publish(docs)
    table = deployment.final_table(len(docs))
    metrics = _get(f"{url}/metrics", token)[1]
    # one per document, by its first verdict; revisions apart (the old counter summed both)
    assert _metric(metrics, "dedup_documents_judged_total{") == len(docs)
    records = _metric(metrics, "dedup_verdicts_total{")
    assert records == len(docs) + _metric(metrics, "dedup_verdicts_revised_total{")
    assert _metric(metrics, 'dedup_documents_judged_total{verdict="unique"}') >= sum(
        v["verdict"] == "unique" for v in table.values())  # a revision only ever turns unique into a duplicate
    assert 'dedup_consumer_lag{partition="0",stage="documents"' in metrics
    deadline = time.monotonic() + 20  # every document answered: the lag drains to 0 (set every 2 s)
    while _metric(metrics, 'dedup_consumer_lag{') != 0 and time.monotonic() < deadline:
        time.sleep(1)
        metrics = _get(f"{url}/metrics", token)[1]
    lags = [line for line in metrics.splitlines() if line.startswith("dedup_consumer_lag{")]
    assert len(lags) >= 4 and _metric(metrics, 'dedup_consumer_lag{') == 0, lags  # 4 documents partitions
    assert _metric(metrics, "dedup_ready ") == 1.0

    broker = deployment.broker.proc.pid
    os.kill(broker, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + 30
        code, body = _get(f"{url}/ready", token)
        while code == 200 and time.monotonic() < deadline:
            time.sleep(1)
            code, body = _get(f"{url}/ready", token)
        reasons = json.loads(body)["reasons"]
        assert code == 503 and reasons and "broker" in reasons[0], body
    finally:
        os.kill(broker, signal.SIGCONT)
    deadline = time.monotonic() + 60
    while _get(f"{url}/ready", token)[0] != 200 and time.monotonic() < deadline:
        time.sleep(1)
    assert _get(f"{url}/ready", token)[0] == 200

    assert ready_pid(data) == worker.pid
    os.kill(worker.pid, signal.SIGSTOP)
    try:
        time.sleep(0.5)
        assert ready_pid(data) is None  # a stopped worker's READY file does not count
    finally:
        os.kill(worker.pid, signal.SIGCONT)
    log = (deployment.tmp / "w.log").read_text()
    assert "BrokenPipeError" not in log and "Traceback" not in log
