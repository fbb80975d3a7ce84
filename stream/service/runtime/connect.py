"""Is the broker there? One metadata request, for commands before they start and for the worker's
health check."""

from __future__ import annotations

from collections.abc import Callable

from stream.errors import BrokerUnavailable, ConfigError
from stream.service.settings import Settings


def ensure_reachable(settings: Settings) -> None:
    """Raise ``BrokerUnavailable`` unless the broker answers a metadata request within the settings'
    ``connect_timeout``."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    timeout = settings.connect_timeout
    admin = AdminClient(settings.confluent())
    try:
        admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        admin.poll(0)  # hands librdkafka's queued log lines to its logger: shown with --debug only
        if exc.args and exc.args[0].code() == KafkaError._AUTHENTICATION:  # a setting, not an outage
            raise ConfigError(f"the broker at {settings.bootstrap} refused the credentials ({exc.args[0].str()}); "
                              f"check DEDUP_SASL_USERNAME, DEDUP_SASL_PASSWORD, DEDUP_SASL_MECHANISM") from None
        raise BrokerUnavailable(f"no Kafka broker answers at {settings.bootstrap} (waited {timeout:.0f} s: "
                                f"{exc.args[0].str() if exc.args else exc}); check --broker / DEDUP_BROKER") from None


def broker_ping(settings: Settings) -> Callable[[float], None]:
    """A metadata request to the broker (raises when it does not answer within the timeout)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(settings.confluent())

    def ping(timeout: float) -> None:
        admin.list_topics(timeout=timeout)

    return ping
