"""``dedup repartition`` on a real broker: a deployment grown from 2 to 4 index partitions half-way
through the corpus gives the reference table, and bad requests get a clear error and exit code."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.harness import Deployment, Row, row, rows

pytestmark = pytest.mark.integration


def repartition(deployment: Deployment, *args: str, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stream", "repartition", *args],
                          env={**deployment.env(), **(env or {})}, capture_output=True, text=True, timeout=300)


def judge_first_half_and_stop(deployment: Deployment, corpus: list[dict[str, Any]]) -> int:
    """The old deployment (2 index partitions, the default) judges the first half and stops cleanly."""
    old = deployment.start_worker("old")
    half = len(corpus) // 2
    deployment.publish(corpus[:half])
    deployment.final_table(half)
    old.terminate()
    assert old.wait(30) == 0
    return half


def test_a_repartitioned_deployment_goes_on_with_the_same_verdicts(deployment: Deployment,
                                                                   corpus: list[dict[str, Any]],
                                                                   expected: dict[str, Row]) -> None:
    half = judge_first_half_and_stop(deployment, corpus)
    new_id = deployment.app_id + "-4"
    run = repartition(deployment, "--from-app-id", deployment.app_id, "--app-id", new_id, "--index-partitions", "4")
    assert run.returncode == 0, run.stderr
    assert f"-> {new_id} (4, 4)" in run.stdout  # 4 partitions (the documents topic's), 4 index partitions
    changelog = deployment.read_raw(f"{new_id}-blocks-changelog")
    assert {partition for partition, _, _ in changelog} == set(range(4))

    first = {d["id"] for d in corpus[:half]}
    before = verdict_counts(deployment, first)
    deployment.start_worker("new", env={"DEDUP_APP_ID": new_id, "DEDUP_INDEX_PARTITIONS": "4"})
    deployment.publish(corpus[half:])
    assert rows(deployment.final_table(len(corpus))) == expected
    # the new deployment went on where the old one's saved input positions say: the documents before
    # them judged once, those after them again (the positions lag by up to a batch and a second). A
    # document judged again republishes its latest verdict, which says revised if the old deployment
    # had revised it, so every verdict counts here; the second half is canonically later than the
    # first (its event times), so none of its documents revises one of the first half.
    positions = ast.literal_eval(re.search(r"documents topic positions (\{.*?\})", run.stdout).group(1))
    assert set(positions) == set(range(4))
    again = {key.decode() for partition, offset, key in deployment.read_raw(deployment.documents)
             if key.decode() in first and offset >= positions[partition]}
    assert set(before) == first > again
    # the final table is complete once every id has a verdict: a first-half document judged again
    # republishes after that, so wait for those records (up to 60 s), then compare
    deadline = time.monotonic() + 60
    while set(republished := verdict_counts(deployment, first) - before) < again and time.monotonic() < deadline:
        time.sleep(1)
    assert set(republished) == again


def verdict_counts(deployment: Deployment, ids: set[str]) -> Counter[str]:
    """How many verdict records (first ones and revisions) each of ``ids`` has on the verdict topic."""
    return Counter(v["id"] for v in map(json.loads, (m.value for m in deployment.to_end(deployment.verdicts)))
                   if v["id"] in ids)


# Texts of the corpus given as new versions to the first ten ids: each matches only old documents whose
# ids keep their version (checked below), so no verdict of a new version depends on the order they are
# judged in, nor on when another id's old version leaves the index.
NEW_TEXTS, NEW_TS = (41, 61, 62, 87, 111, 276, 290, 294, 311, 365), 1_700_001_000


def test_a_new_version_after_a_repartition_is_handled_as_without_one(deployment: Deployment, broker: Any,
                                                                     corpus: list[dict[str, Any]],
                                                                     tmp_path: Path) -> None:
    """2 -> 16 index partitions, then new versions of ten ids: every verdict, the final table and every
    gather state (where each id is indexed, what its round asked) as a deployment with 16 from the start."""
    old_docs = corpus[:40]
    versions = [{"id": old_docs[i]["id"], "text": corpus[j]["text"], "ts": NEW_TS + i} for i, j in enumerate(NEW_TEXTS)]
    with Deployment.running(broker, tmp_path, {"DEDUP_INDEX_PARTITIONS": "16"}) as uninterrupted:
        old = deployment.start_worker("old")
        uninterrupted.start_worker("sixteen")
        for d in (deployment, uninterrupted):
            d.publish(old_docs)
        deployment.final_table(len(old_docs))
        old.terminate()
        assert old.wait(30) == 0
        new_id = deployment.app_id + "-16"
        run = repartition(deployment, "--from-app-id", deployment.app_id, "--app-id", new_id,
                          "--index-partitions", "16")
        assert run.returncode == 0, run.stderr
        # ready before the new versions come, so that their hops are local: a hop over an internal topic in
        # a new group's first seconds was seen never to be read, a fault of its own
        deployment.start_worker("new", data=tmp_path / "new", env={"DEDUP_APP_ID": new_id,
                                                                    "DEDUP_INDEX_PARTITIONS": "16"})
        deployment.wait_ready(tmp_path / "new")
        uninterrupted.final_table(len(old_docs))
        for d in (deployment, uninterrupted):
            d.publish(versions)
        moved, straight = (new_verdicts(d, {v["id"] for v in versions}) for d in (deployment, uninterrupted))
        assert moved == straight
        assert not {m for judged in straight.values() for _, _, ms, _ in judged for m in ms} & set(moved)
        assert rows(deployment.final_table(len(old_docs))) == rows(uninterrupted.final_table(len(old_docs)))
        states = gather_states(deployment, new_id)
        assert states == gather_states(uninterrupted, uninterrupted.app_id)
        assert set(states) == {d["id"] for d in old_docs}
        # a document reaches fewer than 16 partitions now and then: else every placement would be all of them
        assert any(expected < 16 for _, _, expected, _ in states.values())


Judged = tuple[str, str | None, tuple[str, ...], bool]  # verdict, canonical, match ids, revised


def new_verdicts(deployment: Deployment, ids: set[str]) -> dict[str, list[Judged]]:
    """Per id, every verdict record of its new version, once each id has one."""
    records = deployment.read(deployment.verdicts,
                              until=lambda rs: ids <= {r["id"] for r in rs if r["order"][0] >= NEW_TS})
    out: dict[str, list[Judged]] = {}
    for r in records:
        if r["order"][0] >= NEW_TS:
            out.setdefault(r["id"], []).append((*row(r), r["revised"]))
    return out


def gather_states(deployment: Deployment, app_id: str) -> dict[str, tuple[list[int] | None, list[int], int, list[int]]]:
    """Each id's gather state as its changelog ends: (placed, dropping, expected, the partitions that answered)."""
    latest: dict[bytes, bytes | None] = {}
    for record in deployment.to_end(f"{app_id}-gather_state-changelog"):
        if not record.key.startswith(b"\xff"):  # the agent's positions, held revisions
            latest[record.key] = record.value
    states = {key.decode(): json.loads(value) for key, value in latest.items() if value is not None}
    return {doc: (s["placed"], s["dropping"], s["expected"], sorted(s["got"])) for doc, s in states.items()}


def test_more_input_partitions_through_a_new_documents_topic(deployment: Deployment, corpus: list[dict[str, Any]],
                                                            expected: dict[str, Row]) -> None:
    half = judge_first_half_and_stop(deployment, corpus)
    new_id, topic = deployment.app_id + "-8", deployment.documents + "-8"
    run = repartition(deployment, "--from-app-id", deployment.app_id, "--app-id", new_id, "--partitions", "8",
                      "--index-partitions", "3", "--documents-topic", topic)
    assert run.returncode == 0, run.stderr
    assert "documents topic positions none" in run.stdout
    env = {"DEDUP_APP_ID": new_id, "DEDUP_PARTITIONS": "8", "DEDUP_INDEX_PARTITIONS": "3",
           "DEDUP_DOCUMENTS_TOPIC": topic}
    deployment.start_worker("new", env=env)
    publish(deployment, topic, corpus[half:])
    table = deployment.final_table(len(corpus))
    assert rows(table) == expected
    assert {v["source"]["topic"] for k, v in table.items() if k not in {d["id"] for d in corpus[:half]}} == {topic}


def publish(deployment: Deployment, topic: str, docs: list[dict[str, Any]]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=deployment.broker.bootstrap, linger_ms=5)
    for d in docs:
        producer.send(topic, key=d["id"].encode(), value=json.dumps(d, ensure_ascii=False).encode())
    producer.flush()
    producer.close()


def test_bad_requests_get_a_clear_error(deployment: Deployment) -> None:
    from stream.service.runtime.worker_process import apply_topology
    from stream.service.settings import load_settings

    unknown = repartition(deployment, "--from-app-id", "no-such-app", "--app-id", "x", "--index-partitions", "8")
    assert unknown.returncode == 2
    assert "'no-such-app' has no no-such-app-blocks-changelog" in unknown.stderr
    same = repartition(deployment, "--from-app-id", deployment.app_id, "--app-id", "x", "--index-partitions", "2")
    assert same.returncode == 2
    assert "give other counts" in same.stderr
    itself = repartition(deployment, "--from-app-id", deployment.app_id, "--app-id", deployment.app_id,
                         "--index-partitions", "8")
    assert itself.returncode == 2 and "new app id" in itself.stderr
    taken_id = deployment.app_id + "-taken"
    apply_topology(load_settings(env={**deployment.env(), "DEDUP_APP_ID": taken_id}), lambda _m: None)
    taken = repartition(deployment, "--from-app-id", deployment.app_id, "--app-id", taken_id, "--index-partitions", "8")
    assert taken.returncode == 2 and f"app id '{taken_id}' has topics already" in taken.stderr
    grown = repartition(deployment, "--from-app-id", deployment.app_id, "--app-id", "y", "--partitions", "8")
    assert grown.returncode == 2 and "has 4 partitions, not 8" in grown.stderr
    offline = repartition(deployment, "--broker", "kafka://127.0.0.1:1", "--from-app-id", deployment.app_id,
                          "--app-id", "z", "--index-partitions", "8", env={"DEDUP_CONNECT_TIMEOUT": "2"})
    assert offline.returncode == 4, offline.stderr
