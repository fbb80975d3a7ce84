"""The monitoring kit (monitoring/): Prometheus rules checked and unit-tested by promtool, the Grafana
dashboard and the rules asking only for metrics a worker exports."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "monitoring"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian package prometheus; "
                                                             ".ci/run installs it)")


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60, cwd=MONITORING)


@needs_promtool
def test_promtool_accepts_the_rules_and_the_prometheus_config() -> None:
    rules = _promtool("check", "rules", "prometheus/rules/dedup.yml")
    assert rules.returncode == 0 and "SUCCESS: 5 rules found" in rules.stdout, rules.stdout + rules.stderr
    config = _promtool("check", "config", "prometheus/prometheus.yml")
    assert config.returncode == 0, config.stdout + config.stderr


@needs_promtool
def test_each_alert_fires_when_it_should_and_not_otherwise() -> None:
    result = _promtool("test", "rules", "prometheus/tests/dedup.test.yml")
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_promtool_would_catch_a_broken_rule(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text("groups:\n  - name: x\n    rules:\n      - alert: X\n"
                      "        expr: sum(rate(dedup_documents_total[5m])\n")  # one parenthesis short
    assert _promtool("check", "rules", str(broken)).returncode != 0


def _exported_metrics() -> set[str]:
    """Every sample name the worker's registry can expose (counters with _total, histograms with
    _bucket/_sum/_count), plus Prometheus's own ``up``."""
    from prometheus_client import REGISTRY

    import stream.service.metrics  # noqa: F401  (registers the worker's metrics)

    names = {"up"}
    for family in REGISTRY.collect():
        base = family.name
        names |= {base, f"{base}_total", f"{base}_bucket", f"{base}_sum", f"{base}_count", f"{base}_created"}
    return names


def _metric_names(expr: str) -> set[str]:
    return {name for name in re.findall(r"\b([a-z_]+)\s*[{\[(]", expr) if name.startswith("dedup_") or name == "up"}


def test_the_dashboard_and_the_rules_use_only_metrics_the_worker_exports() -> None:
    exported = _exported_metrics()
    assert {"dedup_documents_judged_total", "dedup_verdicts_revised_total", "dedup_consumer_lag",
            "dedup_ready"} <= exported
    dashboard = json.loads((MONITORING / "grafana/dashboards/dedup.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    rules = yaml.safe_load((MONITORING / "prometheus/rules/dedup.yml").read_text())
    exprs += [rule["expr"] for group in rules["groups"] for rule in group["rules"]]
    used = set().union(*map(_metric_names, exprs))
    assert used and used <= exported, f"not exported: {sorted(used - exported)}"
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
    datasource = yaml.safe_load((MONITORING / "grafana/provisioning/datasources/prometheus.yml").read_text())
    uid = datasource["datasources"][0]["uid"]
    assert all(p["datasource"]["uid"] == uid for p in dashboard["panels"])
