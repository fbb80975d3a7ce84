"""Generated good and bad messages through a real broker and worker: every input record ends in exactly
one accounted outcome (a verdict, a dead letter, or superseded by a later record of its id)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.harness import Deployment

pytestmark = pytest.mark.integration

TEXTS = ["床前明月光，疑是地上霜。举头望明月，低头思故乡。", "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。",
         "Near-duplicate detection finds documents that are almost the same.", ""]
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                           max_size=3), max_leaves=8)
ids = st.one_of(st.sampled_from(["a", "b", "c", "d"]), st.integers(0, 5), st.text(max_size=8), scalars,
                st.just("x" * 2000))
good = st.builds(lambda i, t, ts: {"id": i, "text": t, "ts": ts}, st.sampled_from(["a", "b", "c", "d", "e"]),
                 st.sampled_from(TEXTS[:3]), st.floats(0, 1e9))
shaped = st.fixed_dictionaries({"id": ids}, optional={"text": values | st.sampled_from(TEXTS), "ts": values,
                                                      "title": values, "fields": values, "tags": values})


def _encode(message: Any) -> tuple[bytes | None, bytes | None]:
    if isinstance(message, bytes):
        return None, message
    raw = json.dumps(message, ensure_ascii=False, allow_nan=True).encode("utf-8", "surrogatepass")
    key = message.get("id") if isinstance(message, dict) else None
    return (str(key).encode("utf-8", "surrogatepass")[:100] if key is not None else None), raw


messages = st.lists(st.one_of(good, shaped, st.binary(max_size=64), values), min_size=20, max_size=60)


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=messages)
def test_every_generated_message_has_one_outcome(broker: Any, tmp_path_factory: pytest.TempPathFactory,
                                                 batch: list[Any]) -> None:
    deployment = Deployment(broker, tmp_path_factory.mktemp("fuzz"))
    deployment.apply_topology()
    try:
        worker = deployment.start_worker("w")
        deployment.publish([_encode(m) for m in batch])
        deadline = time.monotonic() + 120
        counts = deployment.outcomes()
        while (counts["unaccounted"] or counts["inputs"] < len(batch)) and time.monotonic() < deadline:
            time.sleep(2)
            counts = deployment.outcomes()
        assert counts["inputs"] == len(batch) and counts["unaccounted"] == 0, (counts, deployment.log_digest())
        assert worker.poll() is None, deployment.log_digest()
        assert "Traceback" not in Path(deployment.tmp / "w.log").read_text()
    finally:
        deployment.stop()
