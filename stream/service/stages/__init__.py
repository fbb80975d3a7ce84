"""The worker's stages as plain classes: no Faust here (``stream.service.runtime`` wires them to agents).

documents.py  stage 1: parse, fingerprint, route (``DocumentStage``)
probe.py      stage 2: a partition's block index (``ProbeStage``)
gather.py     stage 3: answers and revisions -> verdicts (``GatherStage``; the state: gather_state.py)
hops.py       ``Pipeline``: hands what a stage produced to the next, over Kafka or in-process
messages.py   the wire formats between stages; stage_values.py: the plain values they pass
output.py     everything a worker writes to Kafka (one librdkafka producer)
dead_letters.py, routing.py: dead letters; which partition owns what
"""

from stream.service.stages.documents import DocumentStage
from stream.service.stages.gather import GatherStage
from stream.service.stages.hops import Pipeline
from stream.service.stages.probe import ProbeStage
from stream.service.stages.stage_values import InputRecord, Topics

__all__ = ["DocumentStage", "GatherStage", "InputRecord", "Pipeline", "ProbeStage", "Topics"]
