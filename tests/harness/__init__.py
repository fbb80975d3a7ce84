"""The integration harness: a deployment on a real broker (workers as subprocesses) and the tools that
watch it from outside. Used by the integration tests and by the reliability benchmarks."""

from tests.harness.deployment import Deployment, Row, demo_docs, demo_pairs, listen_port, reference, row, rows
from tests.harness.observe import (
    Supervisor,
    VerdictWatch,
    accounted,
    compare,
    disk_bytes,
    http_status,
    load,
    metric,
    publish,
    raw_values,
    settled_table,
)

__all__ = [
    "Deployment",
    "Row",
    "Supervisor",
    "VerdictWatch",
    "accounted",
    "compare",
    "demo_docs",
    "demo_pairs",
    "disk_bytes",
    "http_status",
    "listen_port",
    "load",
    "metric",
    "publish",
    "raw_values",
    "reference",
    "row",
    "rows",
    "settled_table",
]
