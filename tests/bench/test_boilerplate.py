"""The boilerplate benchmark's re-judging: a pair that is contained only through a footer other documents
share loses its relation once the footer's shingles are frequent; a pair of near copies keeps it; and
counting one document per cluster keeps a page reposted many times from making its own text frequent."""

from benchmarks.accuracy_report import pair
from benchmarks.boilerplate import pair_frequencies, rejudged
from stream.detect.verdict import CONTAINED, SIMILAR

FOOTER = frozenset(f"f{i}" for i in range(80))


def _page(name: str, body: int) -> frozenset[str]:
    return frozenset(f"{name}{i}" for i in range(body)) | FOOTER


def test_a_pair_contained_through_a_shared_footer_loses_its_relation() -> None:
    sets = {"a": _page("a", 10), "b": _page("b", 10), "c": _page("c", 300), "d": _page("d", 300)}
    copy = sets["c"] - {"c0"}
    sets["c2"] = copy
    docs = [{"id": i} for i in ("a", "b", "c", "c2", "d")]
    found = {pair("a", "d"): CONTAINED, pair("c", "c2"): SIMILAR}
    frequencies = pair_frequencies(docs, sets, found, clustered=False)
    assert frequencies[pair("a", "d")]["f0"] == 4 and frequencies[pair("a", "d")]["a0"] == 1
    assert rejudged(found, sets, frequencies, 64) == found  # nothing is that frequent
    assert rejudged(found, sets, frequencies, 3) == {pair("c", "c2"): SIMILAR}  # the footer leaves a's body


def test_counting_one_document_per_cluster_keeps_reposts_from_making_their_text_frequent() -> None:
    page = frozenset(f"p{i}" for i in range(100))
    sets = {f"r{i}": page - {f"p{i}"} for i in range(6)}
    docs = [{"id": f"r{i}"} for i in range(6)]
    found = {pair("r0", f"r{i}"): SIMILAR for i in range(1, 6)}
    every = pair_frequencies(docs, sets, found, clustered=False)
    first = pair_frequencies(docs, sets, found, clustered=True)
    last = pair("r0", "r5")
    assert every[last]["p50"] == 5 and first[last]["p50"] == 1
    assert last not in rejudged(found, sets, every, 4)
    assert rejudged(found, sets, first, 4) == found
