"""IDF tables: jieba's bundled table and the streaming one with its persistence."""

import json
import math

import pytest

from stream.text.idf import JiebaIdf, StreamingIdf, jieba_idf


def test_jieba_idf_knows_common_words_and_not_punctuation() -> None:
    table = jieba_idf()
    assert isinstance(table, JiebaIdf) and len(table) > 200_000
    common, rare = table.idf("的"), table.idf("地震")
    assert common is not None and rare is not None and rare > common
    assert table.idf("，") is None and table.idf("zzzqqq") is None


def test_streaming_idf_formula_and_unknown_terms() -> None:
    idf = StreamingIdf()
    idf.update(["a", "b", "a"])  # duplicates count once
    idf.update(["a"])
    assert idf.n_docs == 2 and idf.df("a") == 2 and idf.df("b") == 1
    assert idf.idf("a") == pytest.approx(math.log(3 / 3) + 1)
    assert idf.idf("b") == pytest.approx(math.log(3 / 2) + 1)
    assert idf.idf("never") is None
    assert StreamingIdf(min_df=0).idf("never") == pytest.approx(1.0)


def test_streaming_idf_persists_and_reloads(tmp_path) -> None:
    path = tmp_path / "sub" / "idf.json"
    idf = StreamingIdf(path)
    for doc in (["地震", "部门"], ["地震"], ["垃圾", "分类"]):
        idf.update(doc)
    assert idf.save() == str(path)
    again = StreamingIdf(path)
    assert again.n_docs == 3 and len(again) == 4
    for term in ("地震", "部门", "垃圾", "missing"):
        assert again.idf(term) == idf.idf(term)
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".idf-")]  # no temp files left


def test_streaming_idf_rejects_foreign_files(tmp_path) -> None:
    path = tmp_path / "idf.json"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(ValueError, match="not a streaming IDF file"):
        StreamingIdf(path)


def test_save_without_path_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="needs a path"):
        StreamingIdf().save()
