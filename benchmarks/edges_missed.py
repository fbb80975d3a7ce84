"""Why each same-source pair of a track was not reported (``python -m benchmarks edges --missed``).

Per pair: the two documents' shapes and sizes (characters of the text as written, distinct shingles
of what the fingerprinter kept, anchors), whether the index proposed it (bands or SimHash blocks,
the anchor table, neither), the verified score and containment with its error and estimator, and
the exact Jaccard and containment of the texts as written: enough to tell a missing candidate from a
rejected one, and a rejected one from one the rule rightly leaves out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.accuracy_report import Pair
from stream.fingerprint import Fingerprint
from stream.fingerprint.scores import overlap


def missed_pairs(found: dict[Pair, str], truth: dict[Pair, float], fps: list[Fingerprint],
                 docs: list[dict[str, Any]], proposed: dict[Pair, str],
                 exact: Callable[[Pair], tuple[float, float]]) -> list[dict[str, Any]]:
    by_id = {fp.doc_id: fp for fp in fps}
    doc = {d["id"]: d for d in docs}
    rows = []
    for p in sorted(set(truth) - set(found)):
        a, b = by_id[p[0]], by_id[p[1]]
        ov = overlap(a, b)
        jaccard, containment = exact(p)
        rows.append({
            "pair": list(p), "shapes": [doc[i].get("shape", "") for i in p],
            "chars": [len(doc[i].get("main", doc[i].get("text", ""))) for i in p],
            "shingles": [a.sketch.size, b.sketch.size], "anchors": [len(a.anchors()[0]), len(b.anchors()[0])],
            "proposed": proposed.get(p, "no"),
            "score": round(ov.score, 4), "containment": round(ov.containment, 4),
            "containment_error": round(ov.containment_error, 4), "containment_sampled": ov.containment_sampled,
            "exact_jaccard": round(jaccard, 4), "exact_containment": round(containment, 4)})
    return rows
