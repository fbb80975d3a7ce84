"""Dead letters read back (the worker's envelope), selection, the replay ledger's rules; no broker."""

from __future__ import annotations

import hashlib
import io
import json

import click
import pytest

from stream.service.commands.dlq import LetterPrinter, parse_since
from stream.service.commands.letters import NOT_AN_ENVELOPE, Position, parse_letter, preview
from stream.service.commands.replay import Ledger, NotReplayable, Selection, originals
from stream.service.stages.messages import Source, dead_letter

SRC = Source("documents", 2, 42, 1700000000.0)
AT = Position("documents.dlq", 1, 7)


def letter_of(raw: bytes, at: Position = AT):  # type: ignore[no-untyped-def]
    return parse_letter(at, raw)


def test_the_envelope_gives_back_the_original_key_and_value() -> None:
    value = '{"id": "d1", "text": "床前明月光"}'.encode()
    letter = letter_of(dead_letter("fingerprint_failed", "ValueError: x", "fingerprint", SRC, b"d1", value))
    assert (letter.code, letter.stage, letter.name) == ("fingerprint_failed", "fingerprint", "1:7")
    assert letter.source == Position("documents", 2, 42)
    assert originals(None, letter) == (b"d1", value)  # type: ignore[arg-type]
    binary = letter_of(dead_letter("not_utf8", "bad", "parse", SRC, b"\xff\xfe", b"\xff\x00 binary"))
    assert originals(None, binary) == (b"\xff\xfe", b"\xff\x00 binary")  # type: ignore[arg-type]
    assert preview(binary.value).startswith("<binary> ff 00 20")
    tombstone = letter_of(dead_letter("tombstone", "empty record value", "parse", SRC, b"gone", None))
    assert originals(None, tombstone) == (b"gone", None) and tombstone.preview() == "<null>"  # type: ignore[arg-type]


def test_a_cut_value_is_known_by_length_and_hash() -> None:
    huge = b'{"id": "big", "text": "' + "字".encode() * 400_000 + b'"}'
    letter = letter_of(dead_letter("fingerprint_failed", "x", "fingerprint", SRC, b"big", huge, limit=100_000))
    assert letter.value.truncated and letter.value.length == len(huge)
    assert letter.value.matches(huge) and not letter.value.matches(huge[:-1] + b"!") and not letter.value.matches(None)
    assert letter.preview().startswith(f"<{len(huge):,} bytes, cut> {{\"id\": \"big\"")
    assert letter.value.sha256 == hashlib.sha256(huge).hexdigest()


def test_a_record_that_is_no_envelope_is_listed_but_never_replayed() -> None:
    for raw in (b"junk", b'{"no": "code"}', b'{"code": "x", "value": "!!", "value_encoding": "base64"}', None):
        letter = letter_of(raw)  # type: ignore[arg-type]
        assert letter.code == NOT_AN_ENVELOPE
        with pytest.raises(NotReplayable, match="not a dead-letter envelope"):
            originals(None, letter)  # type: ignore[arg-type]


def test_selection_by_code_and_offset() -> None:
    letters = [letter_of(dead_letter(code, "e", "parse", SRC, b"k", b"v"), Position("dlq", p, o))
               for code, p, o in (("bad_id", 0, 3), ("not_json", 0, 9), ("bad_id", 1, 5), ("bad_ts", 1, 12))]

    def names(select: Selection) -> list[str]:
        return [letter.name for letter in letters if select(letter)]

    assert names(Selection()) == ["0:3", "0:9", "1:5", "1:12"]
    assert names(Selection(frozenset({"bad_id"}))) == ["0:3", "1:5"]
    assert names(Selection(frozenset({"bad_id", "bad_ts"}), since=5)) == ["1:5", "1:12"]
    assert names(Selection(since=9, since_partition=0)) == ["0:9"]
    assert parse_since(None, None, "1:12") == (1, 12) and parse_since(None, None, "7") == (None, 7)  # type: ignore[arg-type]
    with pytest.raises(click.BadParameter):
        parse_since(None, None, "x:1")  # type: ignore[arg-type]


def test_the_ledger_knows_a_letter_by_position_and_bytes_and_its_replays_dead_letters() -> None:
    raw = dead_letter("bad_id", "e", "parse", SRC, b"k", b"v")
    letter = letter_of(raw)
    to = {"topic": "documents", "partition": 2, "offset": 99}
    ledger = Ledger({"1:7": {"sha256": letter.digest, "to": to, "targets": [to], "count": 1}})
    assert ledger.replay(letter) is not None and ledger.handled(letter)
    # another letter at the same position (the dead-letter topic was re-created): not replayed
    other = letter_of(dead_letter("bad_ts", "e", "parse", SRC, b"k", b"w"))
    assert ledger.replay(other) is None and not ledger.handled(other)
    # the dead letter of the replayed record: the same original failing again
    again = letter_of(dead_letter("bad_id", "e", "parse", Source("documents", 2, 99, 0.0), b"k", b"v"),
                      Position("documents.dlq", 1, 30))
    assert ledger.replay(again) is None and ledger.origin(again) == "1:7" and ledger.handled(again)
    printer = LetterPrinter(False, ledger)
    printer.stream = out = io.StringIO()
    printer.print([letter, again, other])
    rows = [line.split("\t") for line in out.getvalue().splitlines()]
    assert rows[0] == [c.name for c in LetterPrinter.columns]
    assert [(r[0], r[4]) for r in rows[1:]] == [("1:7", "yes"), ("1:30", "from 1:7"), ("1:7", "")]
    printer = LetterPrinter(True, ledger)
    printer.stream = out = io.StringIO()
    printer.print([again])
    record = json.loads(out.getvalue())
    assert record["replay_of"] == "1:7" and record["letter"]["offset"] == 30 and record["code"] == "bad_id"
