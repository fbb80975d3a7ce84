"""Fingerprinter: Document -> Fingerprint (SimHash, content hash, sketch, LSH bands, side MinHash).

Steps: HTML main-content extraction when needed -> normalization -> (a) segmentation + weights ->
64-bit SimHash (Charikar 2002, with the weightings of docs/text.md), (b) shingle set -> verification
sketch and LSH bands, (c) exact content hash, (d) side information (list fields) -> sketch for
Wang & Wang 2019's MinHash term. docs/fingerprint.md describes each part; sources in docs/references.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stream.fingerprint.document import Document
from stream.fingerprint.features import (
    COUNT_WEIGHTINGS,
    count_simhash,
    has_idf_path,
    idf_simhash,
    word_features,
)
from stream.fingerprint.fingerprint import Fingerprint
from stream.fingerprint.fused import document_parts
from stream.fingerprint.hashing import char_ngram_hashes, token_hashes
from stream.fingerprint.schema import FingerprintConfig
from stream.fingerprint.simhash import simhash
from stream.fingerprint.sketch import SHORT_SPEC, SIDE_SPEC, SketchSpec, make_sketch
from stream.text.html import extract, looks_like_html
from stream.text.normal_form import normalize
from stream.text.segment import SEGMENTATION_SETTINGS, Segmenter, code_points


class Fingerprinter:
    """Turns documents into fingerprints under one ``FingerprintConfig`` (one schema)."""

    def __init__(self, config: FingerprintConfig | None = None, idf_path: str | None = None) -> None:
        """``idf_path``: where a stream-learned IDF table (``config.idf == "stream"``) is kept."""
        from stream.text.idf import StreamingIdf, jieba_idf

        self.config = config or FingerprintConfig()
        self.spec = SketchSpec(self.config.sketch_bytes, self.config.sketch_bits)
        self.sample = self.config.sample
        self._segmenter: Segmenter | None = None
        if self.config.segmenter != "auto":
            self._segmenter = self.segmenter  # an explicit backend that is not installed fails here
        self.stream_idf = StreamingIdf(idf_path) if self.config.idf == "stream" else None
        self.idf: Any = self.stream_idf
        if self.idf is None and self.config.weighting in ("tfidf", "tfidf_len", "pos_weighted"):
            self.idf = jieba_idf()
        # the default path: a count weighting's SimHash in one compiled pass (stream.fingerprint.words),
        # jieba's tokens without a segmenter object (every backend gives them: segment.SEGMENTATION_SETTINGS)
        cfg = self.config
        self.compiled_words = (cfg.segmenter == "auto" and cfg.weighting in COUNT_WEIGHTINGS and not cfg.pos_tags
                               and self.stream_idf is None)
        self.schema = cfg.schema_id(SEGMENTATION_SETTINGS)

    def describe(self) -> dict[str, Any]:
        """The schema's settings, as state records them: every backend gives the same tokens, so no
        segmenter is loaded for it (importing rjieba is ~0.17 s of CPU)."""
        return self.config.describe(SEGMENTATION_SETTINGS)

    @property
    def segmenter(self) -> Segmenter:
        """The configured backend, loaded on first use (``auto``'s default path needs none)."""
        if self._segmenter is None:
            from stream.text.segment import get_segmenter

            self._segmenter = get_segmenter(self.config.segmenter)
        return self._segmenter

    def save(self) -> None:
        """Persist learned state (the stream IDF table), if any."""
        if self.stream_idf is not None and self.stream_idf.path is not None:
            self.stream_idf.save()

    # -- text ------------------------------------------------------------------------------
    def content_of(self, doc: Document) -> tuple[str, str]:
        """(normalized content, normalized title) after HTML extraction where needed."""
        text, title = doc.text, doc.title or ""
        if (text and (doc.content_type or "").startswith("text/html")) or (
                doc.content_type is None and looks_like_html(text)):
            page = extract(text, backend=self.config.html_backend)
            text, title = page.text, title or (page.title or "")
        content = normalize(text)
        if doc.fields:
            record = " ".join(f"{k}={v}" for k, v in sorted(doc.fields.items()) if v is not None)
            content = f"{content} {normalize(record)}".strip()
        title = normalize(title)
        return (content or title), title

    def _simhash(self, content: str, title: str, doc: Document) -> int:
        """The word SimHash by the general path: token lists, weights, the vote (short texts too)."""
        pos = None
        if self.config.pos_tags:
            tagged = self.segmenter.cut_pos(content)
            tokens, pos = [w for w, _ in tagged], [t for _, t in tagged]
        elif self.stream_idf is None:
            tokens = self.segmenter.token_bag(content)  # weightings count tokens; order is not needed
        else:
            tokens = self.segmenter.cut(content)
        if self.stream_idf is not None:
            # Wang & Wang 2019's IDF over the stream seen so far, this document included (df >= 1)
            self.stream_idf.update(tokens)
        extra = None
        if doc.fields:
            from stream.text.fields import field_features

            extra = field_features(doc.fields, self.segmenter)
        scheme = self.config.weighting
        if scheme in COUNT_WEIGHTINGS and not extra:
            n, sim = count_simhash(tokens, scheme)
            if n >= self.config.short_text_features:
                return sim
        # only the POS-weighted SimHash (pos_weighted) weighs title words
        title_tokens = self.segmenter.cut(title) if title and scheme == "pos_weighted" else []
        if not extra and has_idf_path(scheme, self.idf, pos):
            n, sim = idf_simhash(tokens, scheme, self.idf, title_tokens)
            if n >= self.config.short_text_features:
                return sim
        hashes, w = word_features(tokens, self.config.weighting, title_tokens=title_tokens, pos=pos,
                                  idf=self.idf, extra=extra)
        if len(hashes) < self.config.short_text_features:
            # Short-text safeguard: too few words for a stable SimHash; character n-grams add votes
            # so one changed character moves a smaller share of them.
            grams = char_ngram_hashes(content.replace(" ", ""), self.config.short_text_ngram)
            hashes = np.concatenate([hashes, grams])
            w = np.concatenate([w, np.ones(len(grams))])
        return simhash(hashes, w)

    def fingerprint(self, doc: Document) -> Fingerprint:
        content, title = self.content_of(doc)
        side = None
        if doc.side:
            items = [f"{k}\x1f{v}" for k, vs in doc.side.items() for v in vs]
            if items:
                side = make_sketch(np.unique(token_hashes(items)), SIDE_SPEC)
        if not content:
            return Fingerprint(doc.id, 0, bytes(16), make_sketch(np.empty(0, np.uint64), self.spec), [],
                               self.schema, self.spec, side, empty=True)
        cfg = self.config
        by_shingles = cfg.simhash_features == "shingles"
        # one compiled call: shingle set -> sketch (exact up to sketch_exact_shingles: exact verification
        # of short texts), bands and (shingles SimHash) its vote, the prefix bands, the content hash and
        # (the default settings) the word SimHash
        codes = code_points(content)
        words = cfg.weighting if self.compiled_words and not doc.fields and not by_shingles else None
        found = document_parts(codes, self.spec, char_n=cfg.char_n, word_n=cfg.word_n, share=cfg.cjk_share,
                               exact_shingles=cfg.sketch_exact_shingles, bands=cfg.bands, rows=cfg.rows,
                               vote=by_shingles, prefix_chars=cfg.prefix_chars, prefix_count=cfg.prefix_bands,
                               prefix_rows=cfg.prefix_rows, words=words, sample=self.sample)
        parts = found.shingles
        bands = parts.bands + found.prefix if found.prefix else parts.bands
        if by_shingles:
            simhash = parts.simhash
        elif found.words is not None and found.words[0] >= cfg.short_text_features:
            simhash = found.words[1]
        else:
            simhash = self._simhash(content, title, doc)
        short = None
        if cfg.short_text_chars and len(compact := content.replace(" ", "")) <= cfg.short_text_chars:
            # Short-text safeguard: one changed character removes up to 5 of ~40 five-grams
            # (Jaccard ~0.73); with 3-grams it is ~0.85, so short texts are verified on 3-grams too.
            short = make_sketch(np.unique(char_ngram_hashes(compact, 3)), SHORT_SPEC)
        return Fingerprint(
            doc_id=doc.id,
            simhash=simhash,
            content_hash=found.content_hash,
            sketch=parts.sketch,
            bands=bands,
            schema=self.schema,
            spec=self.spec,
            side=side,
            short_grams=short,
        )
