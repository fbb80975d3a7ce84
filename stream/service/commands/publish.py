"""Publishing documents: ``DocumentProducer`` (the Python API for crawlers) and ``dedup publish``.

Idempotent librdkafka producer (no duplicates from retries), key = document id, value = the
document JSON as given, delivery reports counted: ``flush()`` says how many were not delivered.
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

import click
import orjson
from confluent_kafka import KafkaError, KafkaException, Message, Producer

from stream.errors import EXIT_BROKER, EXIT_REJECTED, DocumentError, UsageError
from stream.service.commands.common import broker_option, client_settings, config_option
from stream.service.settings import Settings, load_settings


class DocumentProducer:
    """Send documents to the documents topic.

    >>> with DocumentProducer(broker="kafka://127.0.0.1:9092") as p:  # doctest: +SKIP
    ...     p.send({"id": "a1", "text": "..."})
    """

    def __init__(self, broker: str | None = None, topic: str | None = None,
                 settings: Settings | None = None, **producer_conf: Any) -> None:
        self.settings = settings or load_settings(broker=broker)
        self.topic = topic or self.settings.documents_topic
        self.producer = Producer(self.settings.confluent(**{
            "enable.idempotence": True, "acks": "all", "linger.ms": 20,
            "partitioner": "murmur2_random",  # the Java clients' key -> partition mapping
            **producer_conf,
        }))
        self.delivered = 0
        self.failed = 0
        self.errors: list[str] = []
        self.undelivered: list[tuple[int, str]] = []  # (line, reason) of documents sent with a line number

    def _report(self, err: KafkaError | None, msg: Message, line: int | None = None) -> None:
        if err is None:
            self.delivered += 1
        else:
            self.failed += 1
            if line is not None:
                self.undelivered.append((line, err.str()))
            if len(self.errors) < 20:
                self.errors.append(f"{msg.key()!r}: {err}")

    def send(self, document: Mapping[str, Any] | bytes | str, key: str | bytes | None = None,
             line: int | None = None) -> None:
        """Queue one document. A dict must have an ``id``; raw JSON needs ``key`` or an id inside.
        ``line``: a source line number, reported with a delivery failure (``undelivered``). A document
        over the producer's message size raises ``DocumentError``."""
        if isinstance(document, Mapping):
            if "id" not in document:
                raise ValueError("a document needs an 'id'")
            value = json.dumps(document, ensure_ascii=False).encode()
            key = key if key is not None else str(document["id"])
        else:
            value = document.encode() if isinstance(document, str) else document
            if key is None:
                key = str(json.loads(value)["id"])
        raw_key = key.encode() if isinstance(key, str) else key
        report = self._report if line is None else (lambda err, msg: self._report(err, msg, line))
        while True:
            try:
                self.producer.produce(self.topic, key=raw_key, value=value, on_delivery=report)
                break
            except BufferError:
                self.producer.poll(0.1)
            except KafkaException as exc:
                if exc.args and exc.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE:
                    raise DocumentError(f"document is {len(value):,} bytes, over the producer's message.max.bytes"
                                        ) from None
                raise
        self.producer.poll(0)

    def flush(self, timeout: float = 60.0) -> int:
        """Wait for delivery; returns the number of documents still undelivered."""
        return int(self.producer.flush(timeout))

    def close(self, timeout: float = 60.0) -> int:
        """Wait for delivery and disconnect (librdkafka destroys a client with its last reference;
        a client left alive keeps reconnecting, and logs it, after the broker is gone). Returns
        the number of documents still undelivered."""
        left = self.flush(timeout)
        del self.producer
        return left

    def __enter__(self) -> DocumentProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class PublishResult:
    topic: str
    delivered: int = 0
    failed: int = 0
    rejected: list[tuple[int, str]] = field(default_factory=list)  # (line number, reason)


def check_line(raw: bytes, max_bytes: int) -> tuple[str, bytes]:
    """(document id, value) of one JSONL line, or ``DocumentError`` naming why it cannot be published:
    the same validation the worker applies, so a bad document is caught before it is sent."""
    from stream.fingerprint.document import decode_utf8, parse_document

    value = raw.strip()
    if len(value) > max_bytes:
        raise DocumentError(f"document is {len(value):,} bytes, over the {max_bytes:,}-byte message limit "
                            "(raise --max-message-bytes / DEDUP_MAX_MESSAGE_BYTES, and the topic's "
                            "max.message.bytes on the broker)")
    decode_utf8(value)
    return parse_document(value).id, value


def ensure_documents_topic(settings: Settings, topic: str) -> list[str]:
    """Create the topology's missing topics when ``topic`` is the documents topic and missing; returns
    their names. Else the broker would create it on the first record with its own default partition
    count (tansu 4, Kafka ``num.partitions``), and a worker refuses a documents topic of another count."""
    from topology.admin import apply, check

    if topic != settings.documents_topic:
        return []
    topology = settings.topology()
    if topic not in check(topology, settings.confluent()).missing:
        return []
    return apply(topology, settings.confluent()).created


SNIFF_LINES = 5  # a file none of whose first lines is JSON is taken for plain text, not JSONL


def sniff_jsonl(lines: Iterable[bytes], name: str) -> Iterator[bytes]:
    """``lines`` as they are, unless none of the first ``SNIFF_LINES`` non-empty ones is JSON: then a
    ``UsageError`` saying the input must be JSONL, before anything is sent (a plain-text file would
    otherwise be reported line by line as "not valid JSON")."""
    iterator = iter(lines)
    head: list[bytes] = []
    for raw in iterator:
        head.append(raw)
        if sum(1 for line in head if line.strip()) >= SNIFF_LINES:
            break
    candidates = [line for line in head if line.strip()]
    if candidates and not any(_is_json(line) for line in candidates):
        raise UsageError(f"{name} is not JSONL: none of its first {len(candidates)} lines is JSON. Input is one "
                         'JSON document a line, e.g. {"id": "a1", "text": "..."}; nothing was published')
    yield from head
    yield from iterator


def _is_json(raw: bytes) -> bool:
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return True


def publish_file(settings: Settings, source: str, topic: str | None = None, progress: bool = False,
                 errors_file: str | None = None) -> PublishResult:
    """Publish a JSONL file ('-': stdin): each bad line is reported on stderr (and in ``errors_file``,
    with its dead-letter ``code`` as ``dedup scan --errors`` writes it) with its number and reason and
    skipped; every good line is sent. A file that is not JSONL at all is a ``UsageError``."""
    import sys
    from contextlib import ExitStack

    with ExitStack() as stack:
        raw_lines: IO[bytes] = sys.stdin.buffer if source == "-" else stack.enter_context(open(source, "rb"))
        lines = sniff_jsonl(raw_lines, "standard input" if source == "-" else source)
        first = next(lines, None)  # the sniffing happens here, before an errors file or a producer exists
        errors = stack.enter_context(open(errors_file, "w", encoding="utf-8")) if errors_file else None

        def reject(number: int, reason: str, code: str) -> None:
            result.rejected.append((number, reason))
            print(f"line {number}: {reason}", file=sys.stderr)
            if errors is not None:
                errors.write(json.dumps({"line": number, "code": code, "error": reason}, ensure_ascii=False) + "\n")

        conf: dict[str, Any] = {"message.max.bytes": settings.max_message_bytes + 4096}
        producer = DocumentProducer(settings=settings, topic=topic, **conf)
        result = PublishResult(producer.topic)
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("publishing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      disable=not progress, transient=True) as bar:
            task = bar.add_task("publish", total=None)
            for number, raw in enumerate(itertools.chain([] if first is None else [first], lines), 1):
                if not raw.strip():
                    continue
                try:
                    key, value = check_line(raw, settings.max_message_bytes)
                    producer.send(value, key=key, line=number)
                except DocumentError as exc:
                    reject(number, str(exc), exc.code)
                    continue
                bar.update(task, completed=producer.delivered)
            producer.close()
            bar.update(task, completed=producer.delivered)
        for number, reason in producer.undelivered:
            reject(number, f"not delivered: {reason}", "not_delivered")
    result.delivered, result.failed = producer.delivered, producer.failed
    return result


@click.command()
@click.argument("source", type=click.Path(exists=True, allow_dash=True, dir_okay=False))
@broker_option
@config_option
@click.option("--topic", default=None,
              help="Topic to publish to (default: the documents topic, DEDUP_DOCUMENTS_TOPIC).")
@click.option("--max-message-bytes", type=click.IntRange(1024), default=None,
              help="Largest document accepted, in bytes (DEDUP_MAX_MESSAGE_BYTES; default 1,000,000, Kafka's "
                   "default message.max.bytes). Raise it together with the topic's max.message.bytes.")
@click.option("--errors", "errors_file", type=click.Path(dir_okay=False), default=None,
              help="Also write each rejected line as a JSON line {line, code, error} to this file (the codes "
                   "of docs/usage.md, Dead letters; not_delivered for a document the broker did not take).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar (it only shows on a terminal anyway).")
def publish(source: str, config: str | None, broker: str | None, topic: str | None, max_message_bytes: int | None,
            errors_file: str | None, quiet: bool) -> None:
    """Publish a JSONL file (or - for stdin) of documents, keyed by id (idempotent producer).

    Every line that is not a valid document (not UTF-8, not JSON, no id, too large...) is reported with
    its line number and reason and skipped; every other line is delivered. Exit 1 if any line was
    rejected, 4 if some documents could not be delivered."""
    settings = client_settings(config, broker=broker, max_message_bytes=max_message_bytes)
    created = ensure_documents_topic(settings, topic or settings.documents_topic)
    if created:
        click.echo(f"created topics: {', '.join(created)}", err=True)
    result = publish_file(settings, source, topic=topic, progress=not quiet and sys.stderr.isatty(),
                          errors_file=errors_file)
    rejected = f", {len(result.rejected)} lines rejected" if result.rejected else ""
    failed = f", {result.failed} not delivered" if result.failed else ""
    click.echo(f"published {result.delivered} documents to {result.topic}{rejected}{failed}", err=True)
    if result.failed:
        sys.exit(EXIT_BROKER)
    if result.rejected:
        sys.exit(EXIT_REJECTED)
