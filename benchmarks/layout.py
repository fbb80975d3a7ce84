"""``python -m benchmarks layout``: where a document's index work goes when the index has P partitions.

The worker's three stages (``DocumentStage``, ``ProbeStage``, ``GatherStage``) without Kafka, in one
process: every index and gather partition is a ``MemoryStore`` that counts the records it writes (each
one a changelog record in the service), and every hop is handed to the next stage by this loop, as the
agents would after a Kafka hop. The documents: a backlog of near-copy editions of real ~3 KB Chinese
documents (``editions``: the zh3k corpus of ``python -m benchmarks corpus-zh``, each document in ``--editions``
versions, the later ones edited as reposts are: ``track_edits.edit_variant``), read from ``--inputs``
input partitions in fetches of ``--fetch`` records, in agent batches of ``--batch``.

Per P (``--partitions``, default 1..64): CPU per document of the documents stage (fingerprint, route),
of the gather stage's routes (which partitions to probe and drop from), of each index partition
(``ProbeStage.handle_batch``: what a partition's owner spends on it) and of the gather stage's answers;
items, answers and state records per document; the busiest partition's share of the index work.
Results: ``--out``/layout.json and layout.png.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
import zlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import click

from benchmarks.common import machine, pyplot, save_json, stamp
from benchmarks.corpus_zh import default_corpus
from benchmarks.track_edits import edit_variant
from stream.detect import DecodedFingerprints, MatchSettings
from stream.fingerprint import FingerprintConfig
from stream.service.stages import DocumentStage, GatherStage, InputRecord, ProbeStage, Topics
from stream.service.stages.messages import GatherEntry, ProbeItem, Source, dumps, entry_from_json, loads
from stream.storage import MemoryStore

DEFAULT_PARTITIONS = "1,2,4,8,16,32,64"


class CountingStore(MemoryStore):
    """A partition's state: a ``MemoryStore`` that counts what it writes (each op is a changelog record;
    ``write_ops`` goes through ``put`` and ``delete``)."""

    def __init__(self) -> None:
        super().__init__()
        self.records = 0
        self.bytes = 0

    def put(self, key: bytes, value: bytes) -> None:
        self.records += 1
        self.bytes += len(key) + len(value)
        super().put(key, value)

    def delete(self, key: bytes) -> None:
        self.records += 1
        self.bytes += len(key)
        super().delete(key)


class Verdicts:
    """Where the stages write (the ``Output`` interface they use): verdicts kept by id, the rest counted."""

    def __init__(self) -> None:
        self.final: dict[str, dict[str, Any]] = {}
        self.published = 0
        self.dead = 0

    def send(self, topic: str, key: bytes | None, value: bytes | None, partition: int | None = None,
             headers: object = None) -> None:
        if topic == "dlq":
            self.dead += 1
            return
        assert key is not None
        self.published += 1
        if value is None:
            self.final.pop(key.decode(), None)
        else:
            body = loads(value)
            self.final[body["id"]] = {k: body[k] for k in ("verdict", "matches") if k in body}

    def changelog_many(self, topic: str, partition: int, ops: object) -> None:
        pass


def editions(corpus: Path, documents: int, count: int, seed: int = 1) -> list[dict[str, Any]]:
    """``documents`` of the corpus in ``count`` editions each, in publication order: edition 0 as it is,
    each later one an edited repost of the one before; ``ts`` = the position in that order."""
    with corpus.open(encoding="utf-8") as lines:
        base = [json.loads(line) for _, line in zip(range(documents), lines, strict=False)]
    rng = random.Random(seed)
    donors = [d["text"] for d in base]
    texts = [d["text"] for d in base]
    out: list[dict[str, Any]] = []
    for edition in range(count):
        if edition:
            texts = [edit_variant(text, rng, donors)[0] for text in texts]
        out += [{"id": f"{d['id']}@{edition}", "text": text} for d, text in zip(base, texts, strict=True)]
    for ts, doc in enumerate(out):
        doc["ts"] = float(ts)
    return out


def batches(docs: Sequence[dict[str, Any]], inputs: int, fetch: int, batch: int) -> list[list[InputRecord]]:
    """The records as one worker's documents agent takes them: each document in input partition
    crc32(id) mod ``inputs`` (a producer's keyed partitioning), fetched ``fetch`` records of one partition
    at a time in turn, cut into agent batches of ``batch``."""
    parts: list[list[InputRecord]] = [[] for _ in range(inputs)]
    for doc in docs:
        p = zlib.crc32(doc["id"].encode()) % inputs
        source = Source("documents", p, len(parts[p]), doc["ts"])
        parts[p].append(InputRecord(doc["id"].encode(), dumps(doc), source))
    stream: list[InputRecord] = []
    for start in range(0, max(map(len, parts)), fetch):
        for part in parts:
            stream += part[start : start + fetch]
    return [stream[i : i + batch] for i in range(0, len(stream), batch)]


@dataclass
class Layout:
    partitions: int
    documents: int
    verdicts: int
    documents_us: float  # documents stage (fingerprint, route), per document
    index_us: float  # every index partition's work, per document
    gather_us: float  # gather stage's answers and revisions, per document
    route_us: float  # gather stage's routes (where to probe and drop), per document
    wire_us: float  # encode + decode of the probe items and gather entries, were every hop over Kafka
    busiest_share: float  # the busiest partition's share of the index work
    items: float  # probe items per document (to partitions owning its keys, and drops of earlier versions)
    items_with_tables: float  # of them, items that index the document
    gather_entries: float  # answers and revisions per document
    index_records: float  # state records (changelog records) written by the index partitions, per document
    index_bytes: float
    gather_records: float
    per_partition_us: list[float] = field(default_factory=list)  # each partition's work, per document


def simulate(runs: list[list[InputRecord]], partitions: int, matching: MatchSettings | None = None
             ) -> tuple[Layout, dict[str, dict[str, Any]]]:
    """One pass of the backlog through the stages with ``partitions`` index (and gather) partitions: its
    figures and the final verdict of each id (its verdict and matches)."""
    topics = Topics("probe", "gather", "verdicts", "dlq", partitions, partitions)
    config, matching = FingerprintConfig(), matching or MatchSettings()
    out = Verdicts()
    index: defaultdict[int, CountingStore] = defaultdict(CountingStore)
    gathered: defaultdict[int, CountingStore] = defaultdict(CountingStore)
    decoded = DecodedFingerprints()  # shared by the two stages, as the worker's app does
    documents = DocumentStage(config, matching, topics, out, decoded)  # type: ignore[arg-type]
    probes = ProbeStage(config, matching, topics, index.__getitem__, out, decoded=decoded)  # type: ignore[arg-type]
    # a backlog: every revision held (as a worker behind its input does) and released at the end, so the
    # final verdicts do not depend on how long the run took (a 30 s interval on the wall clock did)
    gather = GatherStage(topics, out, gathered.__getitem__, behind=lambda: True)  # type: ignore[arg-type]
    cpu: defaultdict[str, float] = defaultdict(float)
    per_partition = [0.0] * partitions
    items = with_tables = entries = 0
    clock = time.thread_time
    for records in runs:
        start = clock()
        hops = documents.handle(records)
        cpu["documents"] += clock() - start
        to_probe: defaultdict[int, list[ProbeItem]] = defaultdict(list)
        for partition, routes in sorted(hops.gather.items()):
            start = clock()
            made = gather.handle(partition, routes)
            cpu["routes"] += clock() - start
            cpu["wire"] += _wire(routes, made)
            for target, found_items in made.items():
                to_probe[target] += found_items
        to_gather: dict[int, list[GatherEntry]] = defaultdict(list)
        for partition, probe_items in sorted(to_probe.items()):
            items += len(probe_items)
            with_tables += sum(1 for item in probe_items if item.tables)
            start = clock()
            answers = probes.handle_batch([(partition, probe_items)])
            per_partition[partition] += clock() - start
            for target, found in answers.items():
                to_gather[target] += found
            cpu["wire"] += _wire([e for found in answers.values() for e in found], {partition: probe_items})
        for partition, found in sorted(to_gather.items()):
            entries += len(found)
            start = clock()
            gather.handle(partition, found)
            cpu["gather"] += clock() - start
        gather.end_batch()  # as the worker's agent batch ends (hops.Pipeline)
    start = clock()
    for partition in list(gathered):
        gather.released(partition, gather.release(partition, now=math.inf))
    cpu["gather"] += clock() - start
    n = sum(map(len, runs))
    us = 1e6 / n
    total = sum(per_partition)
    return Layout(partitions, n, len(out.final), cpu["documents"] * us, total * us, cpu["gather"] * us,
                  cpu["routes"] * us, cpu["wire"] * us, max(per_partition) / total, items / n, with_tables / n,
                  entries / n, sum(s.records for s in index.values()) / n, sum(s.bytes for s in index.values()) / n,
                  sum(s.records for s in gathered.values()) / n, [round(p * us, 2) for p in per_partition]), out.final


def _wire(entries: Sequence[GatherEntry], items: dict[int, list[ProbeItem]]) -> float:
    """CPU of the encode and decode the hops would cost over Kafka (not part of the stages' own work)."""
    start = time.thread_time()
    [entry_from_json(d) for d in loads(dumps([e.to_json() for e in entries]))]
    for found in items.values():
        [ProbeItem.from_json(d) for d in loads(dumps([item.to_json() for item in found]))]
    return time.thread_time() - start


def plot(result: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    layouts = result["layouts"]
    ps = [r["partitions"] for r in layouts]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    for key, label in (("index_us", "index partitions, all"), ("gather_us", "gather stage, answers"),
                       ("route_us", "gather stage, routes"),
                       ("documents_us", "documents stage"), ("wire_us", "hops over Kafka (encode + decode)")):
        left.plot(ps, [r[key] for r in layouts], marker="o", label=label)
    left.plot(ps, [r["index_us"] * r["busiest_share"] for r in layouts], marker="o", linestyle="--",
              label="busiest index partition")
    left.set_xscale("log", base=2)
    left.set_xlabel("index partitions P")
    left.set_ylabel("CPU per document (us)")
    left.set_title("CPU per document by stage")
    left.legend(fontsize=8)
    right.plot(ps, [r["busiest_share"] for r in layouts], marker="o", label="busiest partition's share")
    right.plot(ps, [min(1.0, 2 / p) for p in ps], linestyle=":", color="gray", label="target: 2/P")
    right.set_xscale("log", base=2)
    right.set_yscale("log")
    right.set_xlabel("index partitions P")
    right.set_title("share of the index work on the busiest partition")
    right.legend(fontsize=8)
    stamp(fig)
    fig.suptitle(f"{result['documents']:,} documents ({result['corpus_note']})", fontsize=9)
    fig.tight_layout(rect=(0, 0.03, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)


@click.command()
@click.option("--corpus", type=click.Path(path_type=Path), default=None,
              help="JSONL of real documents (default: the zh3k corpus of `python -m benchmarks corpus-zh`)")
@click.option("--documents", default=1697, show_default=True, help="documents of the corpus, each in every edition")
@click.option("--editions", "count", default=4, show_default=True)
@click.option("--partitions", default=DEFAULT_PARTITIONS, show_default=True, help="index partition counts")
@click.option("--inputs", default=8, show_default=True, help="input partitions the backlog is spread over")
@click.option("--fetch", default=500, show_default=True, help="records fetched from one input partition at a time")
@click.option("--batch", default=256, show_default=True, help="the documents agent's batch size")
@click.option("--out", default="bench-results/layout", show_default=True)
@click.option("--name", default="layout", show_default=True, help="results file name (without .json/.png)")
@click.option("--anchor-cap", default=MatchSettings.anchor_cap, show_default=True,
              help="the anchor table's cap (0: none)")
def command(corpus: Path | None, documents: int, count: int, partitions: str, inputs: int, fetch: int, batch: int,
            out: str, name: str, anchor_cap: int) -> None:
    corpus = corpus or default_corpus()
    if not corpus.is_file():
        raise click.UsageError(f"{corpus} not found: build it with `python -m benchmarks corpus-zh`, or pass --corpus")
    measured = machine()  # with the commit measured: read before the run, not when the results are saved
    docs = editions(corpus, documents, count)
    runs = batches(docs, inputs, fetch, batch)
    simulate(runs[:4], 1)  # warm-up: the segmenter's dictionary and the index's compiled kernels
    layouts: list[Layout] = []
    baseline: dict[str, dict[str, Any]] | None = None
    differing: dict[int, dict[str, Any]] = {}  # P -> the ids whose final verdict is not the first P's
    for p in (int(x) for x in partitions.split(",")):
        r, final = simulate(runs, p, MatchSettings(anchor_cap=anchor_cap))
        layouts.append(r)
        baseline = final if baseline is None else baseline
        if final != baseline:  # verdicts are independent of the layout: say which differ, keep measuring
            differ = sorted(k for k in baseline.keys() | final.keys() if final.get(k) != baseline.get(k))
            differing[p] = {k: {"here": final.get(k), "first": baseline.get(k)} for k in differ}
            click.echo(f"P={p}: {len(differ)} verdicts differ from P={layouts[0].partitions}'s: {differ[:5]}", err=True)
        click.echo(f"P={p:3d}: index {r.index_us:7.1f} us/doc (busiest {r.busiest_share:.3f}), gather "
                   f"{r.gather_us:6.1f}, routes {r.route_us:6.1f}, documents {r.documents_us:6.1f}, "
                   f"wire {r.wire_us:6.1f}; items/doc "
                   f"{r.items:5.1f} ({r.items_with_tables:4.1f} indexing), entries/doc {r.gather_entries:5.1f}, "
                   f"index records/doc {r.index_records:5.1f}, verdicts {r.verdicts}")
    first = layouts[0]
    result = {"corpus": str(corpus), "documents": len(docs),
              "corpus_note": f"{documents} zh3k documents x {count} editions", "inputs": inputs, "fetch": fetch,
              "batch": batch, "anchor_cap": anchor_cap, "machine": measured, "layouts": [asdict(r) for r in layouts],
              "differing": differing,
              "targets": {"index_64_over_1": (layouts[-1].index_us / first.index_us) if len(layouts) > 1 else None,
                          "busiest_share_vs_2_over_p": [[r.partitions, r.busiest_share, min(1.0, 2 / r.partitions)]
                                                        for r in layouts]}}
    path = save_json(out, name, result)
    plot(result, path.with_suffix(".png"))
    click.echo(f"saved {path} and {path.with_suffix('.png')}")


def main(argv: Sequence[str] | None = None) -> None:
    command.main(args=list(sys.argv[1:] if argv is None else argv), prog_name="python -m benchmarks layout",
                 standalone_mode=True)


if __name__ == "__main__":
    main()
