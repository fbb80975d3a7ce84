"""Integration fixtures: a deployment (tests.harness) per test on the session's broker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import Deployment, Row, demo_docs, reference


@pytest.fixture
def deployment(broker: Any, tmp_path: Path) -> Iterator[Deployment]:
    with Deployment.running(broker, tmp_path) as d:
        yield d


@pytest.fixture(scope="session")
def corpus() -> list[dict[str, Any]]:
    return demo_docs()


@pytest.fixture(scope="session")
def expected(corpus: list[dict[str, Any]]) -> dict[str, Row]:
    return reference(corpus)
