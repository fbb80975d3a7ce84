"""``python -m stream ...`` is ``dedup ...`` (for environments without the console script on PATH)."""

from stream.cli import run

run()
