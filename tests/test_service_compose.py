"""docker-compose.yml and Dockerfile, checked without Docker: the Compose Specification schema
(vendored, see tests/fixtures/compose/NOTICE.md) plus the invariants the service relies on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _compose() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert isinstance(data, dict)
    return data


def test_compose_file_matches_the_compose_specification() -> None:
    schema = json.loads((ROOT / "tests/fixtures/compose/compose_spec.json").read_text())
    jsonschema.validate(_compose(), schema)


def test_compose_uses_official_kafka_in_kraft_mode_and_applies_the_topology_first() -> None:
    services = _compose()["services"]
    kafka = services["kafka"]
    assert kafka["image"].startswith("apache/kafka:")
    assert "controller" in kafka["environment"]["KAFKA_PROCESS_ROLES"]
    assert services["topology"]["command"] == ["topology", "apply"]
    assert services["worker"]["depends_on"]["topology"]["condition"] == "service_completed_successfully"
    # scalable: no fixed container name, no host port, state in a per-replica volume
    worker = services["worker"]
    assert "container_name" not in worker and "ports" not in worker
    assert worker["volumes"] == ["/var/lib/dedup"]
    assert worker["environment"]["DEDUP_DATA_DIR"] == "/var/lib/dedup"


def test_compose_settings_are_real_worker_settings() -> None:
    from stream.service.settings import load_settings

    env = {k: str(v) for k, v in _compose()["x-dedup-env"].items()}
    settings = load_settings(env=env)
    assert settings.broker == "kafka://kafka:9092" and settings.partitions == 8


def test_dockerfile_installs_the_project_and_runs_the_cli() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "pip install . " in text
    assert 'ENTRYPOINT ["dedup"]' in text
    for path in ("stream", "topology", "pyproject.toml"):
        assert path in text and (ROOT / path).exists()
