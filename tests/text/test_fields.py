"""Seed 003 structured-record features."""

import pytest

from stream.text.fields import SHORT_FIELD_WEIGHT, field_features
from stream.text.segment import get_segmenter

LONG = "市民反映小区门口的垃圾桶长期无人清理，夏天气味很大，希望有关部门尽快处理垃圾桶的问题。"


@pytest.fixture(scope="module")
def seg():
    return get_segmenter("jieba")


def test_short_fields_are_one_feature_of_weight_two(seg) -> None:
    f = field_features({"district": "天河区", "phone": "020-1234 5678"}, seg)
    assert f == {"district=天河区": SHORT_FIELD_WEIGHT, "phone=020-1234 5678": 2.0}


def test_long_text_fields_are_term_frequencies_prefixed_by_field(seg) -> None:
    f = field_features({"content": LONG}, seg)
    assert f["content:垃圾桶"] == 2.0
    assert f["content:市民"] == 1.0
    assert "content:的" not in f  # stop words dropped
    assert all(k.startswith("content:") for k in f)


def test_fields_do_not_mix(seg) -> None:
    f = field_features({"a": LONG, "b": LONG}, seg)
    assert f["a:垃圾桶"] == f["b:垃圾桶"] == 2.0


def test_scalars_are_stringified(seg) -> None:
    f = field_features({"n": 3, "x": 1.0, "y": 2.5, "ok": True, "no": False, "none": None}, seg)
    assert set(f) == {"n=3", "x=1", "y=2.5", "ok=true", "no=false", "none=null"}


def test_values_are_normalized(seg) -> None:
    assert field_features({"name": "  ＡＢＣ　Corp "}, seg) == {"name=abc corp": 2.0}


def test_short_max_chars_is_the_boundary(seg) -> None:
    value = "一二三四五六七八九十"
    assert field_features({"t": value}, seg, short_max_chars=10) == {f"t={value}": 2.0}
    assert all(k.startswith("t:") for k in field_features({"t": value}, seg, short_max_chars=9))


@pytest.mark.parametrize("value", [{"a": 1}, [1, 2], (1,), {1}])
def test_nested_values_are_rejected_naming_the_field(seg, value) -> None:
    with pytest.raises(ValueError, match="field 'address'"):
        field_features({"ok": 1, "address": value}, seg)
