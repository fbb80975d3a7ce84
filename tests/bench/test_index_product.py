"""``python -m benchmarks index``'s product rows: each build is a real one on disk, and a variant's row is its
median build with every build's figure kept."""

from __future__ import annotations

from pathlib import Path

from benchmarks.index_product import median_build, run_product
from benchmarks.streams import stream


def test_the_median_build_is_reported_with_every_build(tmp_path: Path) -> None:
    fps = stream("skewed", 400, near=0.1)
    raws = [fp.to_bytes() for fp in fps]
    builds = [run_product("skewed", fps, raws, "probe_many", 64, 0.1, tmp_path) for _ in range(3)]
    row = median_build(builds)
    assert row.round_us_per_doc == [build.us_per_doc for build in builds]
    assert row.us_per_doc == sorted(row.round_us_per_doc)[1] and row in builds
    assert all(build.matched_docs == row.matched_docs > 0 for build in builds)  # the near copies, every time
    assert list(tmp_path.iterdir()) == []  # every build's index was removed
