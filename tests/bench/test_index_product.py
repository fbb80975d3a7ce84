"""``dedup bench index``'s product rows: each variant builds the stream several times on disk and
reports its median build, every build's figure kept."""

from __future__ import annotations

from pathlib import Path

from stream.bench.index_product import product_rows
from stream.bench.index_runs import fingerprints
from stream.bench.streams import stream


def test_product_rows_report_the_median_build_and_keep_every_build(tmp_path: Path) -> None:
    fps = stream("skewed", 400, near=0.1)
    rows = product_rows("skewed", fps, fingerprints("skewed", 20, seed=2), ["probe_many"], 64, 0.1, tmp_path,
                        budget_s=0.5, min_queries=5, rounds=3)
    ours, peer = rows
    assert ours.variant == "probe_many" and peer.variant == "peer"
    assert len(ours.round_us_per_doc) == 3 and all(us > 0 for us in ours.round_us_per_doc)
    assert ours.us_per_doc == sorted(ours.round_us_per_doc)[1]
    assert ours.matched_docs > 0 and ours.candidates >= ours.matched_docs  # the near copies were found
    assert peer.round_us_per_doc == []
    assert list(tmp_path.iterdir()) == []  # every build's index was removed
