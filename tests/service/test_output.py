"""Internal messages cut to size, and the producer's per-batch delivery accounting."""

from __future__ import annotations

import json

import pytest

from stream.service.stages.messages import Source

SRC = Source("documents", 1, 42, 1000.0)


def test_send_list_splits_large_batches_below_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from stream.service.stages import hops
    from stream.service.stages.hops import send_list

    class Out:
        def __init__(self) -> None:
            self.sent: list[bytes] = []

        def send(self, topic: str, key: bytes | None, value: bytes, partition: int | None = None) -> None:
            self.sent.append(value)

    out = Out()
    entries = [{"doc": str(i), "fp": "x" * 700} for i in range(1000)]
    encoded: list[int] = []
    real_dumps = hops.dumps

    def counting_dumps(obj: object) -> bytes:
        value = real_dumps(obj)
        encoded.append(len(value))
        return value

    monkeypatch.setattr(hops, "dumps", counting_dumps)
    send_list(out, "t", 1, entries, limit=64 << 10)  # type: ignore[arg-type]
    assert len(out.sent) > 1 and all(len(v) <= 64 << 10 for v in out.sent)
    assert [e for v in out.sent for e in json.loads(v)] == entries
    assert sum(encoded) < 2.1 * encoded[0]  # each entry encoded about twice, not once per halving
    out.sent.clear()
    send_list(out, "t", 1, [], limit=10)  # type: ignore[arg-type]
    assert out.sent == []


def test_output_counts_every_record_of_a_batch_and_fails_it_on_delivery_errors() -> None:
    """Each record of a batch (send, changelog, changelog_many) has exactly one delivery report: with
    an unreachable broker every one times out, and flush fails with their errors (a miscount would
    hang until flush's own timeout instead)."""
    import asyncio

    import pytest

    from stream.service.stages.output import Output, OutputError

    async def run() -> None:
        out = Output({"bootstrap.servers": "127.0.0.1:1", "message.timeout.ms": 300, "log_level": 0,
                      "enable.idempotence": False})
        batch = out.mark()
        out.changelog_many("t-changelog", 0, [(b"a", b"1"), (b"b", None)])
        out.changelog("t-changelog", 1, b"c", b"2")
        out.send("t", b"k", b"v", partition=0)
        assert batch.pending == 4
        with pytest.raises(OutputError) as failed:
            await out.flush(batch, timeout=20)
        assert "not delivered within" not in str(failed.value)
        assert batch.pending == 0 and len(batch.errors) == 4
        out.close(timeout=1)

    asyncio.run(run())
