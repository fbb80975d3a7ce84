"""The e2e benchmark's input documents: the bundled sample's copies, or the first n of a corpus."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from benchmarks.e2e import _docs


def test_copies_of_the_sample_are_distinct_ids_in_event_time_order() -> None:
    docs = [json.loads(v) for v in _docs(450)]
    assert len({d["id"] for d in docs}) == 450
    assert [d["ts"] for d in docs] == [float(i) for i in range(450)]
    assert docs[400]["text"] == docs[0]["text"]  # the 401st is the first one's copy


def test_a_corpus_gives_its_first_documents_and_refuses_too_few(tmp_path: Path) -> None:
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "text": f"文本{i}"}) + "\n" for i in range(5)) + "\n",
                      encoding="utf-8")
    docs = [json.loads(v) for v in _docs(3, corpus)]
    assert [(d["id"], d["ts"]) for d in docs] == [("d0", 0.0), ("d1", 1.0), ("d2", 2.0)]
    with pytest.raises(click.BadParameter, match="5 documents, fewer than -n 6"):
        _docs(6, corpus)
