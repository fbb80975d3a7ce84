"""``python -m benchmarks shingling``: which shingle rule agrees best with the ground truth, per track.

Each rule turns a normalized text into a set of shingles (strings, no hashing, no sketch); an exact
all-pairs join (prefix filtering, as the truth tool does) finds every pair with Jaccard >= 0.8 under
that rule, and the pairs are scored against the track's ground truth. This measures the rule alone:
no LSH, no sketch error (docs/text.md, "Shingles", has the figures). Rules:
- ``share-0.3``, ``share-0.1``, ``share-0.05`` (the default rule), ``share-0.02``,
  ``any-cjk``: character 5-grams of the text without whitespace when at least that share of its
  non-space characters are CJK (Han, kana, Hangul), else 3-grams of ``\\w+`` words;
  ``unit-share-*``: the same with the share of units (CJK characters and words);
- ``units-N``: N-grams of units: each Han, kana or Hangul character is a unit, each run of other
  word characters (``\\w``) is a unit, punctuation and whitespace are not;
- ``weighted``: the shingle starting at each unit spans the fewest units that weigh 15 or more, a
  CJK character weighing 3 and a word 5: 5 characters of Chinese, 3 words of English, and in
  between on mixed text (``+punct``: CJK punctuation after a CJK character is a unit too).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from benchmarks.accuracy import Track, load_registered, score
from benchmarks.common import DEFAULT_OUT, pyplot, save_json, stamp
from stream.text.normal_form import normalize

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002fa1f"
_UNIT = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+")
_UNIT_PUNCT = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|(?<=[{_CJK}])[^\w\s]")
_WORD = re.compile(r"\w+")
Rule = Callable[[str], set[str]]


def _ngrams(units: list[str], n: int) -> set[str]:
    if len(units) <= n:
        return {"\x1f".join(units)} if units else set()
    return {"\x1f".join(units[i : i + n]) for i in range(len(units) - n + 1)}


def share_rule(threshold: float, of_units: bool = False) -> Rule:
    """Character 5-grams when the CJK share reaches ``threshold``, else word 3-grams; the share of
    the non-space characters, or (``of_units``) of the units (CJK characters and words)."""
    def rule(text: str) -> set[str]:
        compact = "".join(text.split())
        cjk = len(re.findall(rf"[{_CJK}]", compact))
        total = len(_UNIT.findall(text)) if of_units else len(compact)
        if cjk and cjk >= threshold * total:
            return _ngrams(list(compact), 5)
        return _ngrams(_WORD.findall(text), 3)
    return rule


def units_rule(n: int) -> Rule:
    return lambda text: _ngrams(_UNIT.findall(text), n)


def weighted_rule(punct: bool, cjk_weight: int = 3, word_weight: int = 5, cover: int = 15) -> Rule:
    pattern = _UNIT_PUNCT if punct else _UNIT

    def rule(text: str) -> set[str]:
        units = pattern.findall(text)
        weights = [word_weight if len(u) > 1 or u.isascii() else cjk_weight for u in units]
        out = set()
        for i in range(len(units)):
            j, total = i, 0
            while j < len(units) and total < cover:
                total += weights[j]
                j += 1
            out.add("\x1f".join(units[i:j]))
            if j == len(units):
                break
        return out
    return rule


RULES: dict[str, Rule] = {
    "share-0.3": share_rule(0.3), "share-0.1": share_rule(0.1), "share-0.05": share_rule(0.05),
    "share-0.02": share_rule(0.02), "any-cjk": share_rule(0.0),
    "unit-share-0.3": share_rule(0.3, True), "unit-share-0.1": share_rule(0.1, True),
    "units-3": units_rule(3), "units-4": units_rule(4), "units-5": units_rule(5),
    "weighted": weighted_rule(False), "weighted+punct": weighted_rule(True),
}


def near_pairs(ids: list[str], sets: list[set[str]], t: float = 0.8) -> set[tuple[str, str]]:
    """Every pair with Jaccard >= t, exactly (AllPairs: length and prefix filter)."""
    df = Counter(s for shingles in sets for s in shingles)
    rank = {s: i for i, s in enumerate(sorted(df, key=lambda s: (df[s], s)))}
    order = sorted((len(s), i) for i, s in enumerate(sets) if s)
    index: dict[int, list[tuple[int, int]]] = defaultdict(list)
    out = set()
    for size, i in order:
        tokens = sorted(rank[s] for s in sets[i])
        need = math.ceil(t * size)
        candidates: set[int] = set()
        for tok in tokens[: size - need + 1]:
            candidates.update(j for j, sj in index[tok] if sj >= need)
            index[tok].append((i, size))
        for j in candidates:
            inter = len(sets[i] & sets[j])
            if inter >= t * (size + len(sets[j]) - inter):
                out.add((ids[i], ids[j]) if ids[i] < ids[j] else (ids[j], ids[i]))
    return out


def compare(track: Track, rules: dict[str, Rule]) -> dict[str, Any]:
    ids = [d["id"] for d in track.docs]
    texts = [normalize(d.get("text", "")) for d in track.docs]
    return {name: score(track, near_pairs(ids, [rule(t) for t in texts])) for name, rule in rules.items()}


@click.command("shingling")
@click.option("--tracks", "names", default="",
              help="Comma-separated registered tracks (default: every present one whose truth is Jaccard; a "
                   "same-source track's pairs are not Jaccard pairs).")
@click.option("--rules", "rule_names", default=",".join(RULES), show_default=True, help="Shingle rules to compare.")
@click.option("--out", "out_dir", default=DEFAULT_OUT, show_default=True, help="Where the JSON and PNG go.")
def command(names: str, rule_names: str, out_dir: str) -> None:
    """Exact pair precision/recall of each shingle rule against each track's ground truth."""
    rules = {n: RULES[n] for n in rule_names.split(",")}
    results: dict[str, dict[str, Any]] = {}
    chosen = [n for n in names.split(",") if n]
    for track in load_registered(chosen, None):
        if not chosen and track.truth_kind != "jaccard":
            continue
        results[track.name] = compare(track, rules)
        for name, r in results[track.name].items():
            click.echo(f"{track.name:12} {name:15} P {r['precision']:.3f} R {r['recall']:.3f} F1 {r['f1']:.3f}")
    target = save_json(out_dir, "shingling", {"results": results})
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / len(rules)
    for k, rule in enumerate(rules):
        ax.bar([i + k * width for i in range(len(results))], [results[t][rule]["f1"] for t in results],
               width=width, label=rule)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(results))], list(results))
    ax.set_ylim(0.5, 1.0)
    ax.set_ylabel("pair F1, exact Jaccard of the rule's shingles")
    ax.legend(fontsize=8)
    ax.set_title("shingle rules against the ground truth (character 5-grams / word 3-grams)")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    stamp(fig)
    fig.savefig(Path(out_dir) / "shingling.png", dpi=110)
    click.echo(f"saved {target}")
