"""Worker settings: precedence, errors naming the problem, the example config, detection settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from stream.errors import ConfigError
from stream.service.settings import load_settings
from stream.service.stages.messages import Source

SRC = Source("documents", 1, 42, 1000.0)


def test_settings_precedence_file_env_overrides(tmp_path: Path) -> None:
    cfg = tmp_path / "dedup.yaml"
    cfg.write_text("broker: kafka://file:1\npartitions: 3\nsecurity:\n  protocol: SASL_SSL\n  sasl_username: u\n")
    s = load_settings(cfg, env={"DEDUP_PARTITIONS": "5", "DEDUP_SASL_PASSWORD": "p"}, batch_size=7)
    assert (s.broker, s.partitions, s.batch_size) == ("kafka://file:1", 5, 7)
    assert s.security.confluent() == {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "u",
                                      "sasl.password": "p"}
    assert s.bootstrap == "file:1"
    assert load_settings(env={"DEDUP_BROKER": "kafka://a:1;kafka://b:2"}).bootstrap == "a:1,b:2"
    assert load_settings(env={}).local_hops is True
    assert load_settings(env={"DEDUP_LOCAL_HOPS": "false"}).local_hops is False
    flag = tmp_path / "hops.yaml"
    flag.write_text("local_hops: no\n")  # YAML's own boolean
    assert load_settings(flag, env={}).local_hops is False
    assert load_settings(env={}).verify_once is True
    assert load_settings(env={"DEDUP_VERIFY_ONCE": "off"}).verify_once is False


def test_settings_errors_name_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("partitons: 3\n")
    with pytest.raises(ConfigError, match="partitons"):
        load_settings(bad, env={})
    with pytest.raises(ConfigError, match="integer"):
        load_settings(env={"DEDUP_PARTITIONS": "many"})
    with pytest.raises(ConfigError, match="local_hops must be true or false"):
        load_settings(env={"DEDUP_LOCAL_HOPS": "sometimes"})


def test_the_example_config_names_every_setting_with_its_default() -> None:
    from dataclasses import fields, replace

    import yaml

    from stream.service.settings import Security, Settings

    path = Path(__file__).resolve().parents[2] / "stream" / "data" / "dedup.example.yaml"
    keys = set(yaml.safe_load(path.read_text(encoding="utf-8")))
    assert keys == {f.name for f in fields(Settings)}
    assert set(yaml.safe_load(path.read_text(encoding="utf-8"))["security"]) == {f.name for f in fields(Security)}
    loaded = load_settings(path, env={})
    assert loaded == replace(Settings(), broker="kafka://127.0.0.1:9092")


def test_detection_settings_take_durations_and_check_ranges() -> None:
    s = load_settings(env={"DEDUP_RETENTION": "30d", "DEDUP_THRESHOLD": "0.9", "DEDUP_SEGMENTER": "jieba"})
    assert (s.retention, s.match_settings().threshold, s.fingerprint_config().segmenter) == (2_592_000.0, 0.9, "jieba")
    assert load_settings(env={"DEDUP_RETENTION": "none"}).retention is None
    with pytest.raises(ConfigError, match="retention must be a duration"):
        load_settings(env={"DEDUP_RETENTION": "a month"})
    with pytest.raises(ConfigError, match="threshold must be between 0 and 1"):
        load_settings(env={"DEDUP_THRESHOLD": "1.5"})
    with pytest.raises(ConfigError, match="weighting must be one of"):
        load_settings(env={"DEDUP_WEIGHTING": "idf"})
