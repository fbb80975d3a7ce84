"""Fingerprint layer: a Document -> SimHash, exact content hash, verification sketch, LSH bands.

``__all__`` is what other layers use.
"""

from stream.fingerprint.document import DELETE, Document, decode_utf8, parse_document
from stream.fingerprint.fingerprint import Fingerprint, split_bands, without_bands
from stream.fingerprint.fingerprinter import Fingerprinter
from stream.fingerprint.schema import SIMHASH_FEATURES, FingerprintConfig, schema_changes
from stream.fingerprint.similarity import Overlap, overlap, similarity

__all__ = ["DELETE", "SIMHASH_FEATURES", "Document", "Fingerprint", "FingerprintConfig", "Fingerprinter", "Overlap",
           "decode_utf8", "overlap", "parse_document", "schema_changes", "similarity", "split_bands",
           "without_bands"]
