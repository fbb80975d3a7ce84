"""The Faust side of a worker: the app and its agents (app.py), Faust and aiokafka patches (offset_gaps.py,
recovery.py, faust_tuning.py), the table store (tablestore.py), the input ledger (ledger.py), health
and logs, the data dir, the embedded broker (embedded.py), the broker check (connect.py) and
``run_worker`` (worker.py)."""
