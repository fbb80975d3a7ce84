"""Kafka security settings, checked once and handed to both clients we use: confluent-kafka
(librdkafka: publish, verdicts, topology, the broker checks) and Faust (aiokafka: the worker).

The two clients disagree when left to themselves (with a user and password but no mechanism,
librdkafka picks GSSAPI and aiokafka PLAIN), so nothing is left to their defaults: the protocol and
mechanism are validated here, case-insensitively, and the mechanism defaults to PLAIN for both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stream.errors import ConfigError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")  # what both clients implement alike
DEFAULT_MECHANISM = "PLAIN"
# how each setting is spelled in the environment and the config file, for error messages
_WHERE = {"protocol": "DEDUP_SECURITY_PROTOCOL / security.protocol",
          "sasl_mechanism": "DEDUP_SASL_MECHANISM / security.sasl_mechanism",
          "sasl_username": "DEDUP_SASL_USERNAME / security.sasl_username",
          "sasl_password": "DEDUP_SASL_PASSWORD / security.sasl_password",
          "ssl_cafile": "DEDUP_SSL_CAFILE / security.ssl_cafile",
          "ssl_certfile": "DEDUP_SSL_CERTFILE / security.ssl_certfile",
          "ssl_keyfile": "DEDUP_SSL_KEYFILE / security.ssl_keyfile"}


@dataclass(frozen=True)
class Security:
    """Use ``Security.checked(...)`` to build one from user input: it normalises and validates."""

    protocol: str = "PLAINTEXT"  # PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
    sasl_mechanism: str | None = None  # PLAIN (the default under SASL) | SCRAM-SHA-256 | SCRAM-SHA-512
    sasl_username: str | None = None
    sasl_password: str | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def ssl(self) -> bool:
        return self.protocol.endswith("SSL")

    @classmethod
    def checked(cls, **values: Any) -> Security:
        """Raise ``ConfigError`` (exit 3) naming the setting for anything either client would reject
        or read differently."""
        given: dict[str, Any] = {k: (None if v is None or str(v) == "" else str(v)) for k, v in values.items()}
        protocol = _choice("protocol", given.get("protocol") or "PLAINTEXT", PROTOCOLS)
        mechanism = given.get("sasl_mechanism")
        if mechanism is not None:
            mechanism = _choice("sasl_mechanism", mechanism, MECHANISMS)
        given["sasl_mechanism"] = mechanism
        security = cls(**{**given, "protocol": protocol})
        security._check_sasl()
        security._check_ssl()
        return security

    def _check_sasl(self) -> None:
        sasl_given = [k for k in ("sasl_mechanism", "sasl_username", "sasl_password") if getattr(self, k)]
        if not self.sasl and sasl_given:
            raise ConfigError(f"{_WHERE[sasl_given[0]]} is set but the security protocol is {self.protocol}: "
                              f"use SASL_PLAINTEXT or SASL_SSL ({_WHERE['protocol']})")
        if self.sasl:
            for name in ("sasl_username", "sasl_password"):
                if not getattr(self, name):
                    raise ConfigError(f"security protocol {self.protocol} needs {_WHERE[name]}")

    def _check_ssl(self) -> None:
        files = [k for k in ("ssl_cafile", "ssl_certfile", "ssl_keyfile") if getattr(self, k)]
        if files and not self.ssl:
            raise ConfigError(f"{_WHERE[files[0]]} is set but the security protocol is {self.protocol}: "
                              f"use SSL or SASL_SSL ({_WHERE['protocol']})")
        if self.ssl_keyfile and not self.ssl_certfile:
            raise ConfigError(f"{_WHERE['ssl_keyfile']} needs {_WHERE['ssl_certfile']}")
        for name in files:
            if not Path(str(getattr(self, name))).is_file():
                raise ConfigError(f"{_WHERE[name]}: file {getattr(self, name)} does not exist")

    @property
    def mechanism(self) -> str | None:
        """The SASL mechanism both clients use, or None without SASL."""
        return (self.sasl_mechanism or DEFAULT_MECHANISM) if self.sasl else None

    def confluent(self) -> dict[str, Any]:
        conf: dict[str, Any] = {"security.protocol": self.protocol}
        optional = {
            "sasl.mechanism": self.mechanism,
            "sasl.username": self.sasl_username,
            "sasl.password": self.sasl_password,
            "ssl.ca.location": self.ssl_cafile,
            "ssl.certificate.location": self.ssl_certfile,
            "ssl.key.location": self.ssl_keyfile,
        }
        conf.update({k: v for k, v in optional.items() if v})
        return conf

    def faust(self) -> Any:
        """A faust credentials object, or None for PLAINTEXT."""
        if self.protocol == "PLAINTEXT":
            return None
        import ssl

        import faust

        context = None
        if self.ssl:
            context = ssl.create_default_context(cafile=self.ssl_cafile)
            if self.ssl_certfile:
                context.load_cert_chain(self.ssl_certfile, self.ssl_keyfile)
        if self.sasl:
            return faust.SASLCredentials(username=self.sasl_username, password=self.sasl_password,
                                         mechanism=self.mechanism, ssl_context=context)
        return faust.SSLCredentials(context)


def _choice(name: str, raw: str, choices: tuple[str, ...]) -> str:
    value = raw.strip().upper().replace("_", "-") if name == "sasl_mechanism" else raw.strip().upper()
    if value not in choices:
        raise ConfigError(f"{_WHERE[name]} must be one of {', '.join(choices)}, got {raw!r}")
    return value
