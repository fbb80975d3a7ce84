"""The streaming service: the core wired to Kafka through Faust, and the commands that drive it.

stages/    the worker's three stages as plain classes (no Faust): documents, probe, gather
runtime/   the Faust app that runs them, its patches of Faust and aiokafka, the table store,
           recovery, health, logs, the data dir, the embedded broker, ``run_worker``
commands/  the command line: worker, reset, publish (and ``DocumentProducer``), verdicts, demo,
           topology, broker, dlq
settings.py, metrics.py: what all of them share
"""
