"""The versions of faust-streaming, aiokafka and mode-streaming the patches of this package were
checked against, and the check that the installed ones are among them.

The patches replace private methods and read private attributes, which a release may rename or
change in meaning without notice: outside these ranges the worker's delivery guarantees are unknown,
so it refuses to start. Each range is the one pyproject.toml pins (``tests/service/test_patches.py``
holds the two equal). Within faust-streaming, the patched sources (``faust/transport/consumer.py``,
``faust/tables/recovery.py``, ``faust/transport/drivers/aiokafka.py``, ``faust/stores/rocksdb.py``) are
identical from 0.14.1 to 0.15.3; the tests run on faust-streaming 0.15.3, aiokafka 0.14.0 and
mode-streaming 0.7.1.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from importlib import metadata

from stream.errors import UnsupportedVersion

# distribution -> (lowest supported version, first unsupported version)
SUPPORTED: dict[str, tuple[str, str]] = {
    "faust-streaming": ("0.15.3", "0.16"),
    "aiokafka": ("0.14.0", "0.15"),
    "mode-streaming": ("0.7.1", "0.8"),
}


def release(version: str) -> tuple[int, ...]:
    """The release numbers of a version string (``0.16.0rc1`` -> (0, 16, 0): a pre-release of 0.16
    counts as 0.16, which is refused)."""
    match = re.match(r"\d+(?:\.\d+)*", version)
    if match is None:
        raise UnsupportedVersion(f"cannot read the version {version!r}")
    return tuple(int(part) for part in match.group().split("."))


def requirement(dist: str) -> str:
    """The pip requirement of a supported range, as pyproject.toml spells it."""
    low, high = SUPPORTED[dist]
    return f"{dist}>={low},<{high}"


def check_versions(installed: Callable[[str], str] = metadata.version) -> None:
    """Raise ``UnsupportedVersion`` (one line, exit code 3) unless each patched library is installed in
    its supported range. ``installed``: distribution name -> installed version."""
    for dist, (low, high) in SUPPORTED.items():
        try:
            version = installed(dist)
        except metadata.PackageNotFoundError:
            raise UnsupportedVersion(f"{dist} is not installed: pip install '{requirement(dist)}'") from None
        if not release(low) <= release(version) < release(high):
            raise UnsupportedVersion(
                f"{dist} {version} is installed, but the worker patches its internals and supports only "
                f"{requirement(dist)}: pip install '{requirement(dist)}'")
