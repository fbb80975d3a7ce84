"""The service's commands (loaded lazily by ``stream.cli``): worker and reset (worker.py), publish with
``DocumentProducer`` (publish.py), verdicts, demo, topology, broker, and dlq list/replay (dlq.py, with
letters.py reading the dead-letter topic and replay.py its ledger); common.py holds what they share."""
