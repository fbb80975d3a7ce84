"""``dedup repartition`` on a real broker: a deployment grown from 2 to 4 index partitions half-way
through the corpus gives the reference table, and bad requests get a clear error and exit code."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections import Counter
from typing import Any

import pytest

from tests.harness import Deployment, Row, rows

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
    assert set(verdict_counts(deployment, first) - before) == again


def verdict_counts(deployment: Deployment, ids: set[str]) -> Counter[str]:
    """How many verdict records (first ones and revisions) each of ``ids`` has on the verdict topic."""
    return Counter(v["id"] for v in map(json.loads, (m.value for m in deployment.to_end(deployment.verdicts)))
                   if v["id"] in ids)

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
