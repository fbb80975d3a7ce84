"""The scenarios of ``python -m benchmarks reliability`` (README, "Faults"): each runs on its own embedded broker
with real worker processes, and returns what became of every input record (``Deployment.outcomes``)
and how its final verdict table compares with the uninterrupted answer."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import reliability_backlog as backlog
from benchmarks import reliability_versions as versions
from benchmarks.poison import bad_messages, kind_of
from benchmarks.reliability_run import Publishable, Run, encode, finish
from benchmarks.tang import near_copy
from stream.service.runtime.embedded import free_port
from tests.harness import (
    Deployment,
    Row,
    Supervisor,
    VerdictWatch,
    disk_bytes,
    http_status,
    load,
    metric,
    publish,
    raw_values,
    reference,
    row,
    settled_table,
)


def fuzzed(run: Run) -> dict[str, Any]:
    """Fuzzed bad messages (poison.py) at random places among good documents, one worker."""
    good = run.docs(run.scale.fuzz_good)
    expected = run.expected(len(good))
    bad = bad_messages(run.scale.fuzz_bad)
    stream: list[Publishable] = [encode(doc) for doc in good]
    rng = random.Random(3)
    for _kind, key, value in bad:
        stream.insert(rng.randrange(len(stream) + 1), (key, value))
    with run.deployment("fuzz") as d:
        worker = d.start_worker("w", env=run.worker_env)
        publish(d, stream)
        out = finish(run, d, good, len(stream), expected)
        dead = d.read(d.dlq, timeout=30)
        codes: dict[str, Counter[str]] = {}
        for letter in dead:
            key = letter.get("key") if letter.get("key_encoding", "utf-8") == "utf-8" else None
            codes.setdefault(kind_of(key), Counter())[letter["code"]] += 1
        table = out.pop("table")
        accepted = Counter(kind_of(k) for k in table if k.startswith("bad-"))
        out.update(bad_messages=len(bad), bad_bytes=sum(len(v or b"") for _, _, v in bad),
                   dead_letter_codes={k: dict(c) for k, c in sorted(codes.items())},
                   bad_with_a_verdict=dict(accepted), worker_alive=worker.poll() is None,
                   largest_dead_letter=max((len(json.dumps(x)) for x in dead), default=0))
    return out


def sigkill(run: Run) -> dict[str, Any]:
    """A backlog judged by a worker SIGKILLed at each ``kill_at`` fraction and restarted on its data dir."""
    docs = run.docs(run.scale.sigkill_docs)
    expected = run.expected(len(docs))
    with run.deployment("sigkill") as d:
        data = d.tmp / "data"
        publish(d, [encode(doc) for doc in docs])
        watch = VerdictWatch(d)
        kills = []
        worker = d.start_worker("w0", data=data, env=run.worker_env)
        for i, fraction in enumerate(run.scale.kill_at, start=1):
            watch.wait_for(int(fraction * len(docs)), run.scale.timeout)
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait()
            kills.append({"ids_with_a_verdict": watch.count()})
            run.echo(f"  SIGKILL with {kills[-1]['ids_with_a_verdict']:,} of {len(docs):,} documents judged")
            name = f"w{i}" if i < len(run.scale.kill_at) else "last"
            worker = d.restart_after_kill(name, data, env=run.worker_env, ready_within=run.scale.timeout)
        watch.close()
        out = finish(run, d, docs, len(docs), expected)
        out.pop("table")
        out.update(kills=kills, verdict_records=len(raw_values(d, d.verdicts)))
    return out


def full_disk(run: Run) -> dict[str, Any]:
    """A worker whose data dir is on a small tmpfs: it must exit 75; restarted with space, it answers
    every document."""
    docs = run.docs(run.scale.disk_docs)
    expected = run.expected(len(docs))
    with run.deployment("full-disk") as d:
        mount = d.tmp / "mnt"
        mount.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={run.scale.disk_size}", "tmpfs", str(mount)],
                              capture_output=True, text=True)
        if done.returncode:
            return {"skipped": f"this machine does not allow mount ({done.stderr.strip()})"}
        try:
            return _fill_and_free(run, d, mount, docs, expected)
        finally:
            d.stop()
            subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill_and_free(run: Run, d: Deployment, mount: Path, docs: list[dict[str, Any]],
                   expected: dict[str, Row]) -> dict[str, Any]:
    data = mount / "data"
    publish(d, [encode(doc) for doc in docs])
    watch = VerdictWatch(d)
    worker = d.start_worker("full", data=data, env=run.worker_env)
    worker.may_fail = True  # type: ignore[attr-defined]
    started = time.monotonic()
    try:
        code: int | None = worker.wait(run.scale.timeout)
    except subprocess.TimeoutExpired:
        code = None
        worker.kill()
        worker.wait()
    exit_s = time.monotonic() - started
    judged = watch.count()
    log = (d.tmp / "full.log").read_text(errors="replace").splitlines()
    cause = [ln for ln in log if "No space left" in ln or "StorageError" in ln]
    run.echo(f"  full disk: exit {code} after {exit_s:.0f} s, {judged:,} documents judged")
    subprocess.run(["mount", "-o", "remount,size=4g", str(mount)], check=True)
    d.start_worker("roomy", data=data, env=run.worker_env)
    watch.close()
    out = finish(run, d, docs, len(docs), expected)
    out.pop("table")
    out.update(disk=run.scale.disk_size, exit_code=code, exit_after_s=round(exit_s, 1), judged_before_exit=judged,
               cause_line=(cause[0][:300] if cause else None), log_lines_full_worker=len(log),
               restart_said_unclean="did not stop cleanly" in (d.tmp / "roomy.log").read_text(errors="replace"),
               state_bytes_after=disk_bytes([data]))
    return out


def broker_pause(run: Run, seconds: float | None = None, name: str = "broker-pause") -> dict[str, Any]:
    """The broker SIGSTOPped for ``seconds`` (default ``pause_seconds``) while a worker works through a
    backlog, then SIGCONT. The worker runs under a supervisor that restarts it on exit 75 or 4; within
    ``task_timeout`` there should be none (the exits are reported)."""
    seconds = run.scale.pause_seconds if seconds is None else seconds
    docs = run.docs(run.scale.pause_docs)
    expected = run.expected(len(docs))
    with run.deployment(name) as d:
        port = free_port()
        data = d.tmp / "data"
        env = {**run.worker_env, "DEDUP_METRICS_PORT": str(port), "DEDUP_LOG_LEVEL": "info"}
        supervisor = Supervisor(d, "w", data, env)
        supervisor.start()
        try:
            d.wait_ready(data, run.scale.timeout)
            publish(d, [encode(doc) for doc in docs])
            watch = VerdictWatch(d)
            watch.wait_for(len(docs) // 4, run.scale.timeout)
            outage = _pause_broker(d, port, seconds)
            at_resume = watch.count()
            while (watch.count() == at_resume and supervisor.is_alive()
                   and time.monotonic() - outage["resumed"] < run.scale.timeout):
                time.sleep(0.2)
            first_after = time.monotonic() - outage.pop("resumed")
            watch.close()
            out = finish(run, d, docs, len(docs), expected)
        finally:
            supervisor.stop()
        out.pop("table")
        out.update(pause_s=seconds, judged_at_pause=at_resume, **outage,
                   worker_exits=supervisor.exits, health_after=http_status(f"http://127.0.0.1:{port}/health")[0],
                   first_verdict_after_resume_s=round(first_after, 1))
    return out


def broker_outage(run: Run) -> dict[str, Any]:
    """``broker_pause`` for ``outage_seconds`` (4 minutes: within the default ``task_timeout``)."""
    return broker_pause(run, run.scale.outage_seconds, "broker-outage")


def _pause_broker(d: Deployment, port: int, seconds: float) -> dict[str, Any]:
    """SIGSTOP the broker for ``seconds``; the worker log lines written meanwhile, /health near its end."""
    log = d.tmp / "w.log"
    before = len(log.read_text(errors="replace").splitlines())
    broker = d.broker.proc.pid
    os.kill(broker, signal.SIGSTOP)
    try:
        time.sleep(max(0.0, seconds - 3))
        health = http_status(f"http://127.0.0.1:{port}/health")
        time.sleep(min(3.0, seconds))
    finally:
        os.kill(broker, signal.SIGCONT)
    resumed = time.monotonic()
    during = log.read_text(errors="replace").splitlines()[before:]
    return {"resumed": resumed, "log_lines_during": len(during),
            "log_levels_during": dict(Counter(_level(ln) for ln in during)),
            "log_during": [ln[:300] for ln in during if _level(ln) in ("WARNING", "ERROR", "CRITICAL")][:20],
            "health_during": health}


def _level(line: str) -> str:
    return next((w for w in ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG") if w in line), "other")


def copies(run: Run) -> dict[str, Any]:
    """Identical copies of one poem, arriving out of canonical order (their ts a permutation)."""
    n = run.scale.copies
    poem = max(run.poems[:2000], key=lambda p: len(p["text"]) if len(p["text"]) < 200 else 0)
    docs = [{**poem, "id": f"copy-{i:05d}", "ts": float((i * 7919) % n)} for i in range(n)]
    expected = reference(docs)
    with run.deployment("copies") as d:
        d.start_worker("w", env=run.worker_env)
        publish(d, [encode(doc) for doc in docs])
        out = finish(run, d, docs, len(docs), expected)
        port = d.metrics_ports["w"]
        out.update(revision_entries=metric(port, "dedup_revision_entries_total"),
                   revised_pairs=metric(port, "dedup_revisions_sent_total"))
        table = out.pop("table")
        records = [v for _, v in raw_values(d, d.verdicts) if v is not None]
        parsed = [json.loads(v) for v in records]
        order = sorted((doc["ts"], doc["id"]) for doc in docs)
        rank = {doc_id: i for i, (_, doc_id) in enumerate(order)}
        right = sum(table[doc["id"]]["match_count"] == rank[doc["id"]] for doc in docs)
        out.update(verdict_records=len(records), revisions=sum(bool(v.get("revised")) for v in parsed),
                   largest_verdict_bytes=max(map(len, records)), match_count_right=right,
                   most_matches_listed=max(len(v["matches"]) for v in parsed), text_chars=len(poem["text"]))
    return out


def deliveries(run: Run) -> dict[str, Any]:
    """One id delivered ``deliveries`` times within a second (each delivery a new version: another
    poem; the last a near copy of an earlier document), after ``background`` documents."""
    background = run.docs(run.scale.background)
    others = run.poems[run.scale.background:run.scale.background + run.scale.deliveries - 1]
    ts = float(len(background) + 10)
    versions = [{**p, "id": "hot", "ts": ts} for p in others]
    versions.append(near_copy(background[7], "hot", ts))
    expected = reference([*background, versions[-1]])
    with run.deployment("deliveries") as d:
        d.start_worker("w", env=run.worker_env)
        publish(d, [encode(doc) for doc in background])
        settled_table(d, [doc["id"] for doc in background], run.scale.timeout, settle=1.0)
        publish_s = publish(d, [encode(doc) for doc in versions])
        out = finish(run, d, [*background, versions[-1]], len(background) + len(versions), expected)
        hot = out.pop("table")["hot"]
        hot_records = [v for k, v in raw_values(d, d.verdicts) if k == b"hot" and v is not None]
        out.update(deliveries=len(versions), published_in_s=round(publish_s, 4), verdict_records_for_the_id=len(
            hot_records), final_verdict=row(hot))
    return out


SCENARIOS: dict[str, Callable[[Run], dict[str, Any]]] = {
    "fuzz": fuzzed, "sigkill": sigkill, "full-disk": full_disk, "broker-pause": broker_pause,
    "broker-outage": broker_outage, "backlog": backlog.backlog,
    "copies": copies, "deliveries": deliveries, **versions.SCENARIOS,
}


def timed(run: Run, name: str) -> dict[str, Any]:
    """One scenario with its wall time and the machine's load; a failure is recorded, not raised."""
    started, before = time.perf_counter(), load()
    try:
        out = SCENARIOS[name](run)
    except Exception as exc:  # a scenario that breaks is a finding: keep it and go on with the others
        out = {"error": f"{type(exc).__name__}: {exc}"[:4000]}
    return {"scenario": name, **out, "seconds": round(time.perf_counter() - started, 1), "load_before": before,
            "load_after": load()}
