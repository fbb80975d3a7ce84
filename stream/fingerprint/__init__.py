"""Fingerprint layer: a Document -> SimHash, exact content hash, verification sketch, LSH bands."""

from stream.fingerprint.document import Document, parse_document
from stream.fingerprint.fingerprint import Fingerprint, split_bands, without_bands
from stream.fingerprint.fingerprinter import Fingerprinter
from stream.fingerprint.schema import FingerprintConfig
from stream.fingerprint.similarity import similarity

__all__ = ["Document", "Fingerprint", "FingerprintConfig", "Fingerprinter", "parse_document", "similarity",
           "split_bands", "without_bands"]
