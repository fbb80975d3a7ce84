"""docker-compose.yml and Dockerfile, checked without Docker: the Compose Specification schema
(vendored, see tests/fixtures/compose/NOTICE.md) plus the invariants the service relies on."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _compose() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert isinstance(data, dict)
    return data


def _schema() -> dict[str, Any]:
    data = json.loads((ROOT / "tests/fixtures/compose/compose-spec.json").read_text())
    assert isinstance(data, dict)
    return data


def test_compose_file_matches_the_compose_specification() -> None:
    schema = _schema()
    assert schema["$schema"].endswith("draft-07/schema") and "include" in schema["properties"]  # the current spec
    jsonschema.validate(_compose(), schema)
    broken = _compose()
    broken["services"]["worker"]["restart_policy"] = "on-failure"  # not a service key: the schema must say so
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_compose_uses_official_kafka_in_kraft_mode_and_applies_the_topology_first() -> None:
    services = _compose()["services"]
    kafka = services["kafka"]
    assert kafka["image"].startswith("apache/kafka:")
    assert "controller" in kafka["environment"]["KAFKA_PROCESS_ROLES"]
    assert services["topology"]["command"] == ["topology", "apply"]
    assert services["worker"]["depends_on"]["topology"]["condition"] == "service_completed_successfully"
    # scalable: no fixed container name, a host port range (one per replica) on loopback, state in a
    # per-replica volume
    worker = services["worker"]
    assert "container_name" not in worker
    assert worker["ports"] == ["127.0.0.1:9100-9107:9100"]
    assert worker["volumes"] == ["/var/lib/dedup"]
    assert worker["environment"]["DEDUP_DATA_DIR"] == "/var/lib/dedup"


def test_compose_settings_are_real_worker_settings() -> None:
    from stream.service.settings import load_settings

    env = {k: str(v) for k, v in _compose()["x-dedup-env"].items()}
    settings = load_settings(env=env)
    assert settings.broker == "kafka://kafka:9092" and (settings.partitions, settings.index_partitions) == (8, 2)
    assert (settings.metrics_host, settings.metrics_port) == ("0.0.0.0", 9100)


def test_compose_builds_every_dedup_service_and_checks_worker_health() -> None:
    services = _compose()["services"]
    for name in ("topology", "worker", "cli"):
        assert services[name]["build"] == "." and services[name]["image"] == "stream-dedup:latest", name
    check = " ".join(services["worker"]["healthcheck"]["test"])
    assert "/health" in check and ":9100/" in check
    kafka = services["kafka"]
    volume = next(v for v in kafka["volumes"] if v.startswith("kafka-data:"))
    assert kafka["environment"]["KAFKA_LOG_DIRS"] == volume.split(":", 1)[1]  # the broker writes on the volume


def _closure(name: str, seen: dict[str, list[str]]) -> None:
    """Every distribution ``name`` needs (no extras), with the tags of the wheel it was installed from."""
    import re
    from importlib import metadata

    from packaging.requirements import Requirement

    key = re.sub(r"[-_.]+", "-", name).lower()
    if key in seen:
        return
    dist = metadata.distribution(name)
    wheel = dist.read_text("WHEEL") or ""
    seen[key] = [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")]
    for raw in dist.requires or []:
        req = Requirement(raw)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            _closure(req.name, seen)


def test_the_image_installs_without_a_compiler() -> None:
    """The Dockerfile's `pip install .` on python:3.11-slim, which has no compiler, needs every dependency
    as a wheel from the index or pure Python. pip tags a wheel it compiled itself with the bare platform
    (``linux_x86_64``), an index wheel with a portable one (``manylinux_2_28_x86_64``), pure Python with
    ``any``: this environment, installed the same way, must hold no self-compiled wheel."""
    seen: dict[str, list[str]] = {}
    _closure("stream-dedup", seen)
    assert {"rjieba", "rocksdict", "numba", "confluent-kafka", "faust-streaming"} <= set(seen)
    portable = re.compile(r"-(any|(many|musl)linux\w*|macosx\w*|win\w*)$")
    compiled_here = {name: tags for name, tags in seen.items() if tags and not all(map(portable.search, tags))}
    assert compiled_here == {}, f"built locally, needs a compiler in the image: {compiled_here}"
    assert "jieba_fast" not in seen and "jieba-fast" not in seen


def test_dockerfile_installs_the_project_and_runs_the_cli() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "pip install . " in text
    assert 'ENTRYPOINT ["dedup"]' in text
    for path in ("stream", "topology", "pyproject.toml"):
        assert path in text and (ROOT / path).exists()
    # a test the comments name exists, with the test function named
    for test_file in re.findall(r"tests/[\w/]+\.py", text):
        assert (ROOT / test_file).is_file(), test_file
    assert "test_the_image_installs_without_a_compiler" in text


def test_workers_restart_on_75_and_4_only() -> None:
    """Docker's on-failure restarts on any non-zero code: the restart gate passes 75 and 4 through
    and turns the others into a stop (exit 3 after the broker lost data used to loop forever)."""
    worker = _compose()["services"]["worker"]
    assert worker["restart"] == "on-failure"
    assert worker["entrypoint"][:3] == ["python", "-m", "stream.service.runtime.restart_gate"]
    from stream.service.runtime.restart_gate import RESTARTABLE

    assert {75, 4} == RESTARTABLE


def test_every_bind_mount_names_a_file_in_the_repository() -> None:
    """A relative bind mount of a missing path makes Docker create an empty root-owned directory."""
    for name, service in _compose()["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith((".", "/")) and ":" in volume:
                assert (ROOT / source).exists(), f"{name} mounts {source}, which is not in the repository"


def test_the_monitoring_profile_runs_prometheus_grafana_and_a_kafka_ui_on_loopback() -> None:
    services = _compose()["services"]
    monitoring = {name for name, s in services.items() if "monitoring" in s.get("profiles", [])}
    assert monitoring == {"prometheus", "grafana", "kafka-ui"}
    for name, service in services.items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond the host's loopback"
    prometheus = yaml.safe_load((ROOT / "monitoring/prometheus/prometheus.yml").read_text())
    job = prometheus["scrape_configs"][0]
    assert job["dns_sd_configs"][0]["names"] == ["worker"] and job["dns_sd_configs"][0]["port"] == 9100
