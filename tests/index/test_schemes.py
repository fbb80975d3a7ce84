"""The SimHash block scheme: blocks, payloads, sub-blocks (the split's pigeonhole), dealing many at once."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from stream.index.simhash.schemes import SimhashBlocks, near_equal_widths

MASK = (1 << 64) - 1


def test_block_widths_cover_the_fingerprint() -> None:
    assert near_equal_widths(64, 4) == (16, 16, 16, 16)
    assert near_equal_widths(48, 4) == (12, 12, 12, 12)
    assert near_equal_widths(64, 3) == (22, 21, 21)
    for k in range(1, 12):
        widths = near_equal_widths(64, k + 1)
        assert sum(widths) == 64 and max(widths) - min(widths) <= 1


@settings(max_examples=60, deadline=None)
@given(st.integers(0, MASK), st.sampled_from([1, 2, 3, 5, 7]), st.data())
def test_simhash_payload_round_trips_and_subblocks_are_lossless(fp: int, k: int, data: st.DataObject) -> None:
    block = data.draw(st.integers(0, k))
    scheme = SimhashBlocks(64, k, block)
    top = scheme.top((fp, 0))
    payload = scheme.payload(fp, (fp, 0))
    # Entries keep the block (in the key) and FILTER_BITS more bits; the rest comes from the record.
    assert bin(scheme.filter_mask).count("1") == scheme.width + min(64 - scheme.width, scheme.FILTER_BITS)
    assert scheme.source_of(top, payload) == (fp & scheme.filter_mask, 0)
    assert scheme.decode(top, [payload]).tolist() == [fp & scheme.filter_mask]
    short = SimhashBlocks(32, k, 0)  # fingerprints whose rest fits the filter: nothing dropped
    assert short.exact == (32 - short.width <= short.FILTER_BITS)
    # A neighbour that shares the block shares, at every split level, at least one sub-block.
    flips = data.draw(st.lists(st.integers(0, 63), max_size=k, unique=True))
    other = fp
    for bit in flips:
        other ^= 1 << bit
    if scheme.top((other, 0)) != top:
        return
    mine, theirs = scheme.root_state((fp, 0)), scheme.root_state((other, 0))
    while scheme.groups(mine):
        pairs = [(scheme.child(mine, g), scheme.child(theirs, g)) for g in range(scheme.groups(mine))]
        shared = [g for g, ((v1, _), (v2, _)) in enumerate(pairs) if v1 == v2]
        assert shared, "pigeonhole: one sub-block must match"
        (_, mine), (_, theirs) = pairs[shared[0]]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, MASK), st.sampled_from([1, 2, 3, 5]), st.data())
def test_filter_and_whole_payloads_decode_side_by_side(fp: int, k: int, data: st.DataObject) -> None:
    """Format 5: an unsplit bucket's entries keep a filter, a split one's the whole rest (its
    sub-buckets are rebuilt from it). A split cut short by a crash leaves both kinds in one bucket:
    ``decode`` reads either as the filter, ``decode_whole`` gives back the fingerprint itself."""
    scheme = SimhashBlocks(64, k, data.draw(st.integers(0, k)))
    block = scheme.block_mask << scheme.low
    other = data.draw(st.integers(0, MASK)) & ~block | (fp & block)  # same top-level bucket
    top = scheme.top((fp, 0))
    whole = scheme.whole_payload(fp, (fp, 0))
    assert len(whole) == scheme.whole_len and scheme.source_of(top, whole) == (fp, 0)
    assert scheme.decode_whole(top, [whole]).tolist() == [fp]
    mixed = [scheme.payload(fp, (fp, 0)), scheme.whole_payload(other, (other, 0)), whole]
    assert scheme.decode(top, mixed).tolist() == [fp & scheme.filter_mask, other & scheme.filter_mask,
                                                  fp & scheme.filter_mask]
    assert scheme.leaf_mask(()) == scheme.filter_mask and scheme.leaf_mask((0,)) == MASK


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, MASK), min_size=1, max_size=20), st.sampled_from([1, 2, 3, 5]), st.data())
def test_child_values_deal_many_states_as_child_does_one(fps: list[int], k: int, data: st.DataObject) -> None:
    """A split node deals its entries into sub-buckets with ``child_values`` (numpy, all entries at
    once); it must give what ``child`` gives each state, at every level."""
    scheme = SimhashBlocks(64, k, data.draw(st.integers(0, k)))
    top = scheme.top((fps[0], 0))
    block = scheme.block_mask << scheme.low
    fps = [fp & ~block | (fps[0] & block) for fp in fps]  # one top-level bucket
    states = [scheme.root_state((fp, 0)) for fp in fps]
    rests = scheme.root_rests(top, [scheme.whole_payload(fp, (fp, 0)) for fp in fps])
    assert rests.tolist() == [rest for rest, _ in states]
    while scheme.groups(states[0]):
        group = data.draw(st.integers(0, scheme.groups(states[0]) - 1))
        values, below = scheme.child_values(rests, states[0][1], group)
        children = [scheme.child(state, group) for state in states]
        assert values.tolist() == [int.from_bytes(value, "big") for value, _ in children]
        assert below.tolist() == [rest for _, (rest, _) in children]
        states, rests = [state for _, state in children], below
