"""Structured-record features, as Li & Han weigh relational records (docs/references.md).

Li & Han weigh database rows: every short field value is one feature of weight 2 ("除了大文本,其他字段值
都赋予2的权重"); the long text field is segmented and its words weighted by term frequency ("大文本经过分词
工具处理,词频作为权重"), with a stop word list ("停用词汇表加入一些语气助词等").

Here a field is "short" when its normalized string has at most ``short_max_chars`` characters:
- short: one feature ``"name=value"``, weight 2.0 (an exact-match field: a changed phone number or
  date changes the feature);
- long: the segmenter's tokens, stop words dropped, each feature ``"name:token"`` weighted by its count.
The field name prefixes every feature so the same word in two fields gives two features.

Values: strings are normalized (``normalize``); ``None`` -> "null", booleans -> "true"/"false" (JSON
spellings); integers as decimals; floats with an integral value as integers (1.0 -> "1": a record
exported by two systems should not differ there), other floats by ``repr``. Nested values (mappings,
lists, sets, ...) raise ValueError naming the field: a record is flat.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from stream.text.normal_form import normalize
from stream.text.segment import Segmenter
from stream.text.stopwords import STOPWORDS

SHORT_FIELD_WEIGHT = 2.0


def field_value_text(name: str, value: object) -> str:
    """The normalized string form of one scalar field value (ValueError for anything nested)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        return normalize(value)
    raise ValueError(
        f"field {name!r}: value of type {type(value).__name__} is not a scalar "
        "(fields must be strings, numbers, booleans or null; nested values are not supported)"
    )


def field_features(
    fields: Mapping[str, object],
    segmenter: Segmenter,
    *,
    short_max_chars: int = 32,
    drop_stopwords: bool = True,
) -> dict[str, float]:
    """Li & Han's weighted features of a flat record (see the module docstring)."""
    features: dict[str, float] = {}
    for name, value in fields.items():
        text = field_value_text(name, value)
        if len(text) <= short_max_chars:
            features[f"{name}={text}"] = SHORT_FIELD_WEIGHT
            continue
        counts = Counter(segmenter.cut(text))
        for token, count in counts.items():
            if not (drop_stopwords and token in STOPWORDS):
                features[f"{name}:{token}"] = float(count)
    return features
