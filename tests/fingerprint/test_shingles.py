"""Shingles of mixed Chinese/English text: character 5-grams, as the ground truth measures it.

The fixture texts are written for these tests in the style of Chinese technical documentation
(prose around commands, options and paths), so that most of their characters are Latin."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from stream.cli import main
from stream.fingerprint import Document, FingerprintConfig, Fingerprinter
from stream.fingerprint.hashing import char_ngram_hashes, ngram_hashes, token_hashes
from stream.fingerprint.schema import SCHEMA_VERSION, SCHEMA_VERSIONS
from stream.fingerprint.scores import similarity
from stream.fingerprint.shingles import cjk_share, shingle_hashes, shingle_unit
from stream.text.normal_form import normalize
from tests.harness.cli import dedup

MIXED = ("用 tar --create --gzip --file /var/backups/etc.tar.gz /etc 备份配置文件，"
         "再用 rsync --archive --delete /var/backups/ backup@example.org:/srv/backups/ 同步到远程服务器。"
         "默认的 --compress-level 是 6，可以在 /etc/default/backup.conf 里设置。")
# a repost: regional words (文件 -> 檔案, 服务器 -> 伺服器, 默认 -> 預設) and one renamed option
REPOST = ("用 tar --create --gzip --file /var/backups/etc.tar.gz /etc 备份配置檔案，"
          "再用 rsync --archive --delete /var/backups/ backup@example.org:/srv/backups/ 同步到远程伺服器。"
          "預設的 --compress-level 是 6，可以在 /etc/default/backup.conf 里设置。")


def truth_shingles(text: str, unit: str) -> set[str]:
    """The ground truth's shingles (the corpora's ground-truth tool, tests/fixtures/make_fixture_note.md):
    character 5-grams of the text without whitespace, or lower-cased 3-grams of ``\\w+`` words."""
    if unit == "word":
        w = re.findall(r"\w+", text.lower())
        return {" ".join(w[i : i + 3]) for i in range(len(w) - 2)}
    t = re.sub(r"\s+", "", text)
    return {t[i : i + 5] for i in range(len(t) - 4)}


def jaccard(a: set[object], b: set[object]) -> float:
    return len(a & b) / len(a | b)


def test_mixed_text_with_little_cjk_is_shingled_by_characters() -> None:
    assert 0.05 <= cjk_share(MIXED) < 0.3  # most characters are Latin: commands, options, paths
    assert shingle_unit(MIXED) == "char"
    compact = "".join(MIXED.split())
    assert np.array_equal(shingle_hashes(MIXED), np.unique(char_ngram_hashes(compact, 5)))


def test_kana_and_hangul_count_as_cjk() -> None:
    assert shingle_unit("ls -la でファイルの一覧を表示します") == "char"
    assert shingle_unit("ls -la 명령으로 파일 목록을 봅니다") == "char"
    assert shingle_unit("ls -la lists the files, including hidden ones") == "word"


def test_one_changed_han_character_changes_only_the_shingles_covering_it() -> None:
    compact = "".join(MIXED.split())
    pos = compact.index("远程")
    changed = compact[:pos] + "遠" + compact[pos + 1 :]
    before, after = set(shingle_hashes(compact).tolist()), set(shingle_hashes(changed).tolist())
    covering = {compact[i : i + 5] for i in range(pos - 4, pos + 1)}
    covering_hashes = {int(char_ngram_hashes(s, 5)[0]) for s in covering}
    assert before - after == covering_hashes
    assert len(after - before) == 5


def test_chinese_and_english_sets_are_the_ground_truths() -> None:
    chinese = "床前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。床前明月光"
    assert len(shingle_hashes(chinese)) == len(truth_shingles(chinese, "char"))
    english = "The quick brown fox jumps over the lazy dog; the quick brown fox sleeps."
    words = re.findall(r"\w+", normalize(english))
    assert np.array_equal(shingle_hashes(normalize(english)), np.unique(ngram_hashes(token_hashes(words), 3)))
    assert len(shingle_hashes(normalize(english))) == len(truth_shingles(english, "word"))


def test_mixed_repost_jaccard_is_the_ground_truths() -> None:
    truth = jaccard(truth_shingles(MIXED, "char"), truth_shingles(REPOST, "char"))
    ours = jaccard(set(shingle_hashes(normalize(MIXED)).tolist()), set(shingle_hashes(normalize(REPOST)).tolist()))
    assert truth >= 0.8
    assert ours == pytest.approx(truth)
    # word 3-grams (what a 30% CJK threshold gave this text) take 备份配置文件 as one word
    words = jaccard(set(shingle_hashes(normalize(MIXED), share=0.3).tolist()),
                    set(shingle_hashes(normalize(REPOST), share=0.3).tolist()))
    assert words < 0.8


def test_mixed_repost_is_a_near_duplicate_by_default() -> None:
    def score(config: FingerprintConfig) -> float:
        fingerprinter = Fingerprinter(config)
        a, b = (fingerprinter.fingerprint(Document(i, t)) for i, t in (("a", MIXED), ("b", REPOST)))
        return similarity(a, b)

    assert score(FingerprintConfig()) >= 0.8
    assert score(FingerprintConfig(cjk_share=0.3)) < 0.8


def test_schema_names_the_shingle_rule() -> None:
    described = FingerprintConfig().describe()
    assert described["version"] == SCHEMA_VERSION >= 3 and described["cjk_share"] == 0.05
    assert "CJK share of 0.3" in SCHEMA_VERSIONS[2] and "cjk_share" in SCHEMA_VERSIONS[SCHEMA_VERSION]


def test_scan_refuses_state_of_the_previous_schema(tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "a", "text": MIXED}, ensure_ascii=False) + "\n", encoding="utf-8")
    state = tmp_path / "state"
    assert CliRunner().invoke(main, ["scan", str(docs), "--state", str(state)]).exit_code == 0
    # make it a state of schema version 2: as that release wrote meta.json (no cjk_share setting)
    meta = json.loads((state / "meta.json").read_text())
    del meta["fingerprint"]["cjk_share"]
    meta["fingerprint"]["version"] = 2
    meta["schema"] = "v2-e8bed1a4854e"
    (state / "meta.json").write_text(json.dumps(meta))
    # as a user runs it: one line on stderr and the exit code of a configuration error
    result = dedup("scan", str(docs), "--state", str(state))
    assert result.returncode == 3 and "Traceback" not in result.stderr
    for words in ("v2-e8bed1a4854e", "version: 2 -> 3", "cjk_share: None -> 0.05", "a CJK share of 0.3",
                  "new --state directory"):
        assert words in result.stderr, words
