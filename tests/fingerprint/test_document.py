"""Input validation: every malformed document gets a clear error naming the problem."""

import pytest

from stream.errors import DocumentError
from stream.fingerprint import parse_document


def test_minimal_document_and_aliases() -> None:
    assert parse_document({"id": "a", "text": "hello"}).text == "hello"
    assert parse_document({"id": "a", "body": "b"}).text == "b"
    assert parse_document({"id": 7, "content": "c"}).id == "7"
    assert parse_document(b'{"id": "x", "text": "t"}').id == "x"


def test_side_information_and_metadata() -> None:
    doc = parse_document({"id": "a", "text": "t", "tags": ["x", "y"], "side": {"refs": ["r1"]}, "author": "li"})
    assert doc.side == {"tags": ("x", "y"), "refs": ("r1",)}


def test_event_time_forms() -> None:
    assert parse_document({"id": "a", "text": "t", "ts": 12.5}).ts == 12.5
    assert parse_document({"id": "a", "text": "t", "ts": "1970-01-01T00:01:00Z"}).ts == 60.0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"text": "no id"}, "'id'"),
        ({"id": "", "text": "t"}, "'id'"),
        ({"id": "a"}, "no text"),
        ({"id": "a", "text": "t", "body": "u"}, "not text and body"),
        ({"id": "a", "text": 5}, "'text' must be a string"),
        ({"id": "a", "text": "t", "ts": "yesterday"}, "ISO 8601"),
        ({"id": "a", "text": "t", "ts": True}, "boolean"),
        ({"id": "a", "text": "t", "tags": ["ok", 3]}, "item 1"),
        ({"id": "a", "text": "t", "fields": {"x": {"nested": 1}}}, "field 'x'"),
        ({"id": "a", "text": "t", "meta": {"k": "v"}}, "'meta'"),
        ([1, 2], "JSON object"),
        (b"{not json", "not valid JSON"),
        (b'{"id": "a", "text": "abc \\ud800 def"}', "'text' holds invalid Unicode"),
        (b'{"id": "a", "text": "ok", "tags": ["\\uDC00"]}', r"'tags\[0\]' holds invalid Unicode"),
        ('{"id": "a", "text": "x\udfff"}', "'text' holds invalid Unicode"),  # a str: no escape needed
        ({"id": "a", "text": "t", "tags": ["ok", "x\udfff"]}, r"'tags\[1\]' holds invalid Unicode"),
    ],
)
def test_bad_documents_are_named(raw: object, message: str) -> None:
    with pytest.raises(DocumentError, match=message):
        parse_document(raw)
