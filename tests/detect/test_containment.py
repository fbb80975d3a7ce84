"""Containment: the estimate against exact set arithmetic, the relation rule at its edges, and a
truncated repost found through the index (not a scan) and reported as contained."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from stream.detect import Detector
from stream.detect.detector import CONTAINMENT_MIN_SHINGLES, relation
from stream.detect.verdict import CONTAINED, SIMILAR
from stream.fingerprint import FingerprintConfig, Fingerprinter, parse_document
from stream.fingerprint.fingerprint import Fingerprint
from stream.fingerprint.scores import Overlap, combined, overlap
from stream.fingerprint.sketch import (
    EXACT,
    NO_SAMPLE,
    SAMPLE_MIN,
    Sketch,
    SketchSpec,
    containment_error,
    containment_in_sample,
    containment_in_sketch,
    estimate_containment,
    estimate_jaccard,
    make_sketch,
    sketch_anchors,
)
from stream.index import DEFAULT_ANCHOR_CAP, BlockIndex

SPEC = SketchSpec()


def hashes(lo: int, hi: int) -> np.ndarray:
    """Distinct, well-spread 64-bit values for the integers lo..hi-1 (a stand-in for shingle hashes)."""
    x = np.arange(lo, hi, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    x ^= x >> np.uint64(29)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    return np.unique(x ^ (x >> np.uint64(32)))


@pytest.mark.parametrize(("small", "large", "shared"), [(60, 100, 60), (60, 100, 45), (40, 120, 40), (1, 100, 1)])
def test_exact_sketches_give_the_exact_containment(small: int, large: int, shared: int) -> None:
    a = make_sketch(hashes(0, small), SPEC)
    b = make_sketch(np.unique(np.concatenate([hashes(0, shared), hashes(10**6, 10**6 + large - shared)])), SPEC)
    assert a.kind == b.kind == 0  # both fit the byte budget: exact
    assert estimate_containment(a, b, SPEC) == pytest.approx(shared / small)
    assert estimate_containment(b, a, SPEC) == pytest.approx(shared / small)  # symmetric: the smaller's share


@pytest.mark.parametrize(("small", "large", "shared"), [(2000, 4000, 2000), (2000, 6000, 1800), (3000, 3500, 2400),
                                                         (1000, 3000, 300)])
def test_bbit_sketches_estimate_containment_from_jaccard_and_sizes(small: int, large: int, shared: int) -> None:
    a_set = np.unique(np.concatenate([hashes(0, shared), hashes(5 * 10**6, 5 * 10**6 + small - shared)]))
    b_set = np.unique(np.concatenate([hashes(0, shared), hashes(10**6, 10**6 + large - shared)]))
    a, b = make_sketch(a_set, SPEC), make_sketch(b_set, SPEC)
    assert a.kind == b.kind == 1  # too big for the budget: 4,096 one-bit MinHash values
    exact_j = shared / (small + large - shared)
    assert estimate_jaccard(a, b, SPEC) == pytest.approx(exact_j, abs=0.04)
    # the estimate's error grows with the size ratio: (1 + r) / (1 + J)^2 times the Jaccard error
    assert estimate_containment(a, b, SPEC) == pytest.approx(shared / small, abs=0.08)


def test_relation_rule_at_its_edges() -> None:
    def rel(score: float, containment: float, smaller: int = 500) -> str | None:
        return relation(Overlap(score, containment, smaller), 0.8, 0.8, 100)

    assert rel(0.8, 0.0) == SIMILAR  # the threshold itself is similar
    assert rel(0.7999, 0.8) == CONTAINED  # below the threshold, containment at its own threshold
    assert rel(0.7999, 0.7999) is None
    assert rel(0.5, 1.0, smaller=99) is None  # the shorter text is too short to be "contained"
    assert rel(0.5, 1.0, smaller=100) == CONTAINED
    assert relation(Overlap(0.5, 1.0, 500), 0.8, 0.0, 100) is None  # containment threshold 0: rule off


ARTICLE = (
    "从今年春天开始，老城区的十二个社区试行了一套新的垃圾分类办法。与过去只在小区门口摆放四色垃圾桶不同，"
    "这次每栋楼都配备了一名分类督导员，在早晚投放高峰时段现场指导居民。据街道办事处统计，试点前居民正确分类的"
    "比例不到三成，三个月后已经超过六成。厨余垃圾的日均收运量从四吨增加到九吨，进入焚烧厂的其他垃圾相应减少了"
    "约百分之十五。督导员大多是社区里的退休职工，她们每天早上七点就站在楼下，一袋一袋地帮着居民拆开重新分。"
    "一些居民反映，厨余垃圾桶只在固定时段开放，上班族晚上回家时往往已经关闭；也有人质疑，分好的垃圾在运输环节"
    "会不会又被混在一起。对此，区环卫部门表示，已经为厨余垃圾安排了专门的收运车辆，并在车身上标注了类别。"
    "专家认为，垃圾分类的关键不在于设施，而在于持续的宣传和反馈。如果居民能看到自己分出的厨余垃圾最终变成了"
    "肥料，参与的积极性自然会更高。下一步，试点范围将扩大到全区四十个社区，并引入积分奖励，让坚持分类的家庭"
    "可以用积分兑换生活用品，街道也将每月公布各小区的分类成绩，接受居民监督。"
    "在城东的一个老旧小区，楼道里原本堆满了纸箱和旧家具。试点开始后，物业和志愿者一起清理了楼道，在每个单元门口"
    "设置了可回收物的临时存放点，每周二和周五由回收企业上门收走。居民说，以前觉得分类是给自己添麻烦，现在发现"
    "楼道干净了，卖废品还能换点零钱，大家的态度慢慢就变了。社区还在活动室开设了旧物交换角，闲置的儿童读物、"
    "厨房用具和小家电可以在这里找到新的主人，每个月都有上百件物品被重新利用。"
)
EXCERPT = "转载自东方新闻网。" + ARTICLE[:430]  # a repost line, then the first two thirds: Jaccard ~0.65


def test_a_truncated_repost_is_found_through_the_index_as_contained() -> None:
    fingerprinter = Fingerprinter(FingerprintConfig(segmenter="jieba"))
    index = BlockIndex(None, k=3, bands=fingerprinter.config.band_tables)
    detector = Detector(index)
    original = fingerprinter.fingerprint(parse_document({"id": "orig", "text": ARTICLE}))
    repost = fingerprinter.fingerprint(parse_document({"id": "repost", "text": EXCERPT}))
    assert detector.probe(original, (0.0, "orig")) == []
    (match,) = detector.probe(repost, (1.0, "repost"))  # probe only queries the index: a band collided
    assert match.id == "orig" and match.relation == CONTAINED
    assert match.similarity < 0.8 <= match.containment
    assert match.to_json()["relation"] == "contained" and 0.8 <= match.to_json()["containment"] <= 1.0
    # the two share the first 400 characters but a repost line: they collide in a prefix band table
    whole = fingerprinter.config.bands
    assert any(x == y for x, y in zip(original.bands[whole:], repost.bands[whole:], strict=True))


def test_containment_off_reports_only_similar_pairs() -> None:
    fingerprinter = Fingerprinter(FingerprintConfig(segmenter="jieba"))
    detector = Detector(BlockIndex(None, k=3, bands=fingerprinter.config.band_tables), containment_threshold=0.0)
    detector.probe(fingerprinter.fingerprint(parse_document({"id": "orig", "text": ARTICLE})), (0.0, "orig"))
    repost = fingerprinter.fingerprint(parse_document({"id": "repost", "text": EXCERPT}))
    assert detector.probe(repost, (1.0, "repost")) == []


# An English article of ~170 words (written for this test) and its repost: the end cut, an ad inserted.
SHORT_ARTICLE = (
    "The city library opened its new reading room on Monday after two years of renovation work.\n"
    "The room has forty desks, each with a lamp and a power outlet, and a wall of windows that faces the "
    "old harbour. Librarians moved about twelve thousand books from the basement store, most of them local "
    "history, maps and bound newspapers that readers could only order in advance until now.\n"
    "Visitors can borrow a laptop at the front desk for up to three hours, and a volunteer helps older "
    "readers with the online catalogue every Tuesday and Thursday morning. The library also extended its "
    "opening hours: it now closes at nine in the evening on weekdays and at six on Saturdays.\n"
    "The renovation was paid for by the city and a regional heritage fund. The architects kept the original "
    "oak shelves and the painted ceiling, which restorers cleaned by hand over several months.\n"
    "A small exhibition about the history of the building runs in the entrance hall until the end of the "
    "summer, with photographs of the harbour and of the first readers a century ago."
)
AD = "Advertisement: Master Python in 30 days with our interactive course. Enroll today and save 40%."


def _short_repost() -> str:
    paras = SHORT_ARTICLE.split("\n")
    cut = [*paras[:-2], paras[-2].split(",")[0] + "."]  # the last paragraph gone, the one before it cut
    return "\n".join([*cut[:2], AD, *cut[2:]])


def test_a_short_repost_with_a_cut_and_an_ad_is_found() -> None:
    fingerprinter = Fingerprinter(FingerprintConfig(segmenter="jieba"))
    detector = Detector(BlockIndex(None, k=3, bands=fingerprinter.config.band_tables))
    original = fingerprinter.fingerprint(parse_document({"id": "orig", "text": SHORT_ARTICLE}))
    repost = fingerprinter.fingerprint(parse_document({"id": "repost", "text": _short_repost()}))
    assert 128 < original.sketch.size < 200  # above what 512 bytes hold, below the old 200-shingle minimum
    assert original.sketch.kind == repost.sketch.kind == EXACT  # so the containment is exact
    detector.probe(original, (0.0, "orig"))
    (match,) = detector.probe(repost, (1.0, "repost"))
    assert match.id == "orig" and match.relation == CONTAINED
    assert match.similarity < 0.8 <= match.containment


def _words(rng: np.random.Generator, n: int) -> str:
    vocabulary = [f"w{i}" for i in range(4000)]
    return " ".join(vocabulary[i] for i in rng.integers(0, len(vocabulary), n))


@pytest.mark.parametrize("sampled", [False, True])
def test_a_long_document_does_not_contain_short_ones_it_does_not_contain(sampled: bool) -> None:
    # without hash samples only the two sketches' estimate is left, and the margin is the guard;
    # with them (the default) the short text's own sampled hashes are counted in the long one's
    config = FingerprintConfig(segmenter="jieba", sketch_sample_from=FingerprintConfig.sketch_sample_from * sampled)
    fingerprinter = Fingerprinter(config)
    rng = np.random.default_rng(7)
    long_doc = fingerprinter.fingerprint(parse_document({"id": "long", "text": _words(rng, 40_000)}))
    estimates = []
    for i in range(40):
        short = fingerprinter.fingerprint(parse_document({"id": f"s{i}", "text": _words(rng, 600)}))
        assert short.sketch.size > 512  # estimated, not exact
        ov = overlap(long_doc, short)
        estimates.append(ov.containment)
        # the two share next to no word 3-gram; the estimate at a size ratio of ~65 is mostly error
        assert relation(ov, 0.8, 0.8, CONTAINMENT_MIN_SHINGLES) is None
        assert ov.containment_sampled is sampled
        assert (ov.containment_error < 0.1) if sampled else (ov.containment_error > 0.3)
    if sampled:
        assert max(estimates) < 0.3
    else:
        assert max(estimates) >= 0.8  # without the margin some of them would be "contained"


def test_shared_boilerplate_does_not_make_two_different_pages_contained() -> None:
    fingerprinter = Fingerprinter(FingerprintConfig(segmenter="jieba"))
    rng = np.random.default_rng(11)
    footer = _words(rng, 190)  # a family's long footer: three quarters of each page
    pages = [fingerprinter.fingerprint(parse_document({"id": f"p{i}", "text": _words(rng, 60) + " " + footer}))
             for i in range(12)]
    for a, b in itertools.combinations(pages, 2):
        assert a.sketch.kind == b.sketch.kind == EXACT
        ov = overlap(a, b)
        assert ov.containment_error == 0.0 and 0.7 < ov.containment < 0.8  # exact: the footer's share
        assert relation(ov, 0.8, 0.8, CONTAINMENT_MIN_SHINGLES) is None


@pytest.mark.parametrize(("inside", "contained"), [(300, True), (0, False), (60, False)])
def test_a_short_set_is_tested_against_a_long_sketch(inside: int, contained: bool) -> None:
    # 300 shingles against 12,000: Broder's estimate has an error of ~0.5 there; testing the short
    # set's own shingles against the long sketch's minimums has ~0.15
    long_set = hashes(0, 12_000)
    short_set = np.unique(np.concatenate([hashes(0, inside), hashes(10**8, 10**8 + 300 - inside)]))
    long_sketch, short_sketch = make_sketch(long_set, SPEC), make_sketch(short_set, SPEC, 512)
    assert long_sketch.kind == 1 and short_sketch.kind == EXACT
    tested = containment_in_sketch(short_sketch, long_sketch, SPEC)
    assert tested is not None
    estimate, error = tested
    assert estimate == pytest.approx(inside / 300, abs=3 * error)
    broder = containment_error(short_sketch, long_sketch, SPEC, estimate_jaccard(short_sketch, long_sketch, SPEC))
    assert error < 0.2 < broder
    ov = Overlap(0.0, estimate, 300, error)
    assert (relation(ov, 0.8, 0.8, CONTAINMENT_MIN_SHINGLES) == CONTAINED) is contained
    assert containment_in_sketch(short_sketch, make_sketch(hashes(0, 3_000), SPEC), SPEC) is None  # too few per bin


SAMPLE = FingerprintConfig().sample  # the default: sets of 513+ shingles keep a quarter, at most 2,048


def test_a_long_set_keeps_every_hash_below_its_sample_bound() -> None:
    for size, lowered in [(400, False), (600, False), (6_000, False), (12_000, True)]:
        long_set = hashes(0, size)
        sketch = make_sketch(long_set, SPEC, 512, SAMPLE)
        h32 = np.unique((long_set >> np.uint64(32)).astype(np.uint32))
        if size < SAMPLE.from_shingles:
            assert sketch.kind == EXACT and sketch.sample is None and sketch.sample_below == 0
            continue
        assert sketch.sample is not None
        assert np.array_equal(sketch.sample, h32[h32 < sketch.sample_below])  # all of them, and only them
        assert len(sketch.sample) <= SAMPLE.most
        assert (sketch.sample_below < SAMPLE.below) is lowered  # 12,000 / 4 > 2,048: the bound comes down
        back = Sketch.from_bytes(sketch.to_bytes(SPEC), SPEC)
        assert back.sample is not None and np.array_equal(back.sample, sketch.sample)
        assert back.sample_below == sketch.sample_below and np.array_equal(back.data, sketch.data)
    plain = make_sketch(hashes(0, 12_000), SPEC, 512)
    assert Sketch.from_bytes(plain.to_bytes(SPEC), SPEC).sample is None  # a sketch stored without one


@pytest.mark.parametrize(("inside", "contained"), [(300, True), (285, True), (230, False), (60, False), (0, False)])
def test_a_short_set_is_tested_against_a_long_sample(inside: int, contained: bool) -> None:
    # 300 shingles against 12,000: ~50 of them fall under the sample bound and are tested exactly
    long_sketch = make_sketch(hashes(0, 12_000), SPEC, 512, SAMPLE)
    short_set = np.unique(np.concatenate([hashes(0, inside), hashes(10**8, 10**8 + 300 - inside)]))
    short_sketch = make_sketch(short_set, SPEC, 512, SAMPLE)
    tested = containment_in_sample(short_sketch, long_sketch)
    assert tested is not None
    estimate, error = tested
    assert estimate == pytest.approx(inside / 300, abs=max(0.02, 3 * error))
    one_bit = containment_in_sketch(short_sketch, long_sketch, SPEC)
    assert one_bit is not None and error < 0.07 < one_bit[1]
    assert (relation(Overlap(0.0, estimate, 300, error), 0.8, 0.8, CONTAINMENT_MIN_SHINGLES) == CONTAINED) is contained


def test_a_sample_test_needs_enough_hashes_and_a_sample() -> None:
    long_sketch = make_sketch(hashes(0, 12_000), SPEC, 512, SAMPLE)
    tiny = make_sketch(hashes(0, 40), SPEC, 512)  # ~7 hashes under the bound: fewer than SAMPLE_MIN
    assert len(tiny.data[tiny.data < long_sketch.sample_below]) < SAMPLE_MIN
    assert containment_in_sample(tiny, long_sketch) is None
    assert containment_in_sample(make_sketch(hashes(0, 300), SPEC, 512), make_sketch(hashes(0, 12_000), SPEC)) is None


def test_two_long_sets_are_compared_under_the_lower_bound() -> None:
    a_set = np.unique(np.concatenate([hashes(0, 4_500), hashes(10**8, 10**8 + 500)]))  # 90% in b
    a, b = make_sketch(a_set, SPEC, 512, SAMPLE), make_sketch(hashes(0, 40_000), SPEC, 512, SAMPLE)
    assert a.sample is not None and b.sample is not None and b.sample_below < a.sample_below
    tested = containment_in_sample(a, b)
    assert tested is not None
    assert tested[0] == pytest.approx(0.9, abs=3 * tested[1]) and tested[1] < 0.05


def _article(rng: np.random.Generator, n: int) -> str:
    return _words(rng, n).replace("w", "x")  # a vocabulary of its own: no shared 3-gram with _words by chance


def test_a_short_page_inside_a_long_archive_is_contained() -> None:
    # a 250-word page at the start of a 12,000-word archive (so a prefix band collides): the archive's
    # sample tests the page's own shingles; another page with the same first words is not contained
    fingerprinter = Fingerprinter(FingerprintConfig(segmenter="jieba"))
    rng = np.random.default_rng(5)
    page, other, rest = _article(rng, 250), _article(rng, 250), _words(rng, 12_000)
    head = " ".join(page.split()[:60])
    docs = {"archive": page + " " + rest, "page": page, "other": head + " " + other}
    detector = Detector(BlockIndex(None, k=3, bands=fingerprinter.config.band_tables))
    fps: dict[str, Fingerprint] = {}
    found = {}
    for seq, (doc_id, text) in enumerate(docs.items()):
        fps[doc_id] = fingerprinter.fingerprint(parse_document({"id": doc_id, "text": text}))
        found[doc_id] = detector.probe(fps[doc_id], (float(seq), doc_id))
    assert fps["archive"].sketch.sample is not None and fps["page"].sketch.kind == EXACT
    (match,) = found["page"]
    assert match.id == "archive" and match.relation == CONTAINED
    ov = overlap(fps["page"], fps["archive"])
    assert ov.containment_error < 0.07  # from the sample: the b-bit bins alone give ~0.15
    assert all(m.id != "archive" for m in found["other"])
    assert overlap(fps["other"], fps["archive"]).containment < 0.5


def test_anchors_are_the_hashes_under_one_bound_a_sketch_keeps() -> None:
    """``sketch_anchors``: every hash below 2^32 / 16 of an exact sketch or of a sample (under the
    sample's bound when it is lower), so two sets' common anchors are common shingles; none for a
    b-bit sketch without a sample."""
    bound = (1 << 32) // 16
    for size, kept in [(400, "exact"), (3_000, "none"), (3_000, "sample"), (40_000, "lowered")]:
        long_set = hashes(0, size)
        h32 = np.unique((long_set >> np.uint64(32)).astype(np.uint32))
        anchors, below = sketch_anchors(make_sketch(long_set, SPEC, 512, NO_SAMPLE if kept == "none" else SAMPLE), 16)
        if kept == "none":
            assert len(anchors) == 0 and below == 0
            continue
        assert below == (bound if kept != "lowered" else int(h32[SAMPLE.most - 1]) + 1) and below <= bound
        assert np.array_equal(anchors, h32[h32 < below])
    short, long = (make_sketch(hashes(lo, hi), SPEC, 512, SAMPLE) for lo, hi in [(5_000, 5_300), (0, 10_000)])
    common = np.intersect1d(sketch_anchors(short, 16)[0], sketch_anchors(long, 16)[0])
    assert np.array_equal(common, sketch_anchors(short, 16)[0])  # all of a contained set's anchors


@pytest.mark.parametrize(("sampled", "contained"), [(True, True), (False, False)])
def test_a_count_on_a_hash_sample_clears_the_threshold_by_a_smaller_margin(sampled: bool, contained: bool) -> None:
    # 0.85 with an error of 0.067 (~40 hashes tested): 0.85 - 0.5 x 0.067 = 0.817 clears 0.8, and
    # 0.85 - 0.75 x 0.067 = 0.800 (below it by 0.0003) does not
    ov = Overlap(0.0, 0.85, 300, 0.067, sampled)
    assert (relation(ov, 0.8, 0.8, CONTAINMENT_MIN_SHINGLES) == CONTAINED) is contained
    assert relation(ov, 0.8, 0.8, CONTAINMENT_MIN_SHINGLES, margin=0.0) == CONTAINED  # a lower margin stays


def test_a_short_page_inside_a_mid_size_link_list_is_proposed_and_contained() -> None:
    # a section index of ~1,500 words (513-4,095 shingles: once neither exact nor sampled, so it had no
    # anchors and only the b-bit estimate, error ~0.4) and a 150-word page from its middle: no band
    # collides at J ~0.1, so only the anchor table can propose the pair, and the index's own sample
    # verifies it; a page of other words is neither proposed nor contained
    fingerprinter = Fingerprinter(FingerprintConfig(segmenter="jieba"))
    rng = np.random.default_rng(13)
    listing = _article(rng, 1_500).split()
    docs = {"index": " ".join(listing), "page": " ".join(listing[700:850]), "other": _words(rng, 150)}
    detector = Detector(BlockIndex(None, k=3, bands=fingerprinter.config.band_tables), anchor_cap=DEFAULT_ANCHOR_CAP)
    fps = {doc_id: fingerprinter.fingerprint(parse_document({"id": doc_id, "text": text}))
           for doc_id, text in docs.items()}
    assert 512 < fps["index"].sketch.size < 4_096
    assert fps["index"].sketch.sample is not None and len(fps["index"].anchors()[0]) > 0
    found = {doc_id: detector.probe(fp, (float(seq), doc_id)) for seq, (doc_id, fp) in enumerate(fps.items())}
    (match,) = found["page"]
    assert match.id == "index" and match.relation == CONTAINED
    assert overlap(fps["page"], fps["index"]).containment_sampled
    assert found["other"] == []


def test_the_bins_and_the_sample_are_combined_by_inverse_variance() -> None:
    # a 250-word page, 215 of its words from a 700-word text (a b-bit sketch with a sample): the
    # estimate from the bins and the count on the sample are two estimates of one containment
    fingerprinter = Fingerprinter(FingerprintConfig(segmenter="jieba"))
    rng = np.random.default_rng(17)
    words = _article(rng, 700).split()
    long, short = (fingerprinter.fingerprint(parse_document({"id": doc_id, "text": text})) for doc_id, text in
                   [("long", " ".join(words)), ("short", " ".join(words[300:515]) + " " + _words(rng, 35))])
    assert long.sketch.sample is not None and short.sketch.kind == EXACT
    jaccard = estimate_jaccard(short.sketch, long.sketch, SPEC)
    bins = (estimate_containment(short.sketch, long.sketch, SPEC, jaccard),
            containment_error(short.sketch, long.sketch, SPEC, jaccard))
    counted = containment_in_sample(short.sketch, long.sketch)
    assert counted is not None
    ov = overlap(short, long)
    assert ov.containment_error < min(bins[1], counted[1])
    assert (ov.containment, ov.containment_error) == pytest.approx(combined(bins, counted)[0])
    assert min(bins[0], counted[0]) <= ov.containment <= max(bins[0], counted[0])


def test_a_sample_count_that_lands_low_is_held_up_by_the_bins() -> None:
    # a pair of exact containment 0.86 (a 271-shingle page, a 546-shingle one): the sample counted
    # 57 of 70 (0.814 +- 0.040: under 0.8 by half its error alone), the bins 0.857 +- 0.059
    (value, error), sampled = combined((0.857, 0.059), (0.814, 0.040))
    assert sampled and 0.814 < value < 0.857 and error < 0.040
    assert relation(Overlap(0.4, 0.814, 271, 0.040, True), 0.8, 0.8, CONTAINMENT_MIN_SHINGLES) is None
    assert relation(Overlap(0.4, value, 271, error, sampled), 0.8, 0.8, CONTAINMENT_MIN_SHINGLES) == CONTAINED
    assert combined((0.9, 0.2), (0.5, 0.0)) == ((0.5, 0.0), True)  # every hash tested: exact


def test_the_sample_is_counted_only_near_the_threshold_asked_about() -> None:
    # two 700-word texts sharing half their words: the bins put the containment near 0.5 with an
    # error ~0.02, far below 0.8, so with ``near`` the sample is not counted; a page inside one of
    # them is near (or above) it, and gets the same answer with and without ``near``
    fingerprinter = Fingerprinter(FingerprintConfig(segmenter="jieba"))
    rng = np.random.default_rng(19)
    words = _article(rng, 700).split()
    a, b, page = (fingerprinter.fingerprint(parse_document({"id": doc_id, "text": text})) for doc_id, text in
                  [("a", " ".join(words)), ("b", " ".join(words[:350]) + " " + _words(rng, 350)),
                   ("page", " ".join(words[200:420]))])
    far, asked = overlap(a, b), overlap(a, b, near=0.8)
    assert far.containment_sampled and not asked.containment_sampled
    assert asked.containment + 3 * asked.containment_error < 0.8
    for ov in (far, asked):
        assert relation(ov, 0.8, 0.8, CONTAINMENT_MIN_SHINGLES) is None
    assert overlap(page, a) == overlap(page, a, near=0.8) and overlap(page, a).containment_sampled


@pytest.mark.parametrize("every", [7, 40, 300])
def test_a_pair_s_figures_do_not_depend_on_which_side_is_the_query(every: int) -> None:
    """``overlap(a, b) == overlap(b, a)``: the worker meets a pair from either side (a revision comes
    from the later-arriving one), so an estimate that followed the argument order made verdicts
    depend on arrival order, hence on the partition layout. Edits that keep the shingle count: the
    two sketches are of one size, where the smaller side was the first argument."""
    rng = np.random.default_rng(every)
    words = [f"w{n}" for n in rng.integers(0, 50_000, 6_000)]
    edited = [f"x{n}" if n % every == 0 else word for n, word in enumerate(words)]
    fingerprinter = Fingerprinter(FingerprintConfig())
    a, b = (fingerprinter.fingerprint(parse_document({"id": name, "text": " ".join(text)}))
            for name, text in (("a", words), ("b", edited)))
    assert a.sketch.size == b.sketch.size
    assert overlap(a, b, SPEC, near=0.7) == overlap(b, a, SPEC, near=0.7)
    assert overlap(a, b, SPEC) == overlap(b, a, SPEC)
