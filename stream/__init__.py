"""Streaming near-duplicate detection for Kafka.

Layers (one folder each): ``text`` (raw document -> normalized text -> features),
``fingerprint`` (features -> SimHash, MinHash sketch, LSH bands), ``index`` (RocksDB block table),
``detect`` (fingerprint + index -> Verdict), ``batch`` (``dedup scan``), ``service`` (Faust worker),
``console`` (the web console). The core (text .. detect) has no Kafka in it. The benchmarks live
outside the package, in ``benchmarks/``.
"""

__version__ = "0.1.0"
