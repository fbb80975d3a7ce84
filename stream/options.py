"""The detection settings as command-line options, once, for ``dedup scan`` and ``dedup worker``: the same
names and defaults in both (the worker also reads them from ``DEDUP_*`` and its config file)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from stream.detect import MatchSettings
from stream.durations import parse_duration
from stream.fingerprint import FingerprintConfig
from stream.fingerprint.schema import SIMHASH_FEATURES

F = TypeVar("F", bound=Callable[..., Any])
SEGMENTERS = ("auto", "rjieba", "jieba")
WEIGHTINGS = ("tf", "binary", "tfidf", "tfidf_len", "pos_weighted")


@dataclass(frozen=True)
class Spec:
    flags: tuple[str, ...]
    name: str  # the setting's name: the keyword argument, the config key, DEDUP_<NAME>
    type: Any
    default: Any
    help: str


def _duration(value: str | None) -> float | None:
    return None if value in (None, "", "none") else parse_duration(str(value), "retention")


class Duration(click.ParamType):
    """A duration option (30d, 12h, 900s; with ``allow_none``, also none), checked when parsed so that
    a typo is a usage error (exit 2) naming the option; the text is kept for the settings to read."""

    name = "duration"

    def __init__(self, allow_none: bool = False) -> None:
        self.allow_none = allow_none

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = str(value).strip()
        if self.allow_none and text.lower() in ("", "none"):
            return text
        try:
            parse_duration(text, param.name if param and param.name else "duration")
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        return text


FP, MS = FingerprintConfig, MatchSettings
SPECS = (
    Spec(("-k",), "k", click.IntRange(0, 31), MS.k, "SimHash Hamming radius of the lossless block tables."),
    Spec(("--threshold",), "threshold", click.FloatRange(0, 1), MS.threshold,
         "Verified similarity at or above which two documents are near-duplicates."),
    Spec(("--containment-threshold",), "containment_threshold", click.FloatRange(0, 1), MS.containment_threshold,
         "Below --threshold, a pair is still reported, as 'contained', when this share of the shorter document's "
         "shingles is in the longer one (0: off)."),
    Spec(("--containment-min-shingles",), "containment_min_shingles", click.IntRange(0),
         MS.containment_min_shingles, "The shorter document needs this many distinct shingles to be 'contained' "
         "(about as many characters of Chinese, or words of English)."),
    Spec(("--retention",), "retention", Duration(allow_none=True), "none",
         "Match only documents whose event times are at most this far apart (30d, 12h, 900s; none: no limit); "
         "older index entries are deleted as newer documents arrive."),
    Spec(("--max-matches",), "max_matches", click.IntRange(1), MS.max_matches,
         "Matches a verdict lists at most (match_count counts them all)."),
    Spec(("--anchor-cap",), "anchor_cap", click.IntRange(0), MS.anchor_cap,
         "The anchor table finds a short text inside a long one; an anchor held by more documents proposes no "
         "pair (0: no anchor table, cheaper: such pairs are then found only when a band collides)."),
    Spec(("--segmenter",), "segmenter", click.Choice(SEGMENTERS), FP.segmenter,
         "Word segmenter; all give the same tokens (auto: rjieba, else jieba)."),
    Spec(("--simhash-features",), "simhash_features", click.Choice(SIMHASH_FEATURES), FP.simhash_features,
         "SimHash over weighted words or over the shingles."),
    Spec(("--weighting",), "weighting", click.Choice(WEIGHTINGS), FP.weighting,
         "Word weights of the SimHash (docs/text.md; pos_weighted: the POS-weighted SimHash of docs/references.md)."),
    Spec(("--bands",), "bands", click.IntRange(0, 64), FP.bands, "MinHash LSH band tables (0: SimHash tables only)."),
    Spec(("--prefix-bands",), "prefix_bands", click.IntRange(0, 64), FP.prefix_bands,
         "LSH band tables over the first characters of each document: they find truncated and excerpted copies "
         "as candidates (0: none)."),
    Spec(("--short-text-chars",), "short_text_chars", click.IntRange(0), FP.short_text_chars,
         "Texts up to this many characters are also verified on character 3-grams "
         "(docs/detect.md, Short texts); 0: off."),
)
NAMES = tuple(spec.name for spec in SPECS)
FINGERPRINT_NAMES = ("segmenter", "simhash_features", "weighting", "bands", "prefix_bands", "short_text_chars")


def detection_options(worker: bool = False) -> Callable[[F], F]:
    """Decorate a command with every detection option. For the worker the options default to None, so
    that a config file or ``DEDUP_*`` can set them; its help names both."""
    def decorate(command: F) -> F:
        for spec in reversed(SPECS):
            if worker:
                text = f"{spec.help} (DEDUP_{spec.name.upper()}; default {spec.default})"
                command = click.option(*spec.flags, spec.name, type=spec.type, default=None, help=text)(command)
            else:
                command = click.option(*spec.flags, spec.name, type=spec.type, default=spec.default,
                                       show_default=True, help=spec.help)(command)
        return command

    return decorate


def build(values: dict[str, Any], **fingerprint: Any) -> tuple[FingerprintConfig, MatchSettings]:
    """The fingerprint config and match settings from option values (``retention`` as text)."""
    config = FingerprintConfig(**{name: values[name] for name in FINGERPRINT_NAMES}, **fingerprint)
    matching = MatchSettings(k=values["k"], threshold=values["threshold"],
                             containment_threshold=values["containment_threshold"],
                             containment_min_shingles=values["containment_min_shingles"],
                             retention=_duration(values["retention"]), max_matches=values["max_matches"],
                             anchor_cap=values["anchor_cap"])
    return config, matching
