"""Fingerprint layer: a Document -> SimHash, exact content hash, verification sketch, LSH bands.

``__all__`` is what other layers use. The names load on first use (PEP 562), so that reading the
settings or a document does not load numba.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stream.exports import lazy_exports

if TYPE_CHECKING:
    from stream.fingerprint.document import DELETE, Document, decode_utf8, parse_document
    from stream.fingerprint.fingerprint import Fingerprint, split_bands, without_bands
    from stream.fingerprint.fingerprinter import Fingerprinter
    from stream.fingerprint.schema import SIMHASH_FEATURES, FingerprintConfig, schema_changes
    from stream.fingerprint.scores import Overlap, overlap, similarity

_MODULE_OF = {
    **dict.fromkeys(["DELETE", "Document", "decode_utf8", "parse_document"], "document"),
    **dict.fromkeys(["Fingerprint", "split_bands", "without_bands"], "fingerprint"),
    "Fingerprinter": "fingerprinter",
    **dict.fromkeys(["SIMHASH_FEATURES", "FingerprintConfig", "schema_changes"], "schema"),
    **dict.fromkeys(["Overlap", "overlap", "similarity"], "scores"),
}
__getattr__ = lazy_exports(__name__, _MODULE_OF)

__all__ = ["DELETE", "SIMHASH_FEATURES", "Document", "Fingerprint", "FingerprintConfig", "Fingerprinter", "Overlap",
           "decode_utf8", "overlap", "parse_document", "schema_changes", "similarity", "split_bands",
           "without_bands"]
