"""The streaming service: the core wired to Kafka through Faust, and the commands that drive it.

stages/    the worker's three stages as plain classes (no Faust): documents, probe, gather
runtime/   the Faust app that runs them, its patches of Faust, aiokafka and mode (runtime/patches/),
           the table store, recovery, health, logs, the data dir, the embedded broker, ``run_worker``
commands/  the command line: worker, reset, publish (and ``DocumentProducer``), verdicts, demo,
           topology, broker, dlq
settings.py, metrics.py: what all of them share

``__all__`` is what the console and the command line use. The names load on first use (PEP 562): a
command imports only what it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stream.exports import lazy_exports

if TYPE_CHECKING:
    from stream.service.commands.common import broker_option, client_settings, config_option
    from stream.service.commands.reader import TopicReader
    from stream.service.runtime.logs import quiet_librdkafka
    from stream.service.settings import Settings

_MODULE_OF = {
    **dict.fromkeys(["broker_option", "client_settings", "config_option"], "commands.common"),
    "TopicReader": "commands.reader",
    "quiet_librdkafka": "runtime.logs",
    "Settings": "settings",
}
__getattr__ = lazy_exports(__name__, _MODULE_OF)


__all__ = ["Settings", "TopicReader", "broker_option", "client_settings", "config_option", "quiet_librdkafka"]
