"""Text layer: raw document text/HTML -> normalized text -> tokens -> weighted features.

``__all__`` is what other layers use. The names load on first use (PEP 562), so that a reader of HTML
alone (the console) does not load jieba, numba and the dictionary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stream.exports import lazy_exports

if TYPE_CHECKING:
    from stream.text.dictionary import Trie, child, jieba_trie, route
    from stream.text.fields import field_features
    from stream.text.html import extract, looks_like_html
    from stream.text.idf import IdfTable, JiebaIdf, StreamingIdf, jieba_idf
    from stream.text.normal_form import exact_form_into, normalize
    from stream.text.segment import (
        ALNUM,
        SEGMENTATION_SETTINGS,
        Segmenter,
        char_classes,
        code_points,
        decode_code_points,
        get_segmenter,
        is_space,
        token_spans,
    )
    from stream.text.stopwords import STOPWORDS
    from stream.text.weights import (
        MARKER_FACTOR,
        MARKER_WORDS,
        STOPWORDS_BUT_MARKERS,
        TITLE_FACTOR,
        is_feature,
        token_relevance,
        weigh,
    )

_MODULE_OF = {
    **dict.fromkeys(["Trie", "child", "jieba_trie", "route"], "dictionary"),
    "field_features": "fields",
    **dict.fromkeys(["extract", "looks_like_html"], "html"),
    **dict.fromkeys(["IdfTable", "JiebaIdf", "StreamingIdf", "jieba_idf"], "idf"),
    **dict.fromkeys(["exact_form_into", "normalize"], "normal_form"),
    **dict.fromkeys(["ALNUM", "SEGMENTATION_SETTINGS", "Segmenter", "char_classes", "code_points",
                     "decode_code_points", "get_segmenter", "is_space", "token_spans"], "segment"),
    "STOPWORDS": "stopwords",
    **dict.fromkeys(["MARKER_FACTOR", "MARKER_WORDS", "STOPWORDS_BUT_MARKERS", "TITLE_FACTOR", "is_feature",
                     "token_relevance", "weigh"], "weights"),
}
__getattr__ = lazy_exports(__name__, _MODULE_OF)


__all__ = [
    "ALNUM", "MARKER_FACTOR", "MARKER_WORDS", "SEGMENTATION_SETTINGS", "STOPWORDS", "STOPWORDS_BUT_MARKERS",
    "TITLE_FACTOR", "IdfTable", "JiebaIdf", "Segmenter", "StreamingIdf", "Trie", "char_classes", "child",
    "code_points", "decode_code_points", "exact_form_into", "extract", "field_features", "get_segmenter",
    "is_feature", "is_space", "jieba_idf", "jieba_trie", "looks_like_html", "normalize", "route",
    "token_relevance", "token_spans", "weigh",
]
