"""`dedup scan --state`: one id is one document. The same document again gets the verdict it had; an
edited one replaces its old version in the index and is judged as a new arrival."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from stream.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures"
POEM = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"
OTHER = "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"
THIRD = "千山鸟飞绝，万径人踪灭。孤舟蓑笠翁，独钓寒江雪。"


def scan(path: Path, *args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(main, ["scan", str(path), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def write(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    return path


def summary(verdicts: list[dict[str, Any]]) -> list[tuple[str, str, str | None, list[str]]]:
    return [(v["id"], v["verdict"], v["canonical"], [m["id"] for m in v["matches"]]) for v in verdicts]


def test_scanning_the_same_file_twice_gives_the_same_verdicts(tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    first = scan(FIXTURES / "tang_small.jsonl", "--state", state)
    second = scan(FIXTURES / "tang_small.jsonl", "--state", state)
    assert any(v["verdict"] != "unique" for v in first)  # the fixture has pairs to get wrong
    assert summary(second) == summary(first)
    assert all(m["id"] != v["id"] for v in second for m in v["matches"])


def test_a_copy_and_its_original_keep_their_roles_when_both_come_again(tmp_path: Path) -> None:
    docs = write(tmp_path / "docs.jsonl", [{"id": "a1", "text": POEM}, {"id": "a2", "text": POEM}])
    state = str(tmp_path / "state")
    expected = [("a1", "unique", None, []), ("a2", "duplicate", "a1", ["a1"])]
    assert summary(scan(docs, "--state", state)) == expected
    assert summary(scan(docs, "--state", state)) == expected
    # the same within one file, without a state: the id's first line decides its place
    again = write(tmp_path / "again.jsonl", [{"id": "a1", "text": POEM}, {"id": "a2", "text": POEM},
                                             {"id": "a1", "text": POEM}])
    assert summary(scan(again)) == [*expected, expected[0]]


def test_an_edited_document_replaces_its_old_version(tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    scan(write(tmp_path / "1.jsonl", [{"id": "a", "text": POEM}, {"id": "b", "text": OTHER}]), "--state", state)
    # a's new version is a copy of b: judged as a new arrival, so b (earlier) is its canonical
    (edited,) = scan(write(tmp_path / "2.jsonl", [{"id": "a", "text": OTHER}]), "--state", state)
    assert (edited["verdict"], edited["canonical"]) == ("duplicate", "b")
    # a copy of a's old version finds nothing: that version left the index
    (late,) = scan(write(tmp_path / "3.jsonl", [{"id": "c", "text": POEM}]), "--state", state)
    assert late["verdict"] == "unique" and late["matches"] == []
    # and b, scanned again, is still the original of the pair (a's new version came after it)
    (b,) = scan(write(tmp_path / "4.jsonl", [{"id": "b", "text": OTHER}]), "--state", state)
    assert b["verdict"] == "unique"


def test_a_document_edited_to_nothing_leaves_the_index(tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    scan(write(tmp_path / "1.jsonl", [{"id": "a", "text": POEM}]), "--state", state)
    (emptied,) = scan(write(tmp_path / "2.jsonl", [{"id": "a", "text": " "}]), "--state", state)
    assert emptied["verdict"] == "empty"
    (late,) = scan(write(tmp_path / "3.jsonl", [{"id": "c", "text": POEM}, {"id": "d", "text": THIRD}]),
                   "--state", state)[:1]
    assert late["verdict"] == "unique"


def test_new_side_information_is_a_new_version(tmp_path: Path) -> None:
    """Same text, other tags: the tags' MinHash is part of the fingerprint, so this is another version,
    judged anew (here: a copy of b, which came before it)."""
    state = str(tmp_path / "state")
    first = [{"id": "a", "text": POEM, "tags": ["night"]}, {"id": "b", "text": POEM, "tags": ["moon"]}]
    scan(write(tmp_path / "1.jsonl", first), "--state", state)
    (tagged,) = scan(write(tmp_path / "2.jsonl", [{"id": "a", "text": POEM, "tags": ["moon"]}]), "--state", state)
    assert (tagged["verdict"], tagged["canonical"]) == ("duplicate", "b")


def test_a_deleted_document_that_comes_back_is_a_new_arrival(tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    scan(write(tmp_path / "1.jsonl", [{"id": "a", "text": POEM}, {"id": "b", "text": POEM}]), "--state", state)
    result = CliRunner().invoke(main, ["scan", str(write(tmp_path / "2.jsonl", [{"id": "a", "op": "delete"}])),
                                       "--state", state], catch_exceptions=False)
    assert result.exit_code == 0 and '"found": true' in result.stdout
    (back,) = scan(write(tmp_path / "3.jsonl", [{"id": "a", "text": POEM}]), "--state", state)
    assert (back["verdict"], back["canonical"]) == ("duplicate", "b")  # after b now, not at its old place


def test_with_retention_a_document_seen_before_keeps_its_verdict(tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    docs = write(tmp_path / "docs.jsonl", [{"id": "a1", "text": POEM, "ts": 100},
                                           {"id": "a2", "text": POEM, "ts": 200}])
    expected = [("a1", "unique", None, []), ("a2", "duplicate", "a1", ["a1"])]
    assert summary(scan(docs, "--state", state, "--retention", "1d")) == expected
    assert summary(scan(docs, "--state", state, "--retention", "1d")) == expected


def test_an_older_version_of_an_id_changes_nothing(tmp_path: Path) -> None:
    """By event time, as in the stream: a line with an earlier ts than the id's known version is
    superseded (its own output line), in one scan and across scans of a --state."""
    docs = [{"id": "a", "text": OTHER, "ts": 20}, {"id": "a", "text": POEM, "ts": 10},
            {"id": "c", "text": POEM, "ts": 30}, {"id": "d", "text": OTHER, "ts": 31}]
    lines = scan(write(tmp_path / "docs.jsonl", docs))
    assert lines[1] == {"id": "a", "superseded": True, "ts": 10, "newer_ts": 20}
    assert [(v["id"], v["verdict"], v["canonical"]) for v in lines[2:]] == [("c", "unique", None),
                                                                        ("d", "duplicate", "a")]
    state = str(tmp_path / "state")
    scan(write(tmp_path / "first.jsonl", docs[:1]), "--state", state)
    again = scan(write(tmp_path / "second.jsonl", docs[1:]), "--state", state)
    assert again[0]["superseded"] and again[2]["canonical"] == "a"
