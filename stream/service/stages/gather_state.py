"""Per-document gather state: partial answers from every probed partition -> one verdict.

Pure logic (no Kafka): the gather stage loads a document's state, applies entries, stores it and
publishes what the transitions ask for. A document's state follows its latest input record (its
*round*, ``topic:partition:offset``):

- a round is complete when its ``expect`` header and answers from all ``expected`` partitions are in;
  a redelivery repeats the round id, so it completes again with the same matches and republishes an
  identical verdict;
- a newer version of the id (``messages.Version``: event time, record timestamp, partition and offset;
  never the order of arrival) starts a new round: the summary of matches starts afresh (the
  new round's probe finds every earlier document again), and the old round, if it never published,
  is *superseded* (counted; its late answers are dropped); an older version arriving later is
  superseded at once and changes nothing;
- a round begun by a ``Route`` (the document stage sends each document to its id's gather partition)
  records where its version is indexed (``placed``: the partitions owning its keys) and which
  partitions may still hold an earlier version (``dropping``: the previous round's placed and
  dropping, less the new targets); the round expects answers from those only, and a redelivered route
  sends the same items again. ``dropping`` is emptied once the round is complete (every drop was
  answered, so done); ``placed`` None means unknown (a state from before routes): the next version
  drops the id from every partition;
- a revision (a canonically earlier document that arrived later matched this one) names the version
  it matched by its SimHash: it merges into the summary of that version (at once, or when that
  version's header arrives) and, once the document has published, republishes it with
  ``revised: true``.

Matches are kept as a bounded ``MatchSummary``, so a document with thousands of copies has a state
and a verdict of fixed size.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from stream.detect import MAX_MATCHES, Match, MatchSummary, Order
from stream.service.stages.messages import Header, Source, Version, version_from_json

# versions of a document whose revisions are kept until their header arrives (a newer version's header
# supersedes the older ones, so only the last few can still arrive)
PENDING_VERSIONS = 4

def round_position(round_id: str) -> tuple[str, int] | None:
    """(topic:partition, offset) of a round id, to tell which of two records of an id came later."""
    where, _, offset = round_id.rpartition(":")
    return (where, int(offset)) if where and offset.isdigit() else None


def is_newer(round_id: str, than: str | None) -> bool:
    """Whether ``round_id`` is a later input record than ``than`` by position alone (any round is newer
    than none; of records from different partitions, the one arriving now is taken as the newer). Only
    for rounds without a ``Version`` (headers and states written before versions)."""
    if than is None:
        return True
    a, b = round_position(round_id), round_position(than)
    if a is None or b is None or a[0] != b[0]:
        return round_id != than
    return a[1] > b[1]


def newer_version(version: Version | None, round_id: str, than: Version | None, than_round: str | None) -> bool:
    """Whether the record (``version``, ``round_id``) is a newer version than (``than``, ``than_round``)."""
    if than_round is None:
        return True
    if version is None or than is None:
        return is_newer(round_id, than_round)
    return version > than


@dataclass
class GatherState:
    """``simhash``, ``schema`` and ``empty``: all the verdict needs of the fingerprint (from the header)."""

    doc: str
    limit: int = MAX_MATCHES
    simhash: int | None = None
    schema: str = ""
    empty: bool = False
    order: Order | None = None
    source: Source | None = None
    round: str | None = None
    version: Version | None = None  # of the current round
    passed: list[str] = field(default_factory=list)  # the last few rounds replaced or refused: late answers dropped
    expected: int = 0
    got: list[int] = field(default_factory=list)  # partitions that answered the current round
    summary: MatchSummary = field(default_factory=MatchSummary)
    early: dict[str, list[int]] = field(default_factory=dict)  # answers of rounds not yet started
    early_matches: dict[str, list[Match]] = field(default_factory=dict)
    pending: dict[int, MatchSummary] = field(default_factory=dict)  # revisions of versions not yet seen, by SimHash
    deleting: bool = False  # the current round deletes the document
    published: bool = False
    revised: bool = False
    published_at: float = 0.0  # processing time of the last verdict published: revisions wait for the interval
    held: bool = False  # a revision merged but not published yet (the gather stage releases it)
    # index partitions where the current version is indexed; None: unknown (a state from before routes,
    # or a round begun by a header without a route), so the next version is dropped from every partition
    placed: list[int] | None = None
    dropping: list[int] = field(default_factory=list)  # partitions the current round drops earlier versions from

    def __post_init__(self) -> None:
        self.summary.limit = self.limit

    # -- (de)serialization ---------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "doc": self.doc, "sim": self.simhash, "schema": self.schema, "empty": self.empty,
            "order": list(self.order) if self.order else None,
            "source": self.source.to_json() if self.source else None,
            "round": self.round, "v": list(self.version) if self.version else None, "passed": self.passed,
            "expected": self.expected, "got": self.got,
            "summary": self.summary.to_json(),
            "early": self.early,
            "early_matches": {r: [m.to_wire() for m in ms] for r, ms in self.early_matches.items()},
            "pending": [[sim, s.to_json()] for sim, s in self.pending.items()], "deleting": self.deleting,
            "published": self.published, "revised": self.revised, "at": self.published_at, "held": self.held,
            "placed": self.placed, "dropping": self.dropping,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any], limit: int = MAX_MATCHES) -> GatherState:
        order = d.get("order")
        return cls(
            doc=str(d["doc"]), limit=limit, simhash=None if d.get("sim") is None else int(d["sim"]),
            schema=str(d.get("schema", "")), empty=bool(d.get("empty")),
            order=(float(order[0]), str(order[1])) if order else None,
            source=Source.from_json(d["source"]) if d.get("source") else None,
            round=d.get("round"), version=version_from_json(d.get("v")), passed=[str(r) for r in d.get("passed") or []],
            expected=int(d.get("expected", 0)),
            got=[int(p) for p in d.get("got") or []],
            summary=MatchSummary.from_json(d.get("summary") or {}, limit),
            early={str(r): [int(p) for p in ps] for r, ps in (d.get("early") or {}).items()},
            early_matches={str(r): [Match.from_wire(w) for w in ws]
                           for r, ws in (d.get("early_matches") or {}).items()},
            pending=_pending_from_json(d.get("pending") or [], limit),
            deleting=bool(d.get("deleting")),
            published=bool(d.get("published")), revised=bool(d.get("revised")),
            published_at=float(d.get("at", 0.0)), held=bool(d.get("held")),
            placed=None if d.get("placed") is None else [int(p) for p in d["placed"]],
            dropping=[int(p) for p in d.get("dropping") or []],
        )

    # -- transitions ---------------------------------------------------------------------------

    @property
    def complete(self) -> bool:
        return self.simhash is not None and self.round is not None and len(self.got) >= self.expected

    def _merge(self, matches: list[Match]) -> bool:
        """Count the canonically earlier matches; True if any was new."""
        assert self.order is not None
        changed = False
        for m in matches:
            if m.id != self.doc and m.order < self.order:  # a redelivered document never matches itself
                changed = self.summary.add(m) or changed
        return changed

    def expect(self, round_id: str, expected: int, order: Order, source: Source, simhash: int, schema: str,
               empty: bool = False, delete: bool = False, version: Version | None = None) -> tuple[bool, bool]:
        """The header of a round: (complete now?, a round was superseded: an unpublished older one by
        this, or this one, an older version than the current one?)."""
        superseded = False
        if round_id != self.round:
            if not newer_version(version, round_id, self.version, self.round):
                first = round_id not in self.passed  # counted once, not again when redelivered
                self._pass(round_id)  # an older version, or a replay of one: the newer round stands
                return False, first
            # an unfinished deletion, or a version without its verdict, is replaced by this record
            superseded = self.round is not None and (self.deleting or not self.published)
            if self.round is not None:  # a new version of the document: its probe finds everything again
                self.summary = MatchSummary(self.limit)
                self.revised = self.held = False
                if not delete:  # a deletion needs to know whether a verdict of the document is out
                    self.published = False
            self.deleting = delete
            if self.round is not None:
                self._pass(self.round)
            self.round, self.version, self.expected = round_id, version, expected
            self.placed, self.dropping = None, []  # known only when a route begins the round (``route``)
            self.got = self.early.pop(round_id, [])
            pending = self.early_matches.pop(round_id, [])
            self.order, self.simhash = order, simhash
            self._merge(pending)
            revisions = self.pending.pop(simhash, None)
            if revisions is not None:  # canonically earlier than this version by construction (ProbeStage)
                self.summary.merge(revisions)
        self.order, self.source = order, source
        self.simhash, self.schema, self.empty = simhash, schema, empty
        return self.complete, superseded

    def route(self, header: Header, targets: Collection[int], partitions: int) -> tuple[list[int] | None, bool, bool]:
        """A route of ``header``'s round to the index partitions ``targets`` (of ``partitions``): (the
        partitions it drops earlier versions from, None if the round is refused as an older version;
        complete now?; a round was superseded?). A redelivered route of the current round gets the same
        drops (none once complete) and changes nothing else: the order its first target settled stays."""
        if header.round == self.round:  # a round begun without a route may have reached any partition
            again = [p for p in range(partitions) if p not in targets] if self.placed is None else self.dropping
            return list(again), False, False
        earlier = range(partitions) if self.placed is None else {*self.placed, *self.dropping}
        drops = sorted(p for p in earlier if p not in targets)
        complete, superseded = self.expect(header.round, len(targets) + len(drops), header.order, header.source,
                                           header.simhash, header.schema, header.empty, header.delete, header.version)
        if self.round != header.round:
            return None, False, superseded
        self.placed, self.dropping = sorted(targets), drops
        return drops, complete, superseded

    def settle(self) -> None:
        """Once the round is complete its drops are done: the next version need not send them again."""
        if self.dropping and self.complete:
            self.dropping = []

    def answer(self, round_id: str, partition: int, matches: list[Match], final: bool = True) -> bool:
        """(A piece of) one partition's answer; True if the current round is complete after it."""
        if round_id != self.round:
            if round_id not in self.passed:  # its header has not arrived yet: keep it for then
                parts = self.early.setdefault(round_id, [])
                if final and partition not in parts:
                    parts.append(partition)
                self.early_matches.setdefault(round_id, []).extend(matches)
                for old in list(self.early)[:-PENDING_VERSIONS]:  # rounds whose headers may never come
                    self.early.pop(old, None)
                    self.early_matches.pop(old, None)
            return False  # else a superseded round's late answer
        if final and partition not in self.got:
            self.got.append(partition)
        self._merge(matches)
        return self.complete

    def _pass(self, round_id: str) -> None:
        """``round_id`` will not be the current round again: forget its early answers, drop its late ones."""
        self.early.pop(round_id, None)
        self.early_matches.pop(round_id, None)
        if round_id in self.passed:
            self.passed.remove(round_id)
        self.passed = [*self.passed, round_id][-PENDING_VERSIONS:]

    def revise(self, match: Match, version: int) -> bool:
        """A canonically earlier document matched the version of this one whose SimHash is ``version``;
        True if a republish is due."""
        if self.round is None or version != self.simhash:  # that version's header is still to come
            self.pending.setdefault(version, MatchSummary(self.limit)).add(match)
            for old in list(self.pending)[:-PENDING_VERSIONS]:
                del self.pending[old]
            return False
        new = self._merge([match])
        if new and self.published:
            self.revised = True
            return True
        return False


def _pending_from_json(entries: list[Any], limit: int) -> dict[int, MatchSummary]:
    """Revisions by version; also reads the older form, one ``[simhash, match]`` pair per revision."""
    pending: dict[int, MatchSummary] = {}
    for sim, value in entries:
        if isinstance(value, dict):
            pending[int(sim)] = MatchSummary.from_json(value, limit)
        else:
            pending.setdefault(int(sim), MatchSummary(limit)).add(Match.from_wire(value))
    return pending
