"""`dedup scan` end to end on the bundled fixture corpus: known duplicates are found."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from stream.cli import main
from tests.harness.cli import dedup

FIXTURES = Path(__file__).parents[1] / "fixtures"


def truth_pairs() -> set[frozenset[str]]:
    lines = (FIXTURES / "tang_small_pairs.jsonl").read_text().splitlines()
    return {frozenset((p["a"], p["b"])) for p in map(json.loads, lines)}


def run_scan(*args: str, exit_code: int = 0) -> tuple[list[dict], str]:
    result = CliRunner().invoke(main, ["scan", *args], catch_exceptions=False)
    assert result.exit_code == exit_code, result.output
    verdicts = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return verdicts, result.stderr


def found_pairs(verdicts: list[dict]) -> set[frozenset[str]]:
    return {frozenset((v["id"], m["id"])) for v in verdicts for m in v["matches"]}


def test_scan_finds_the_known_duplicates() -> None:
    verdicts, err = run_scan(str(FIXTURES / "tang_small.jsonl"))
    assert len(verdicts) == 60
    assert found_pairs(verdicts) == truth_pairs()
    paired = {i for p in truth_pairs() for i in p}
    for v in verdicts:
        assert set(v) >= {"id", "verdict", "fingerprint", "canonical", "distance", "matches"}
        assert len(v["fingerprint"]) == 16
        if v["id"] not in paired:
            assert v["verdict"] == "unique" and v["canonical"] is None
        for m in v["matches"]:
            assert 0.8 <= m["similarity"] <= 1.0
    assert "scanned 60 documents" in err


def test_bad_lines_are_reported_and_skipped(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "text": "床前明月光，疑是地上霜。举头望明月，低头思故乡。"}\n'
                   "{oops\n"
                   '{"text": "no id"}\n'
                   '{"id": "b", "text": "床前明月光，疑是地上霜。举头望明月，低头思故乡。"}\n', encoding="utf-8")
    errors = tmp_path / "errors.jsonl"
    verdicts, err = run_scan(str(src), "--errors", str(errors), exit_code=1)  # 1: some lines rejected
    assert [v["id"] for v in verdicts] == ["a", "b"]
    assert verdicts[1]["verdict"] == "duplicate" and verdicts[1]["canonical"] == "a"
    assert "line 2: not valid JSON" in err and "line 3: missing 'id'" in err
    reports = [json.loads(line) for line in errors.read_text().splitlines()]
    assert [(r["line"], r["code"]) for r in reports] == [(2, "not_json"), (3, "bad_id")]
    assert "rejected 2" in err


def test_state_carries_over_between_runs(tmp_path: Path) -> None:
    lines = (FIXTURES / "tang_small.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    first.write_text("".join(lines[:30]), encoding="utf-8")
    second.write_text("".join(lines[30:]), encoding="utf-8")
    state = str(tmp_path / "state")
    v1, _ = run_scan(str(first), "--state", state)
    v2, _ = run_scan(str(second), "--state", state)
    assert found_pairs(v1 + v2) == truth_pairs()  # pairs across the two runs are found too
    result = dedup("scan", str(second), "--state", state, "--bands", "8")
    assert result.returncode == 3 and "schema" in result.stderr and "Traceback" not in result.stderr
    # the anchor table changes which pairs are proposed: a state built with it is refused without it
    result = dedup("scan", str(second), "--state", state, "--anchor-cap", "0")
    assert result.returncode == 3 and "anchor_cap: None -> 0" in result.stderr, result.stderr
    # a state directory of an older index format is refused with a message, not a traceback
    from stream.storage import RocksStore

    index = RocksStore(str(tmp_path / "state" / "index"))
    config = json.loads(index.get(b"\xffconfig") or b"{}")
    index.put(b"\xffconfig", json.dumps({**config, "version": 2}).encode())
    index.close()
    result = dedup("scan", str(second), "--state", state)
    assert result.returncode == 3 and "format version 2" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("bands", ["0"])
def test_simhash_only_mode_still_finds_identical_poems(bands: str) -> None:
    verdicts, _ = run_scan(str(FIXTURES / "tang_small.jsonl"), "--bands", bands)
    identical = {frozenset((p["a"], p["b"])) for p in map(json.loads, (FIXTURES / "tang_small_pairs.jsonl")
                 .read_text().splitlines()) if p["jaccard"] == 1.0}
    assert identical <= found_pairs(verdicts)


def test_web_pages_same_article_two_templates(tmp_path: Path) -> None:
    from tests.fixtures.html_pages import ARTICLES, build_page

    src = tmp_path / "pages.jsonl"
    with src.open("w", encoding="utf-8") as out:
        for key in ARTICLES:
            for template, seed in (("portal", 1), ("blog", 2)):
                out.write(json.dumps({"id": f"{key}/{template}", "text": build_page(key, template, seed),
                                      "content_type": "text/html"}, ensure_ascii=False) + "\n")
    verdicts, _ = run_scan(str(src))
    pairs = found_pairs(verdicts)
    # the same article under two site templates is found; different articles never match
    assert pairs == {frozenset((f"{k}/portal", f"{k}/blog")) for k in ARTICLES}


def test_a_truncated_page_is_reported_as_contained(tmp_path: Path) -> None:
    from tests.fixtures.html_pages import ARTICLES, build_page

    long_article = max((a for a in ARTICLES.values() if a.lang == "en"), key=lambda a: len(a.text))
    truncated = build_page(long_article.key, "blog")
    for paragraph in long_article.paragraphs[-3:]:  # the last three go: Jaccard well below 0.8
        truncated = truncated.replace(f"<p>{paragraph}</p>", "")
    src = tmp_path / "pages.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in
                           (("full", build_page(long_article.key, "portal")), ("cut", truncated))))
    state = tmp_path / "state"
    verdicts, _ = run_scan(str(src), "--state", str(state), "--containment-min-shingles", "20")
    (match,) = verdicts[1]["matches"]
    assert match["id"] == "full" and match["relation"] == "contained"
    assert match["similarity"] < 0.8 <= match["containment"]
    meta = json.loads((state / "meta.json").read_text())
    assert meta["matching"]["containment_threshold"] == 0.8 and meta["matching"]["containment_min_shingles"] == 20
    verdicts, _ = run_scan(str(src), "--containment-threshold", "0")
    assert verdicts[1]["matches"] == []


def test_stream_idf_is_learned_and_kept_in_state(tmp_path: Path) -> None:
    state = tmp_path / "state"
    run_scan(str(FIXTURES / "tang_small.jsonl"), "--state", str(state), "--weighting", "tfidf", "--idf", "stream")
    table = json.loads((state / "idf.json").read_text(encoding="utf-8"))
    assert table["n_docs"] == 60 and len(table["df"]) > 100
    run_scan(str(FIXTURES / "tang_small.jsonl"), "--state", str(state), "--weighting", "tfidf", "--idf", "stream")
    assert json.loads((state / "idf.json").read_text(encoding="utf-8"))["n_docs"] == 120


def test_retention_and_deletes_in_a_scan(tmp_path: Path) -> None:
    text = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"
    lines = [{"id": "a", "text": text, "ts": 0}, {"id": "b", "text": text, "ts": 50},
             {"id": "c", "text": text, "ts": 200}, {"id": "no-ts", "text": text}, {"id": "b", "op": "delete"},
             {"id": "d", "text": text, "ts": 250}, {"id": "ghost", "op": "delete"},
             {"id": "a2", "text": text, "ts": 250}, {"id": "late", "text": text, "ts": 10}]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    verdicts, err = run_scan(str(src), "--retention", "100s", exit_code=1)  # the line without ts is rejected
    by_id = {v["id"]: v for v in verdicts if "verdict" in v}
    assert by_id["b"]["canonical"] == "a"
    assert by_id["c"]["verdict"] == "unique"  # a and b are more than 100 s before it
    assert by_id["d"]["canonical"] == "c"  # 50 s apart; b was deleted and is 200 s apart anyway
    assert by_id["a2"]["canonical"] == "c" and by_id["a2"]["match_count"] == 2  # d: same ts, earlier in the file
    assert (by_id["late"]["canonical"], by_id["late"]["match_count"]) == ("a", 1)  # c, d, a2 are later in ts
    assert "out of order 1" in err
    assert [v for v in verdicts if "op" in v] == [{"id": "b", "op": "delete", "found": True},
                                                 {"id": "ghost", "op": "delete", "found": False}]
    assert "line 4: with --retention every document needs a 'ts'" in err


@pytest.mark.parametrize("retention", [None, 1e9])
def test_chunks_judge_as_the_document_by_document_loop(retention: float | None) -> None:
    """``scan_stream`` judges up to CHUNK documents per detector call: the output equals one document
    per call, with copies inside a chunk, the same document twice, a new version of an id, deletes
    and a bad line between them."""
    import io
    import random

    from stream.batch.scan import iter_lines, scan_stream
    from stream.batch.scan_state import open_state
    from stream.detect import MatchSettings
    from stream.fingerprint import FingerprintConfig

    lines = (FIXTURES / "tang_small.jsonl").read_text(encoding="utf-8").splitlines()
    docs = [json.loads(line) for line in lines]
    rng = random.Random(7)
    extra = [dict(rng.choice(docs), id=f"copy{i}") for i in range(8)]  # exact copies under new ids
    extra += [docs[3], dict(docs[5], text=docs[9]["text"]), {"id": docs[7]["id"], "op": "delete"}, {"id": 5}]
    stream = [*docs, *extra]
    rng.shuffle(stream)
    for ts, doc in enumerate(stream):
        if "op" not in doc:
            doc.setdefault("ts", float(ts))
    data = "\n".join(json.dumps(doc, ensure_ascii=False) for doc in stream).encode()

    def run(chunk: int) -> tuple[str, dict[str, int]]:
        config = FingerprintConfig(segmenter="jieba")
        state = open_state(None, config, MatchSettings(retention=retention))
        out, errors = io.StringIO(), io.StringIO()
        counts = scan_stream(state, iter_lines(io.BytesIO(data)), out, errors, chunk=chunk)
        return out.getvalue(), dict(counts)

    chunked, one = run(512), run(1)
    assert chunked == one
    assert one[1]["near_duplicate"] + one[1]["duplicate"] >= 8 and one[1]["rejected"] == 1


def test_a_page_inside_an_archive_is_found_by_its_anchors(tmp_path: Path) -> None:
    """No band of a 12,000-word archive is a 250-word page's that sits in its middle: the anchor table
    proposes the pair, in one run and in the next one on the same state (the table rebuilt from the
    index's records), and not once the archive is deleted."""
    import numpy as np

    rng = np.random.default_rng(3)

    def words(n: int, letter: str) -> str:
        return " ".join(f"{letter}{i}" for i in rng.integers(0, 4000, n))

    page = words(250, "p")
    archive = " ".join([words(6000, "w"), page, words(6000, "w")])
    state = str(tmp_path / "state")
    first, second, third = (tmp_path / f"{name}.jsonl" for name in ("first", "second", "third"))
    first.write_text(json.dumps({"id": "archive", "text": archive}) + "\n" + json.dumps({"id": "page", "text": page}))
    second.write_text(json.dumps({"id": "copy", "text": page}))
    third.write_text(json.dumps({"id": "archive", "op": "delete"}) + "\n" + json.dumps({"id": "again", "text": page}))
    verdicts, _ = run_scan(str(first), "--state", state)
    assert [(m["id"], m["relation"]) for m in verdicts[1]["matches"]] == [("archive", "contained")]
    verdicts, _ = run_scan(str(second), "--state", state)
    assert {(m["id"], m["relation"]) for m in verdicts[0]["matches"]} == {("archive", "contained"),
                                                                          ("page", "similar")}
    verdicts, _ = run_scan(str(third), "--state", state)
    assert {m["id"] for m in verdicts[1]["matches"]} == {"page", "copy"}
