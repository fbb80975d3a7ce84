"""``TableLayout``: the hot paths' arithmetic equals the schemes' own methods; routing needs no index."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.index import TableLayout

MASK = (1 << 64) - 1


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, MASK), min_size=1, max_size=20), st.sampled_from([1, 2, 3, 5, 7]))
def test_root_keys_payloads_and_block_values_equal_the_schemes(fps: list[int], k: int) -> None:
    """k = 3 takes the byte-slice path (16-bit blocks), the others the shift path."""
    layout = TableLayout(k=k)
    array = np.array(fps, dtype=np.uint64)
    for fp in fps:
        source = (fp, 0)
        assert layout.root_keys(fp) == [bytes([t]) + s.top(source) for t, s in enumerate(layout.simhash)]
        assert layout.root_payloads(fp) == [s.payload(fp, source) for s in layout.simhash]
    for t, scheme in enumerate(layout.simhash):
        tops = [int.from_bytes(scheme.top((fp, 0)), "big") for fp in fps]
        assert layout.block_values(t, array).tolist() == tops
        payloads = [int.from_bytes(scheme.payload(fp, (fp, 0)), "big") for fp in fps]
        assert scheme.payload_values(array).tolist() == payloads


def test_routing_keys_are_a_function_of_the_layout() -> None:
    layout = TableLayout(k=3, bands=2)
    fp = 0xABCD_0123_4567_89EF
    routes = layout.routing_keys(fp, [(7, 1), (2**64 - 1, 0)])
    assert routes == [(0, b"\x00\xab\xcd"), (1, b"\x01\x01\x23"), (2, b"\x02\x45\x67"), (3, b"\x03\x89\xef"),
                      (4, b"\x04" + (7).to_bytes(8, "big")), (5, b"\x05" + b"\xff" * 8)]
    assert layout.routing_keys(fp) == routes[:4]  # no bands: no band tables
    assert layout == TableLayout(k=3, bands=2) and layout != TableLayout(k=3, bands=1)
    with pytest.raises(ValueError, match="bands"):
        layout.routing_keys(fp, [(1, 0)])
    with pytest.raises(ValueError, match="64-bit"):
        layout.routing_keys(1 << 64)


def test_a_layout_refuses_more_tables_or_bands_than_records_hold() -> None:
    with pytest.raises(ValueError, match="tables"):
        TableLayout(k=3, bands=0xFC)
    with pytest.raises(ValueError, match="bands"):
        TableLayout(k=3, bands=0x80)
    with pytest.raises(ValueError, match="k"):
        TableLayout(k=64)
