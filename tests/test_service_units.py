"""Service logic without a broker: settings, routing, gather state, wire formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stream.detect import Match
from stream.errors import ConfigError
from stream.service.settings import load_settings
from stream.service.stages.gather_state import GatherState
from stream.service.stages.messages import Answer, Header, ProbeItem, Revise, Source, dead_letter, entry_from_json
from stream.service.stages.routing import bucket_partition, doc_partition, tables_by_partition

SRC = Source("documents", 1, 42, 1000.0)


def test_settings_precedence_file_env_overrides(tmp_path: Path) -> None:
    cfg = tmp_path / "dedup.yaml"
    cfg.write_text("broker: kafka://file:1\npartitions: 3\nsecurity:\n  protocol: SASL_SSL\n  sasl_username: u\n")
    s = load_settings(cfg, env={"DEDUP_PARTITIONS": "5", "DEDUP_SASL_PASSWORD": "p"}, batch_size=7)
    assert (s.broker, s.partitions, s.batch_size) == ("kafka://file:1", 5, 7)
    assert s.security.confluent() == {"security.protocol": "SASL_SSL", "sasl.username": "u", "sasl.password": "p"}
    assert s.bootstrap == "file:1"
    assert load_settings(env={"DEDUP_BROKER": "kafka://a:1;kafka://b:2"}).bootstrap == "a:1,b:2"
    assert load_settings(env={}).local_hops is True
    assert load_settings(env={"DEDUP_LOCAL_HOPS": "false"}).local_hops is False
    flag = tmp_path / "hops.yaml"
    flag.write_text("local_hops: no\n")  # YAML's own boolean
    assert load_settings(flag, env={}).local_hops is False
    assert load_settings(env={}).verify_once is True
    assert load_settings(env={"DEDUP_VERIFY_ONCE": "off"}).verify_once is False


def test_settings_errors_name_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("partitons: 3\n")
    with pytest.raises(ConfigError, match="partitons"):
        load_settings(bad, env={})
    with pytest.raises(ConfigError, match="integer"):
        load_settings(env={"DEDUP_PARTITIONS": "many"})
    with pytest.raises(ConfigError, match="local_hops must be true or false"):
        load_settings(env={"DEDUP_LOCAL_HOPS": "sometimes"})


def test_routing_is_stable_and_groups_tables() -> None:
    assert bucket_partition(2, b"\x02\xab\xcd", 8) == bucket_partition(2, b"\x02\xab\xcd", 8)
    assert 0 <= doc_partition("doc-1", 4) < 4
    grouped = tables_by_partition([(0, b"a"), (1, b"a"), (2, b"zz")], 1)
    assert grouped == {0: [0, 1, 2]}


def _match(i: str, ts: float, sim: int = 0) -> Match:
    return Match(i, 2, 0.9, (ts, i), simhash=sim)


def test_gather_completes_after_all_partitions_and_redelivery_is_idempotent() -> None:
    st = GatherState("d")
    assert not st.answer("t:0:1", 0, [_match("a", 1.0)])  # answer before its header: kept for its round
    assert st.expect("t:0:1", 2, (5.0, "d"), SRC, 0xABC, "schema-1") == (False, False)
    assert st.answer("t:0:1", 3, [_match("d", 5.0), _match("b", 9.0)])  # never itself, never a later one
    assert st.summary.count == 1 and st.summary.canonical is not None and st.summary.canonical.id == "a"
    st.published = True
    again = GatherState.from_json(json.loads(json.dumps(st.to_json())))
    assert (again.simhash, again.schema, again.empty) == (0xABC, "schema-1", False)
    assert again.answer("t:0:1", 0, [_match("a", 1.0)])  # redelivered round: complete again, same set
    assert again.summary.count == 1 and not again.revised


def test_gather_a_later_record_of_the_id_starts_afresh_and_supersedes_an_unpublished_round() -> None:
    st = GatherState("d")
    st.expect("t:0:5", 2, (5.0, "d"), SRC, 0xABC, "s")
    st.answer("t:0:5", 0, [_match("a", 1.0)])
    complete, superseded = st.expect("t:0:9", 1, (5.0, "d"), SRC, 0xDEF, "s")
    assert superseded and not complete and st.summary.count == 0  # the new version's probe finds all again
    assert not st.answer("t:0:5", 1, [_match("x", 1.0)])  # the old round's late answer is dropped
    assert st.answer("t:0:9", 0, [_match("b", 2.0)]) and [m.id for m in st.summary.listed()] == ["b"]
    assert st.expect("t:0:5", 2, (5.0, "d"), SRC, 0xABC, "s") == (False, False)  # an older replay: ignored
    assert st.round == "t:0:9"


def test_gather_revision_only_republishes_new_matches_after_publication() -> None:
    st = GatherState("d")
    st.expect("t:0:1", 0, (5.0, "d"), SRC, 0xABC, "schema-1")
    assert not st.revise(_match("e", 1.0), 0xABC)  # not yet published: merged, no extra verdict
    st.published = True
    assert st.revise(_match("f", 2.0), 0xABC) and st.revised
    assert not st.revise(_match("f", 2.0), 0xABC)
    assert st.summary.count == 2


def test_gather_a_revision_of_a_version_not_yet_seen_waits_for_its_header() -> None:
    st = GatherState("d")
    st.expect("t:0:1", 0, (5.0, "d"), SRC, 0xAAA, "s")
    assert not st.revise(_match("e", 1.0), 0xBBB)  # matched the next version, whose header is on its way
    assert st.summary.count == 0
    st.expect("t:0:2", 0, (5.0, "d"), SRC, 0xBBB, "s")
    assert [m.id for m in st.summary.listed()] == ["e"]


def test_wire_formats_round_trip() -> None:
    m = Match("x", 3, 0.85, (1.5, "x"), True, 0xF00)
    assert Match.from_wire(m.to_wire()) == m
    contained = Match("y", 9, 0.52, (2.5, "y"), False, 0xF01, containment=0.93, relation="contained")
    assert Match.from_wire(contained.to_wire()) == contained
    # the shorter forms written before containment (and before simhash) are still read: similar matches
    assert Match.from_wire(["z", 2, 0.9, 1.0, "z", False, 7]) == Match("z", 2, 0.9, (1.0, "z"), False, 7)
    assert Match.from_wire(["z", 2, 0.9, 1.0, "z", False]) == Match("z", 2, 0.9, (1.0, "z"), False)
    header = Header("d", "t:0:1", 2, SRC, (2.0, "d"), 0xABC, "s1")
    item = ProbeItem("d", "t:0:1", b"\x00\x01", (2.0, "d"), [0, 5], header)
    assert ProbeItem.from_json(item.to_json()) == item
    for entry in (header, Answer("d", "t:0:1", 3, [m], header, final=False), Revise("d", m, 0xABC)):
        assert entry_from_json(json.loads(json.dumps(entry.to_json()))) == entry
    letter = json.loads(dead_letter("not_utf8", "bad", "parse", SRC, b"k", b"\xff"))
    assert letter["value_encoding"] == "base64" and letter["key"] == "k" and letter["source"]["offset"] == 42
    assert letter["code"] == "not_utf8"


def test_a_dead_letter_always_fits_and_says_how_to_find_the_original() -> None:
    huge = b"{" + b"x" * 3_000_000
    letter = dead_letter("not_json", "not valid JSON", "parse", SRC, b"k", huge, limit=1_000_000)
    assert len(letter) < 1_000_000
    envelope = json.loads(letter)
    assert envelope["value_truncated"] and envelope["value_length"] == len(huge)
    assert len(envelope["value_sha256"]) == 64 and envelope["source"] == SRC.to_json()


def test_send_list_splits_large_batches_below_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from stream.service.stages import hops
    from stream.service.stages.hops import send_list

    class Out:
        def __init__(self) -> None:
            self.sent: list[bytes] = []

        def send(self, topic: str, key: bytes | None, value: bytes, partition: int | None = None) -> None:
            self.sent.append(value)

    out = Out()
    entries = [{"doc": str(i), "fp": "x" * 700} for i in range(1000)]
    encoded: list[int] = []
    real_dumps = hops.dumps

    def counting_dumps(obj: object) -> bytes:
        value = real_dumps(obj)
        encoded.append(len(value))
        return value

    monkeypatch.setattr(hops, "dumps", counting_dumps)
    send_list(out, "t", 1, entries, limit=64 << 10)  # type: ignore[arg-type]
    assert len(out.sent) > 1 and all(len(v) <= 64 << 10 for v in out.sent)
    assert [e for v in out.sent for e in json.loads(v)] == entries
    assert sum(encoded) < 2.1 * encoded[0]  # each entry encoded about twice, not once per halving
    out.sent.clear()
    send_list(out, "t", 1, [], limit=10)  # type: ignore[arg-type]
    assert out.sent == []


def test_output_counts_every_record_of_a_batch_and_fails_it_on_delivery_errors() -> None:
    """Each record of a batch (send, changelog, changelog_many) has exactly one delivery report: with
    an unreachable broker every one times out, and flush fails with their errors (a miscount would
    hang until flush's own timeout instead)."""
    import asyncio

    import pytest

    from stream.service.stages.output import Output, OutputError

    async def run() -> None:
        out = Output({"bootstrap.servers": "127.0.0.1:1", "message.timeout.ms": 300, "log_level": 0,
                      "enable.idempotence": False})
        batch = out.mark()
        out.changelog_many("t-changelog", 0, [(b"a", b"1"), (b"b", None)])
        out.changelog("t-changelog", 1, b"c", b"2")
        out.send("t", b"k", b"v", partition=0)
        assert batch.pending == 4
        with pytest.raises(OutputError) as failed:
            await out.flush(batch, timeout=20)
        assert "not delivered within" not in str(failed.value)
        assert batch.pending == 0 and len(batch.errors) == 4
        out.close(timeout=1)

    asyncio.run(run())


def test_the_example_config_names_every_setting_with_its_default() -> None:
    from dataclasses import fields, replace

    import yaml

    from stream.service.settings import Security, Settings

    path = Path(__file__).resolve().parents[1] / "stream" / "data" / "dedup.example.yaml"
    keys = set(yaml.safe_load(path.read_text(encoding="utf-8")))
    assert keys == {f.name for f in fields(Settings)}
    assert set(yaml.safe_load(path.read_text(encoding="utf-8"))["security"]) == {f.name for f in fields(Security)}
    loaded = load_settings(path, env={})
    assert loaded == replace(Settings(), broker="kafka://127.0.0.1:9092")


def test_detection_settings_take_durations_and_check_ranges() -> None:
    s = load_settings(env={"DEDUP_RETENTION": "30d", "DEDUP_THRESHOLD": "0.9", "DEDUP_SEGMENTER": "jieba"})
    assert (s.retention, s.match_settings().threshold, s.fingerprint_config().segmenter) == (2_592_000.0, 0.9, "jieba")
    assert load_settings(env={"DEDUP_RETENTION": "none"}).retention is None
    with pytest.raises(ConfigError, match="retention must be a duration"):
        load_settings(env={"DEDUP_RETENTION": "a month"})
    with pytest.raises(ConfigError, match="threshold must be between 0 and 1"):
        load_settings(env={"DEDUP_THRESHOLD": "1.5"})
    with pytest.raises(ConfigError, match="weighting must be one of"):
        load_settings(env={"DEDUP_WEIGHTING": "idf"})
