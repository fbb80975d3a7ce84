"""InputLedger: positions per input partition, gaps found, seeks asked for, lagging writes."""

from stream.service.runtime.ledger import TP, InputLedger, decode_position, encode_position, ledger_key

A, B = ("documents", 0), ("documents", 1)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_contiguous_records_pass_and_positions_advance() -> None:
    ledger = InputLedger(lambda tp: {A: 10}.get(tp))
    keep, seeks = ledger.admit([(A, 10), (A, 11), (B, 5), (B, 6)])
    assert keep == [True] * 4 and seeks == {}
    assert ledger.to_write() == {}  # nothing delivered yet
    ledger.delivered()
    assert ledger.to_write() == {A: 12, B: 7}  # written with the next batch, after delivery


def test_a_skipped_range_is_refetched_and_later_records_wait() -> None:
    ledger = InputLedger(lambda tp: 10)
    keep, seeks = ledger.admit([(A, 10), (A, 14), (A, 15)])
    assert keep == [True, False, False] and seeks == {A: 11}
    # records fetched before the seek arrive first: left out, no second seek
    keep, seeks = ledger.admit([(A, 16)])
    assert keep == [False] and seeks == {}
    # the refetch: 11.. in order, then the rest again
    keep, seeks = ledger.admit([(A, 11), (A, 12), (A, 13), (A, 14), (A, 15), (A, 16)])
    assert all(keep) and seeks == {}
    ledger.delivered()
    assert ledger.to_write() == {A: 17}
    assert ledger.gaps_found == 1 and ledger.gaps_accepted == 0


def test_redelivered_records_are_processed_again_without_moving_back() -> None:
    ledger = InputLedger(lambda tp: 20)
    keep, seeks = ledger.admit([(A, 18), (A, 19), (A, 20)])
    assert all(keep) and seeks == {}
    ledger.delivered()
    assert ledger.to_write() == {A: 21}


def test_unknown_partition_accepts_the_first_offset() -> None:
    ledger = InputLedger(lambda tp: None)
    keep, seeks = ledger.admit([(A, 500), (A, 501)])
    assert all(keep) and seeks == {}


def test_a_gap_that_persists_is_retried_then_accepted() -> None:
    clock = Clock()
    ledger = InputLedger(lambda tp: 0, retry_after=1.0, max_attempts=3, clock=clock)
    assert ledger.admit([(A, 5)]) == ([False], {A: 0})
    clock.now = 0.5
    assert ledger.admit([(A, 5)]) == ([False], {})  # too soon to seek again
    clock.now = 1.5
    assert ledger.admit([(A, 5)]) == ([False], {A: 0})  # attempt 2
    clock.now = 3.0
    assert ledger.admit([(A, 5)]) == ([False], {A: 0})  # attempt 3
    clock.now = 4.5
    keep, seeks = ledger.admit([(A, 5), (A, 6)])  # still no 0..4: compacted or deleted
    assert keep == [True, True] and seeks == {}
    assert ledger.gaps_accepted == 1


def test_positions_of_an_undelivered_batch_are_never_written() -> None:
    ledger = InputLedger(lambda tp: 0)
    ledger.admit([(A, 0), (A, 1)])
    ledger.delivered()
    assert ledger.to_write() == {A: 2}  # goes out with batch 2
    ledger.admit([(A, 2)])  # batch 2: not delivered (crash) -> its position is not written
    assert ledger.to_write() == {}


def test_revoked_partitions_reload_their_position() -> None:
    stored = {A: 3}
    ledger = InputLedger(stored.get)
    ledger.admit([(A, 3)])
    ledger.delivered()
    ledger.forget([A])
    assert ledger.to_write() == {}
    stored[A] = 50  # another worker moved it on
    assert ledger.admit([(A, 40)]) == ([True], {})  # a redelivery below the stored position


def test_position_bytes_and_key() -> None:
    assert decode_position(encode_position(123456789)) == 123456789
    assert decode_position(None) is None
    assert ledger_key("documents").startswith(b"\xff\xfe")
    try:
        b"\xff\xfe".decode("utf-8")
        raise AssertionError("0xFF 0xFE must not be UTF-8, so no doc id key can collide")
    except UnicodeDecodeError:
        pass


def test_an_open_gap_is_sought_again_on_the_timer_without_new_records() -> None:
    clock = Clock()
    ledger = InputLedger(lambda tp: 0, retry_after=1.0, max_attempts=2, clock=clock)
    assert ledger.admit([(A, 5), (A, 6)]) == ([False, False], {A: 0})
    assert ledger.due() == {}  # too soon
    clock.now = 1.5
    assert ledger.due() == {A: 0}  # attempt 2, with no record arriving
    clock.now = 3.0
    assert ledger.due() == {}  # attempts used up: the next record past the gap is accepted
    assert ledger.admit([(A, 0)]) == ([True], {})  # or the re-read arrives and closes it
    assert ledger.due() == {}


def test_positions_are_written_at_most_every_save_every_and_never_ahead_of_delivery() -> None:
    clock = Clock()
    ledger = InputLedger(lambda tp: 0, save_every=1.0, clock=clock)
    ledger.admit([(A, 0)])
    ledger.delivered()
    assert ledger.to_write() == {A: 1}  # the first position goes out at once
    ledger.delivered()
    for offset in (1, 2, 3):  # three delivered batches within the second: nothing written
        clock.now += 0.2
        ledger.admit([(A, offset)])
        ledger.delivered()
        assert ledger.to_write() == {}
    ledger.admit([(A, 4)])  # handled, not yet delivered when the second is up
    clock.now = 1.0
    assert ledger.to_write() == {A: 4}  # the latest delivered position, not batch 4's
    ledger.delivered()
    clock.now = 2.0
    assert ledger.to_write() == {A: 5}


def test_a_silent_partition_with_records_past_its_position_is_sought_back() -> None:
    # a lost tail: records 3..9 exist (read by the fetch loop), none reached the agent, none follow
    clock = Clock()
    ledger = InputLedger(lambda tp: 0, retry_after=5.0, max_attempts=3, idle_after=5.0, stall_after=60.0,
                         clock=clock)
    assert _handled(ledger, [(A, 0), (A, 1), (A, 2), (B, 0)]) == ([True] * 4, {})
    ends = {A: 10, B: 1}
    clock.now = 4.0
    assert ledger.stalled(ends) == {}  # the agent has been idle for less than idle_after
    clock.now = 6.0
    assert ledger.stalled(ends) == {}  # idle long enough, but A was first seen behind only 2 s ago
    clock.now = 9.0
    assert ledger.stalled(ends) == {A: 3}  # B delivered everything that exists
    assert ledger.stalled(ends) == {} and ledger.due() == {}  # one seek, repeated only as a gap's is
    clock.now = 14.5
    assert ledger.due() == {A: 3}
    assert _handled(ledger, [(A, 3), (A, 4)]) == ([True, True], {})  # the re-read arrives
    clock.now = 100.0
    assert ledger.due() == {}
    assert ledger.stalled({A: 5, B: 1}) == {}  # caught up
    assert ledger.stalls_found == 1


def test_a_busy_agent_waits_stall_after_before_seeking_a_silent_partition() -> None:
    # B's records keep the agent busy (e.g. a large fetch of B drains first): A is behind, not lost
    clock = Clock()
    ledger = InputLedger(lambda tp: 0, idle_after=5.0, stall_after=60.0, clock=clock)
    ledger.admit([(A, 0)])
    for second in range(1, 60):
        clock.now = float(second)
        ledger.admit([(B, second)])
        assert ledger.stalled({A: 10, B: second + 1}) == {}
    clock.now = 61.0  # A first seen behind at 1 s
    assert ledger.stalled({A: 10, B: 61}) == {A: 1}


def test_a_record_arriving_after_a_quiet_spell_is_not_taken_for_a_stall() -> None:
    # the check runs between the fetch loop reading a new record and the agent receiving it: the
    # partition is behind and has been silent for long, but the record is on its way (a seek here
    # would process it twice: two dead letters for one bad record)
    clock = Clock()
    ledger = InputLedger(lambda tp: 0, idle_after=5.0, stall_after=60.0, clock=clock)
    _handled(ledger, [(A, offset) for offset in range(6)])
    clock.now = 12.0
    assert ledger.stalled({A: 6}) == {}  # caught up
    assert ledger.stalled({A: 7}) == {}  # offset 6 was just fetched
    clock.now = 12.1
    assert _handled(ledger, [(A, 6)]) == ([True], {})
    clock.now = 100.0
    assert ledger.stalled({A: 7}) == {} and ledger.stalls_found == 0
    assert ledger.stalled({A: 8}) == {}  # offset 7 fetched, first seen now
    clock.now = 105.0
    assert ledger.stalled({A: 8}) == {A: 7}  # and lost: 5 s later it is sought


def test_no_stall_without_a_known_position_or_while_records_flow() -> None:
    clock = Clock()
    ledger = InputLedger(lambda tp: None, idle_after=5.0, stall_after=60.0, clock=clock)
    clock.now = 100.0
    assert ledger.stalled({A: 10}) == {}  # nothing known about A: nothing to compare
    ledger.admit([(A, 0)])
    for second in range(0, 100, 2):  # records keep coming, behind the end
        clock.now = 100.0 + second
        ledger.admit([(A, 1 + second)])
        assert ledger.stalled({A: 1000}) == {}


def test_the_ledger_counts_are_prometheus_gauges() -> None:
    from prometheus_client import REGISTRY

    from stream.service import metrics

    clock = Clock()
    ledger = InputLedger(lambda tp: 0, idle_after=5.0, clock=clock)
    metrics.watch_ledger("test-agent", ledger)

    def value(kind: str) -> float | None:
        return REGISTRY.get_sample_value("dedup_input_rereads", {"agent": "test-agent", "kind": kind})

    assert (value("gap"), value("stall"), value("accepted")) == (0, 0, 0)
    _handled(ledger, [(A, 0), (A, 3)])  # 1..2 skipped
    clock.now = 10.0
    ledger.stalled({B: 5})  # B has no position: nothing
    _handled(ledger, [(B, 0)])
    clock.now = 20.0
    ledger.stalled({B: 5})  # B first seen behind
    clock.now = 30.0
    ledger.stalled({B: 5})
    assert (value("gap"), value("stall"), value("accepted")) == (1, 1, 0)


def busy_with_b(ledger: InputLedger, clock: Clock, seconds: int, a_end: int, a_fetched: int,
                a_held: int | None = None) -> None:
    """The agent busy with B's records for ``seconds`` while A (position 1) stays silent: no stall."""
    for second in range(1, seconds):
        clock.now = float(second)
        _handled(ledger, [(B, second)])
        held = None if a_held is None else {A: a_held, B: second + 500}
        assert ledger.stalled({A: a_end, B: second + 1}, fetched={A: a_fetched, B: second + 1}, held=held) == {}


def test_a_backlog_the_fetch_loop_has_not_read_is_not_a_stall() -> None:
    # a 250k backlog: the broker holds far more of A than the fetch loop has read while the agent is
    # busy with B; A's records were never fetched, so none was lost (three such "stalls" re-read 8,909)
    clock = Clock()
    ledger = InputLedger(lambda tp: 0, idle_after=5.0, stall_after=60.0, clock=clock)
    _handled(ledger, [(A, 0)])
    busy_with_b(ledger, clock, 300, a_end=31_334, a_fetched=1)
    assert ledger.stalled({A: 31_334, B: 300}, fetched={A: 5, B: 300}) == {A: 1}  # fetched, never delivered
    clock.now = 400.0  # and an idle agent seeks whatever the evidence (a burst's lost tail)
    _handled(ledger, [(A, 1)])
    clock.now = 406.0
    assert ledger.stalled({A: 31_334}, fetched={A: 2}) == {A: 2}


def test_a_tail_committed_but_never_processed_is_read_again_from_the_stored_position() -> None:
    # a SIGKILL: Faust had committed partition 2 to its end (12,489) while the ledger's stored position
    # was 11,068; the successor read from the committed offset, got no record, and 1,421 documents
    # were never judged (the stall check compared the end with the committed offset)
    clock = Clock()
    ledger = InputLedger(lambda tp: {A: 11_068}.get(tp), idle_after=5.0, clock=clock)
    assert ledger.position(A) == 11_068
    assert ledger.stalled({A: 12_489}, committed={A: 12_489}) == {}  # first seen behind now
    clock.now = 6.0
    assert ledger.stalled({A: 12_489}, committed={A: 12_489}) == {A: 11_068}


def test_a_new_groups_lost_first_records_are_a_gap_once_the_start_is_known() -> None:
    # nothing stored, nothing committed: without the broker's word, a first record at 3 was taken as
    # the start and 0..2 (fetched, their delivery cancelled) were never judged
    ledger = InputLedger(lambda tp: None)
    assert ledger.unstarted([A, B]) == [A, B]
    ledger.start(A, 0)
    assert ledger.unstarted([A, B]) == [B]
    assert ledger.admit([(A, 3), (B, 7)]) == ([False, True], {A: 0})
    assert ledger.unstarted([A, B]) == []  # B started where its first record was (no start to compare)


def test_a_new_groups_silent_partition_is_read_again_from_its_start() -> None:
    clock = Clock()
    ledger = InputLedger(lambda tp: None, idle_after=5.0, clock=clock)
    assert ledger.stalled({A: 12}) == {}  # where reading began is not known: nothing to compare
    ledger.start(A, 2)  # records before 2 deleted (retention)
    assert ledger.stalled({A: 12}) == {}  # first seen behind now
    clock.now = 6.0
    assert ledger.stalled({A: 12}) == {A: 2}
    ledger.forget([A])
    assert ledger.unstarted([A]) == [A]


def test_fetched_records_waiting_in_the_streams_buffer_are_not_a_stall() -> None:
    # a 1M backlog: whole producer batches of ~11k records, one partition's at a time; A's records were
    # fetched and sit in the stream's buffer behind B's for over 5 minutes (two such false stalls)
    clock = Clock()
    ledger = InputLedger(lambda tp: 0, idle_after=5.0, stall_after=60.0, clock=clock)
    _handled(ledger, [(A, 0)])
    busy_with_b(ledger, clock, 400, a_end=11_000, a_fetched=11_000, a_held=10_999)
    # the buffer lost them (e.g. cleared by a flow suspension): nothing of A held past its position
    assert ledger.stalled({A: 11_000, B: 400}, fetched={A: 11_000, B: 400}, held={A: 0, B: 900}) == {A: 1}


def test_a_long_batch_is_not_an_idle_agent() -> None:
    # a batch of 256 documents took over 5 s at load 12: the timer saw no new batch for 5 s and sought
    # a partition of the backlog back ("nothing was delivered for 5 s")
    clock = Clock()
    ledger = InputLedger(lambda tp: 0, idle_after=5.0, stall_after=300.0, clock=clock)
    ledger.admit([(A, 0), (B, 0)])
    clock.now = 30.0  # still handling or delivering it
    assert ledger.stalled({A: 100, B: 100}, fetched={A: 1, B: 1}) == {}
    ledger.delivered()
    clock.now = 34.0
    assert ledger.stalled({A: 100, B: 100}, fetched={A: 1, B: 1}) == {}
    clock.now = 36.0  # idle for 6 s after the batch: a lost tail
    assert ledger.stalled({A: 100, B: 100}, fetched={A: 1, B: 1}) == {A: 1, B: 1}


def _handled(ledger: InputLedger, records: list[tuple[TP, int]]) -> tuple[list[bool], dict[TP, int]]:
    """A batch admitted, handled and delivered at once."""
    admitted = ledger.admit(records)
    ledger.delivered()
    return admitted


def test_a_partition_silent_since_its_assignment_is_behind_from_the_committed_offset() -> None:
    # after a rebalance Faust dropped A's records 69..95 (fetched before its seek to the committed
    # offset) and left the fetch position at the end: A never delivers again unless sought back
    clock = Clock()
    ledger = InputLedger(lambda tp: None, idle_after=5.0, clock=clock)
    committed = {A: 69, B: 40}
    clock.now = 100.0
    assert ledger.stalled({A: 96, B: 40}, fetched={A: 70, B: 40}, committed=committed) == {}  # first seen behind
    clock.now = 106.0
    assert ledger.stalled({A: 96, B: 40}, fetched={A: 70, B: 40}, committed=committed) == {A: 69}
    keep, seeks = ledger.admit([(A, 69), (A, 70)])
    assert keep == [True, True] and seeks == {}
    ledger.delivered()
    clock.now = 200.0
    assert ledger.stalled({A: 71}, committed=committed) == {}  # caught up: its own position counts now
