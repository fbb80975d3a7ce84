"""Worker settings: defaults < config file (YAML) < environment (DEDUP_*) < command-line options.

Kafka security (SASL/SSL) is checked once (``security.Security``) and given alike to both clients we
use: Faust/aiokafka (worker) and confluent-kafka (publish, verdicts, topology).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from stream.detect import MatchSettings
from stream.durations import parse_duration
from stream.errors import ConfigError
from stream.fingerprint import FingerprintConfig
from stream.fingerprint.schema import SIMHASH_FEATURES
from stream.service.runtime.logs import LIBRDKAFKA_LOGGER
from stream.service.security import Security
from topology import Topology, load_topology

ENV_PREFIX = "DEDUP_"
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
LOG_FORMATS = ("text", "json")
_CHOICES = {"log_level": LOG_LEVELS, "log_format": LOG_FORMATS, "on_broker_data_loss": ("stop", "rebuild"),
            "segmenter": ("auto", "rjieba", "jieba"), "simhash_features": SIMHASH_FEATURES,
            "weighting": ("tf", "binary", "tfidf", "tfidf_len", "pos_weighted")}
_NONE = object()  # a setting explicitly set to none (retention: none), as opposed to not given


@dataclass(frozen=True)
class Settings:
    broker: str | None = None  # kafka://host:port[;host:port]; None = start the embedded broker
    app_id: str = "dedup"
    data_dir: Path = Path("dedup-data")
    partitions: int = 8  # of the documents, verdict and dead-letter topics: bounds the useful workers
    # of the internal topics and tables (probe, gather, block table, gather state): each index partition
    # indexes every document one of whose 28 table keys it owns, so few are cheapest (docs/service.md)
    index_partitions: int = 2
    replication: int = 1
    documents_topic: str = "documents"
    verdicts_topic: str = "verdicts"
    dlq_topic: str = "documents.dlq"
    # batching: agent 1 takes up to batch_size documents or waits batch_within seconds
    batch_size: int = 256
    batch_within: float = 0.02
    standby_replicas: int = 0  # standbys double changelog reads; 1 gives faster fail-over
    # how long a consumer-group rebalance waits for members; a new group also waits this long on
    # tansu (measured: join = rebalance timeout + ~1 s), so the embedded broker uses a short one
    rebalance_timeout: float = 10.0
    # Faust hard-codes 1500 ms; tansu then delays each of our 3 hops (see runtime/patches/fetch_wait.py)
    fetch_max_wait_ms: int = 20
    # hand a probe or gather message straight to the next stage when this worker owns its partition
    # (pipeline.Pipeline); off = every hop over Kafka, for comparison
    local_hops: bool = True
    # verify a near pair only in the partition of the lowest SimHash table it shares (BlockIndex
    # query once=): +26-38% throughput at 2 workers, but more revisions when copies race (docs/service.md)
    verify_once: bool = True
    # detection: the same names and defaults as `dedup scan` (stream/options.py); every one that changes
    # fingerprints or matching is recorded in the block table and checked at start (ProbeStage)
    k: int = MatchSettings.k
    threshold: float = MatchSettings.threshold
    containment_threshold: float = MatchSettings.containment_threshold
    containment_min_shingles: int = MatchSettings.containment_min_shingles
    retention: float | None = None  # seconds; DEDUP_RETENTION / --retention take 30d, 12h, 900s
    late_allowance: float = 3600.0  # with retention: how late a document may arrive and find all it should
    max_matches: int = MatchSettings.max_matches
    anchor_cap: int = MatchSettings.anchor_cap  # 0: no anchor table (docs/detect.md)
    segmenter: str = FingerprintConfig.segmenter
    simhash_features: str = FingerprintConfig.simhash_features
    weighting: str = FingerprintConfig.weighting
    bands: int = FingerprintConfig.bands
    prefix_bands: int = FingerprintConfig.prefix_bands
    short_text_chars: int = FingerprintConfig.short_text_chars
    metrics_port: int | None = None  # /metrics (Prometheus), /health and /ready on this port if set
    metrics_host: str = "127.0.0.1"  # bind address of that port (0.0.0.0 in a container)
    metrics_token: str | None = None  # if set, that port answers only requests with this bearer token
    log_level: str = "warning"
    log_format: str = "text"  # text | json (one object a line)
    # when the broker has lost data this worker's tables already hold (a restarted in-memory broker, a
    # deleted changelog): stop and say so (an operator runs `dedup reset`), or rebuild from scratch
    on_broker_data_loss: str = "stop"
    connect_timeout: float = 10.0  # seconds a command waits for the broker to answer before giving up
    # how long a worker rides out a broker it cannot reach (its batch unacknowledged, its output retried)
    # before it stops with exit 75; as Kafka Streams' task.timeout.ms (docs/service.md, "Outcomes and faults")
    task_timeout: float = 300.0
    # a document's verdict is republished (revised: true) at most once per interval; the revisions
    # between are merged and published together when it ends (docs/service.md, "The pipeline")
    revision_interval: float = 30.0
    # while the worker's input lag (records not yet processed, all its partitions and stages) is above
    # backlog_lag, revisions are held until it has stayed at or below it for a revision interval, at most
    # backlog_hold after the document's last publish (docs/service.md, "Revisions")
    backlog_lag: int = 1000
    backlog_hold: float = 3600.0
    # Kafka's default message.max.bytes: larger documents are rejected by `dedup publish` up front
    max_message_bytes: int = 1_000_000
    security: Security = field(default_factory=Security)

    # -- derived ---------------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """``host:port,host:port`` for confluent-kafka / kafka-python."""
        if not self.broker:
            raise ConfigError("no broker configured")
        hosts = self.broker.replace("kafka://", "").replace(";", ",")
        return ",".join(h.strip() for h in hosts.split(",") if h.strip())

    @property
    def faust_broker(self) -> str:
        return ";".join(f"kafka://{h}" for h in self.bootstrap.split(","))

    def confluent(self, **extra: Any) -> dict[str, Any]:
        # librdkafka writes its own log lines (one "%3|...|FAIL|" per connection attempt) straight to
        # stderr unless given a logger: routed to the "dedup.librdkafka" logger, which the command line
        # shows only with --debug and the worker at --loglevel debug (stream.service.runtime.logs)
        return {"bootstrap.servers": self.bootstrap, "log_level": 4, "logger": logging.getLogger(LIBRDKAFKA_LOGGER),
                **self.security.confluent(), **extra}

    def topology(self) -> Topology:
        return load_topology(
            app_id=self.app_id,
            partitions=self.partitions,
            index_partitions=self.index_partitions,
            replication=self.replication,
            documents=self.documents_topic,
            verdicts=self.verdicts_topic,
            dlq=self.dlq_topic,
        )

    def fingerprint_config(self) -> FingerprintConfig:
        return FingerprintConfig(segmenter=self.segmenter, simhash_features=self.simhash_features,
                                 weighting=self.weighting, bands=self.bands, prefix_bands=self.prefix_bands,
                                 short_text_chars=self.short_text_chars)

    def match_settings(self) -> MatchSettings:
        return MatchSettings(k=self.k, threshold=self.threshold, containment_threshold=self.containment_threshold,
                             containment_min_shingles=self.containment_min_shingles, retention=self.retention,
                             max_matches=self.max_matches, anchor_cap=self.anchor_cap)

    def with_overrides(self, **values: Any) -> Settings:
        return replace(self, **{k: v for k, v in values.items() if v is not None})


_SECURITY_FIELDS = {f.name for f in fields(Security)}
_SETTINGS_FIELDS = {f.name for f in fields(Settings)} - {"security"}


def _coerce(name: str, raw: Any) -> Any:
    if raw is None:
        return None
    if name == "data_dir":
        return Path(str(raw))
    if name in {"retention", "late_allowance", "task_timeout", "revision_interval",
                "backlog_hold"}:
        if name == "retention" and str(raw).strip().lower() in ("", "none"):
            return _NONE
        return parse_duration(raw, name)
    if name in {"partitions", "index_partitions", "replication", "batch_size", "standby_replicas", "k", "metrics_port",
                "fetch_max_wait_ms", "max_message_bytes", "containment_min_shingles", "max_matches", "anchor_cap",
                "bands", "prefix_bands", "short_text_chars", "backlog_lag"}:
        try:
            return int(raw)
        except ValueError as exc:
            raise ConfigError(f"{name} must be an integer, got {raw!r}") from exc
    if name in {"batch_within", "rebalance_timeout", "connect_timeout", "threshold", "containment_threshold"}:
        try:
            return float(raw)
        except ValueError as exc:
            raise ConfigError(f"{name} must be a number, got {raw!r}") from exc
    if name in _CHOICES:
        value = str(raw).strip().lower()
        if value not in _CHOICES[name]:
            raise ConfigError(f"{name} must be one of {', '.join(_CHOICES[name])}, got {raw!r}")
        return value
    if name in {"local_hops", "verify_once"}:
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text not in {"1", "true", "yes", "on", "0", "false", "no", "off"}:
            raise ConfigError(f"{name} must be true or false, got {raw!r}")
        return text in {"1", "true", "yes", "on"}
    return str(raw)


def load_settings(config_file: str | Path | None = None, env: dict[str, str] | None = None,
                  **overrides: Any) -> Settings:
    """Settings from (in rising priority) defaults, a YAML config file, DEDUP_* env, ``overrides``.

    The config file may also come from $DEDUP_CONFIG. Security keys live under ``security:`` in
    the file and as DEDUP_SECURITY_PROTOCOL, DEDUP_SASL_USERNAME, ... in the environment.
    """
    env = dict(os.environ if env is None else env)
    values: dict[str, Any] = {}
    security: dict[str, Any] = {}
    config_file = config_file or env.get(ENV_PREFIX + "CONFIG")
    if config_file:
        path = Path(config_file)
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ConfigError(f"config file {path} cannot be read: {exc}".splitlines()[0]) from None
        if not isinstance(data, dict):
            raise ConfigError(f"config file {path} must hold a mapping")
        for key, value in data.items():
            key = str(key).replace("-", "_")
            if key == "security" and isinstance(value, dict):
                security.update({str(k).replace("-", "_"): v for k, v in value.items()})
            elif key in _SETTINGS_FIELDS:
                values[key] = _coerce(key, value)
            else:
                raise ConfigError(f"config file {path}: unknown setting {key!r}")
    for name in _SETTINGS_FIELDS:
        if ENV_PREFIX + name.upper() in env:
            values[name] = _coerce(name, env[ENV_PREFIX + name.upper()])
    env_security = {"protocol": "SECURITY_PROTOCOL"}
    for name in _SECURITY_FIELDS:
        var = ENV_PREFIX + env_security.get(name, name.upper())
        if var in env:
            security[name] = env[var]
    for key, value in overrides.items():
        if value is None:
            continue
        if key in _SECURITY_FIELDS:
            security[key] = value
        elif key in _SETTINGS_FIELDS:
            values[key] = _coerce(key, value)
        else:
            raise ConfigError(f"unknown setting {key!r}")
    unknown = set(security) - _SECURITY_FIELDS
    if unknown:
        raise ConfigError(f"unknown security settings: {sorted(unknown)}")
    if values.get("broker") == "":
        values["broker"] = None
    values = {key: None if value is _NONE else value for key, value in values.items()}
    settings = Settings(**values, security=Security.checked(**security))
    if settings.task_timeout <= 0:
        raise ConfigError(f"task_timeout must be a positive duration, got {settings.task_timeout:g} s")
    if settings.backlog_lag < 0:
        raise ConfigError(f"backlog_lag must be a number of records >= 0, got {settings.backlog_lag}")
    settings.match_settings()  # checks ranges (threshold 0-1 ...) with one message each
    settings.fingerprint_config()
    return settings
