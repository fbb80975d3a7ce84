"""`dedup dlq list | replay` against a real broker and a real worker: the worker's own dead letters, and
letters whose cause an operator has fixed (valid originals, written with the worker's envelope)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest

from stream.service.stages.messages import Source, dead_letter
from tests.harness import Deployment

pytestmark = pytest.mark.integration

BAD = [(b"bad-json", b"{not json"), (b"no-id", b'{"text": "a document without its id"}'),
       (b"\xff\xfe", b"\xff\xfe\x00binary")]


def dlq(deployment: Deployment, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stream", "dlq", *args], env=deployment.env(),
                          capture_output=True, text=True, timeout=120)


def listed(deployment: Deployment, *args: str) -> dict[str, dict[str, Any]]:
    """``dlq list --json``: letter name -> record."""
    result = dlq(deployment, "list", "--json", *args)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    return {f"{r['letter']['partition']}:{r['letter']['offset']}": r for r in records}


def replay(deployment: Deployment, *args: str, code: int = 0) -> str:
    result = dlq(deployment, "replay", *args)
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr + result.stdout


def produce(deployment: Deployment, topic: str, records: list[tuple[bytes | None, bytes | None]],
            headers: list[tuple[str, bytes]] | None = None) -> list[int]:
    """Records to partition 0 of ``topic``; their offsets."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=deployment.broker.bootstrap, max_request_size=8 << 20)
    futures = [producer.send(topic, key=k, value=v, partition=0, headers=headers or []) for k, v in records]
    producer.flush()
    offsets = [f.get(timeout=30).offset for f in futures]
    producer.close()
    return offsets


def verdicts_for(deployment: Deployment, ids: set[str], timeout: float = 90.0) -> dict[str, list[dict[str, Any]]]:
    records = deployment.read(deployment.verdicts, until=lambda r: ids <= {v["id"] for v in r}, timeout=timeout)
    out: dict[str, list[dict[str, Any]]] = {}
    for v in records:
        out.setdefault(v["id"], []).append(v)
    assert ids <= set(out), f"no verdict for {ids - set(out)}\n{deployment.log_digest()}"
    return out


def test_the_workers_letters_are_listed_and_a_replay_that_fails_again_is_not_replayed_twice(
        deployment: Deployment, corpus: list[dict[str, Any]]) -> None:
    deployment.start_worker("w")
    deployment.publish([*corpus[:20], *BAD])
    deployment.read(deployment.dlq, until=lambda r: len(r) >= len(BAD), timeout=60)
    result = dlq(deployment, "list")  # piped: a header line, then tab-separated rows
    assert result.returncode == 0, result.stderr
    header, *rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert header == ["letter", "code", "stage", "source", "replayed", "preview"]
    assert sorted(r[1] for r in rows) == ["bad_id", "not_json", "not_utf8"]
    assert all(r[2] == "parse" and r[3].startswith(f"{deployment.documents}[") and r[4] == "" for r in rows)
    assert {r[5] for r in rows} >= {"{not json", '{"text": "a document without its id"}'}
    assert f"3 dead letters on {deployment.dlq} (0 replayed or from a replay): bad_id 1, not_json 1, not_utf8 1" \
        in result.stderr
    (name,) = listed(deployment, "--reason", "not_json")

    # the cause is not fixed: the replayed original is dead-lettered again, and that letter is known as
    # the dead letter of a replay, so a second replay sends nothing
    assert "replayed 1 dead letters" in replay(deployment, "--reason", "not_json")
    deployment.read(deployment.dlq, until=lambda r: len(r) >= len(BAD) + 1, timeout=60)
    letters = listed(deployment, "--reason", "not_json")
    assert letters[name]["replayed"]["count"] == 1
    (back,) = set(letters) - {name}
    assert letters[back]["replay_of"] == name
    assert letters[back]["source"]["offset"] == letters[name]["replayed"]["to"]["offset"]
    out = replay(deployment, "--reason", "not_json")
    assert "replayed 0 dead letters" in out and "1 skipped as already replayed" in out
    assert "1 skipped as dead letters of a replay" in out
    assert deployment.outcomes()["unaccounted"] == 0


def test_fixed_letters_are_replayed_once_selected_by_code_and_offset_cut_ones_from_their_source(
        deployment: Deployment, corpus: list[dict[str, Any]]) -> None:
    deployment.start_worker("w")
    deployment.publish(corpus[:20])
    # a document too long for its letter: the letter keeps a preview, the original stays on an input topic
    archive = f"{deployment.app_id}.archive"
    big = {"id": "big", "text": " ".join(f"word{i}" for i in range(70_000))}
    big_raw = json.dumps(big).encode()
    (big_offset,) = produce(deployment, archive, [(b"big", big_raw)])
    fixed = {f"f{i}": {"id": f"f{i}", "text": corpus[i]["text"]} for i in range(3)}  # copies of judged documents

    def letter(doc_id: str, raw: bytes, source: Source) -> tuple[bytes, bytes]:
        return doc_id.encode(), dead_letter("fingerprint_failed", "RuntimeError: a bug since fixed", "fingerprint",
                                            source, doc_id.encode(), raw)

    src = Source(deployment.documents, 0, 10_000, time.time())
    letters = [letter(doc_id, json.dumps(doc, ensure_ascii=False).encode(), src) for doc_id, doc in fixed.items()]
    letters.append(letter("big", big_raw, Source(archive, 0, big_offset, time.time())))
    letters.append(letter("gone", big_raw, Source(archive, 0, big_offset + 50, time.time())))  # no such record
    offsets = produce(deployment, deployment.dlq, letters, [("dedup-code", b"fingerprint_failed")])
    name = {key.decode(): f"0:{offset}" for (key, _), offset in zip(letters, offsets, strict=True)}
    assert listed(deployment)[name["big"]]["value_truncated"]

    since = ("--reason", "fingerprint_failed", "--since", name["f1"])
    out = replay(deployment, *since, "--dry-run", code=1)  # 1: "gone" cannot be replayed
    assert [line.split("\t")[0] for line in out.splitlines() if line.startswith("0:")] == \
        [name["f1"], name["f2"], name["big"]]
    assert f"letter {name['gone']} (fingerprint_failed" in out and "is no longer there" in out
    assert not any(r["replayed"] for r in listed(deployment).values())  # a dry run writes nothing

    out = replay(deployment, *since, code=1)
    assert "replayed 3 dead letters" in out and "1 not replayable" in out
    judged = verdicts_for(deployment, {"f1", "f2", "big"})
    assert judged["f1"][0]["verdict"] == "duplicate" and judged["f1"][0]["canonical"] == corpus[1]["id"]
    assert judged["big"][0]["source"]["topic"] == deployment.documents  # the whole original, re-read
    assert "f0" not in {v["id"] for v in deployment.read(deployment.verdicts, timeout=10)}  # before --since

    out = replay(deployment, "--reason", "fingerprint_failed", code=1)
    assert "replayed 1 dead letters" in out and "3 skipped as already replayed" in out
    verdicts_for(deployment, {"f0"})
    out = replay(deployment, "--reason", "fingerprint_failed", code=1)  # nothing left but the unreplayable one
    assert "replayed 0 dead letters" in out and "4 skipped as already replayed" in out
    assert "replayed 0 dead letters" in replay(deployment, "--reason", "bad_id")  # no such letters: nothing

    out = replay(deployment, "--again", "--reason", "fingerprint_failed", "--since", name["f2"], code=1)
    assert "replayed 2 dead letters" in out
    state = listed(deployment, "--reason", "fingerprint_failed")
    assert {n: (r["replayed"] or {}).get("count") for n, r in state.items()} == \
        {name["f0"]: 1, name["f1"]: 1, name["f2"]: 2, name["big"]: 2, name["gone"]: None}
    again = verdicts_for(deployment, {"f2"})["f2"]
    assert len(again) >= 2 and {v["verdict"] for v in again} == {"duplicate"}  # same document, same verdict


def test_copies_of_a_letter_replay_their_input_record_once(deployment: Deployment) -> None:
    # a record processed again (after a crash or a re-read) is dead-lettered again: its letters are copies
    def letter(doc_id: str, offset: int, error: str = "RuntimeError: a bug since fixed") -> tuple[bytes, bytes]:
        raw = json.dumps({"id": doc_id, "text": f"the text of {doc_id}"}).encode()
        src = Source(deployment.documents, 0, offset, time.time())
        return doc_id.encode(), dead_letter("fingerprint_failed", error, "fingerprint", src, doc_id.encode(), raw)

    letters = [letter("r1", 500), letter("r1", 500, "RuntimeError: again"), letter("r2", 501),
               letter("r3", 502), letter("r3", 502)]
    a1, b1, _, a3, b3 = (f"0:{offset}" for offset in produce(deployment, deployment.dlq, letters))

    def replayed_keys() -> list[bytes | None]:
        return sorted(key for _, _, key in deployment.read_raw(deployment.documents, timeout=10))

    result = dlq(deployment, "list")
    assert "5 dead letters" in result.stderr and "2 copies of another letter's input record" in result.stderr
    assert "replayed 1 dead letters" in replay(deployment, "--since", b3)  # the later copy of r3
    out = replay(deployment)
    assert "replayed 2 dead letters" in out and "1 skipped as already replayed" in out
    assert "2 skipped as copies of another letter of the same input record" in out  # b1, and a3 (r3 went)
    assert replayed_keys() == [b"r1", b"r2", b"r3"]
    state = listed(deployment)
    assert [n for n in (a1, b1, a3, b3) if state[n]["replayed"]] == [a1, b3]

    out = replay(deployment, "--again")  # again: still once per input record
    assert "replayed 3 dead letters" in out and "2 skipped as copies" in out
    assert replayed_keys() == [b"r1", b"r1", b"r2", b"r2", b"r3", b"r3"]
