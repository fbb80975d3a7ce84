"""Security settings mean the same to both clients: what librdkafka (confluent-kafka) and aiokafka (via
Faust) are handed agrees field by field, and each client accepts its configuration."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from stream.errors import ConfigError
from stream.service.settings import load_settings


def both_clients(env: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth

    settings = load_settings(env={"DEDUP_BROKER": "kafka://127.0.0.1:9", **env})
    return settings.confluent(), dict(credentials_to_aiokafka_auth(settings.security.faust()))


def agree(confluent: dict[str, Any], aiokafka: dict[str, Any]) -> None:
    assert confluent["security.protocol"] == aiokafka["security_protocol"]
    assert confluent.get("sasl.mechanism") == aiokafka.get("sasl_mechanism")
    assert confluent.get("sasl.username") == aiokafka.get("sasl_plain_username")
    assert confluent.get("sasl.password") == aiokafka.get("sasl_plain_password")
    assert (aiokafka.get("ssl_context") is not None) == confluent["security.protocol"].endswith("SSL")


SASL = {"DEDUP_SASL_USERNAME": "alice", "DEDUP_SASL_PASSWORD": "secret"}


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "sasl_plaintext", "SASL_SSL", "sasl_ssl"])
def test_a_user_and_password_without_a_mechanism_mean_plain_to_both(protocol: str) -> None:
    confluent, aiokafka = both_clients({"DEDUP_SECURITY_PROTOCOL": protocol, **SASL})
    agree(confluent, aiokafka)
    assert (confluent["sasl.mechanism"], aiokafka["sasl_mechanism"]) == ("PLAIN", "PLAIN")
    assert confluent["security.protocol"] == protocol.upper()


@pytest.mark.parametrize("given,meant", [("scram-sha-256", "SCRAM-SHA-256"), ("SCRAM_SHA_512", "SCRAM-SHA-512"),
                                         ("plain", "PLAIN")])
def test_mechanisms_are_read_case_insensitively_alike(given: str, meant: str) -> None:
    confluent, aiokafka = both_clients({"DEDUP_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
                                        "DEDUP_SASL_MECHANISM": given, **SASL})
    agree(confluent, aiokafka)
    assert confluent["sasl.mechanism"] == meant


def test_plaintext_and_ssl_agree() -> None:
    for protocol in ("PLAINTEXT", "ssl"):
        confluent, aiokafka = both_clients({"DEDUP_SECURITY_PROTOCOL": protocol})
        agree(confluent, aiokafka)


def test_each_client_accepts_the_configuration_it_is_given() -> None:
    """librdkafka checks its configuration when a client is built (an unsupported mechanism fails
    there: "No provider for SASL mechanism GSSAPI"); aiokafka when its client is built too."""
    from aiokafka import AIOKafkaProducer
    from confluent_kafka import KafkaException, Producer

    async def aiokafka_client(auth: dict[str, Any]) -> None:
        AIOKafkaProducer(bootstrap_servers="127.0.0.1:9", **{k: v for k, v in auth.items() if v is not None})

    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        confluent, aiokafka = both_clients({"DEDUP_SECURITY_PROTOCOL": "SASL_SSL",
                                            "DEDUP_SASL_MECHANISM": mechanism, **SASL})
        Producer({**confluent, "log_level": 0})
        asyncio.run(aiokafka_client(aiokafka))
    confluent, _ = both_clients({"DEDUP_SECURITY_PROTOCOL": "SASL_SSL", **SASL})
    with pytest.raises(KafkaException, match="GSSAPI"):  # what librdkafka does left to its own default
        Producer({**{k: v for k, v in confluent.items() if k != "sasl.mechanism"}, "log_level": 0})


@pytest.mark.parametrize("env,words", [
    ({"DEDUP_SECURITY_PROTOCOL": "SASL_SSSL"}, ["DEDUP_SECURITY_PROTOCOL", "SASL_SSSL", "SASL_SSL"]),
    ({"DEDUP_SECURITY_PROTOCOL": "SASL_SSL", "DEDUP_SASL_MECHANISM": "GSSAPI", **SASL},
     ["DEDUP_SASL_MECHANISM", "GSSAPI", "SCRAM-SHA-256"]),
    ({"DEDUP_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "DEDUP_SASL_USERNAME": "alice"}, ["DEDUP_SASL_PASSWORD"]),
    ({"DEDUP_SECURITY_PROTOCOL": "SASL_PLAINTEXT"}, ["DEDUP_SASL_USERNAME"]),
    (SASL, ["DEDUP_SASL_USERNAME", "PLAINTEXT", "SASL_PLAINTEXT or SASL_SSL"]),
    ({"DEDUP_SSL_CAFILE": "/ca.pem"}, ["DEDUP_SSL_CAFILE", "SSL or SASL_SSL"]),
    ({"DEDUP_SECURITY_PROTOCOL": "SSL", "DEDUP_SSL_CAFILE": "/no/such/ca.pem"}, ["DEDUP_SSL_CAFILE", "does not exist"]),
])
def test_settings_either_client_would_reject_or_misread_are_config_errors(env: dict[str, str],
                                                                          words: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(env=env)
    for word in words:
        assert word in str(caught.value)


def test_the_config_file_takes_the_same_names(tmp_path: Path) -> None:
    config = tmp_path / "dedup.yaml"
    config.write_text("security:\n  protocol: sasl_plaintext\n  sasl_username: a\n  sasl_password: b\n")
    assert load_settings(config, env={}).security.mechanism == "PLAIN"
    config.write_text("security:\n  protocol: SASL_SSSL\n")
    with pytest.raises(ConfigError, match=r"security\.protocol must be one of"):
        load_settings(config, env={})
