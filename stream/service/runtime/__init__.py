"""The Faust side of a worker: the app and its agents (app.py), every patch of Faust, aiokafka and mode
(patches/), changelog recovery (recovery.py), the table store (tablestore.py), the input ledger
(ledger.py), health and logs, process tuning, the data dir, the embedded broker (embedded.py), the
broker check (connect.py) and ``run_worker`` (worker_process.py)."""
