"""``python -m tests.harness.warm``: fill numba's on-disk cache with the kernels a worker compiles at start
(the same calls as its warm-up), before the test processes need them.

In a fresh install the first process to call a kernel compiles it (~40 s of CPU for these); every
later one loads it from the cache (~1 s). tests/conftest.py runs this once per session, ahead of the
pytest-xdist workers, so that they and the worker subprocesses they start load the kernels instead of
each compiling them at the same time.
"""

from __future__ import annotations

from stream.detect import warm_up
from stream.fingerprint import Fingerprinter, parse_document
from stream.index import BlockIndex
from stream.service.settings import load_settings
from stream.storage import MemoryStore


def main() -> None:
    settings = load_settings(env={})  # the defaults, as the test deployments run them
    config, matching = settings.fingerprint_config(), settings.match_settings()
    doc = parse_document({"id": "warm-up", "text": "床前明月光，疑是地上霜。举头望明月，低头思故乡。" * 10})
    fp = Fingerprinter(config).fingerprint(doc)
    index = BlockIndex(None, k=matching.k, bands=config.band_tables, store=MemoryStore())
    warm_up(matching.detector(index), fp)


if __name__ == "__main__":
    main()
