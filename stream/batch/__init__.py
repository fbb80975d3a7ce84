"""Batch mode: ``dedup scan`` over JSONL files, with optional persistent state (Li & Han's
incremental processing: a later scan checks new documents against everything seen before)."""
