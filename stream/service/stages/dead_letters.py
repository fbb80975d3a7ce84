"""Dead letters: a record that cannot be judged goes to the DLQ topic alone, with a stable code, the
message, and where it came from (docs/usage.md, "Dead letters"). A fault that is not the record's (the store,
the producer) is not a dead letter: ``is_fault`` tells them apart and the stage raises it on."""

from __future__ import annotations

from stream.errors import DocumentError, StorageError
from stream.service import metrics
from stream.service.stages.messages import Source, dead_letter
from stream.service.stages.output import Output, OutputError


def is_fault(exc: BaseException) -> bool:
    """A failure that is not the document's: the store or the producer. It stops the worker."""
    return isinstance(exc, StorageError | OutputError)


class DeadLetters:
    """Dead letters to the DLQ topic, counted by stage and code."""

    def __init__(self, output: Output, topic: str) -> None:
        self.output, self.topic = output, topic

    def send(self, exc: Exception, stage: str, source: Source, key: bytes | None, value: bytes | None) -> None:
        if isinstance(exc, DocumentError):
            code, error = exc.code, str(exc)
        else:  # not the input's fault as far as we know: a bug that this document triggers
            code, error = f"{stage}_failed", f"{type(exc).__name__}: {exc}"
        metrics.DEAD_LETTERS.labels(stage, code).inc()
        headers = [("dedup-code", code.encode()), ("dedup-stage", stage.encode())]
        dlq_key = key if key is None or len(key) <= 1024 else None  # the envelope keeps a long key
        self.output.send(self.topic, dlq_key, dead_letter(code, error, stage, source, key, value), headers=headers)
