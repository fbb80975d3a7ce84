"""The patches of Faust, aiokafka and mode (``stream.service.runtime.patches``): the version check
refuses what they were not checked against, and each patch replaces the attribute it names, which
exists in the installed version."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from stream.errors import EXIT_CONFIG, UnsupportedVersion
from stream.service.runtime import patches
from stream.service.runtime.patches.target import Patch
from stream.service.runtime.patches.versions import SUPPORTED, check_versions, release

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def installed(**versions: str):  # type: ignore[no-untyped-def]
    """The versions of SUPPORTED's lowest bounds, with ``versions`` (dist_name with _ for -) over them."""
    chosen = {dist: low for dist, (low, _high) in SUPPORTED.items()}
    chosen.update({name.replace("_", "-"): version for name, version in versions.items()})
    return chosen.__getitem__


def test_the_lowest_supported_versions_pass() -> None:
    check_versions(installed())


@pytest.mark.parametrize("version", ["0.16.0", "0.16.0rc1", "1.0", "0.15.2", "0.11.3"])
def test_a_faust_outside_the_range_is_refused_in_one_line(version: str) -> None:
    with pytest.raises(UnsupportedVersion) as caught:
        check_versions(installed(faust_streaming=version))
    message = str(caught.value)
    assert f"faust-streaming {version} is installed" in message
    assert "faust-streaming>=0.15.3,<0.16" in message and "\n" not in message
    assert caught.value.exit_code == EXIT_CONFIG


def test_aiokafka_and_mode_are_checked_too() -> None:
    with pytest.raises(UnsupportedVersion, match=r"aiokafka 0\.15\.0"):
        check_versions(installed(aiokafka="0.15.0"))
    with pytest.raises(UnsupportedVersion, match=r"mode-streaming 0\.6\.0"):
        check_versions(installed(mode_streaming="0.6.0"))
    check_versions(installed(faust_streaming="0.15.9", aiokafka="0.14.7"))  # patch releases within the range


def test_release_numbers_compare_as_numbers() -> None:
    assert release("0.15.10") > release("0.15.9")
    assert release("0.14.0+local") == (0, 14, 0)


def test_pyproject_pins_the_supported_ranges() -> None:
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    for dist, (low, high) in SUPPORTED.items():
        pins = [d.split("#")[0].strip() for d in dependencies if d.startswith(dist)]
        assert pins == [f"{dist}>={low},<{high}"], dist


def test_the_installed_libraries_are_supported() -> None:
    check_versions()  # what the import of the package did: the suite runs on supported versions


def test_every_patched_and_read_attribute_exists_in_the_installed_version() -> None:
    names = [(t.owner, t.name) for module in patches.MODULES
             for t in (*getattr(module, "PATCHES", ()), *getattr(module, "READS", ()))]
    assert len(names) >= 15
    for owner, name in names:
        annotations = {k for klass in owner.__mro__ for k in vars(klass).get("__annotations__", {})}
        assert hasattr(owner, name) or name in annotations, f"{owner.__qualname__}.{name}"


def test_each_patch_replaces_the_attribute_it_names(monkeypatch: pytest.MonkeyPatch) -> None:
    every: list[Patch] = [p for module in patches.MODULES for p in getattr(module, "PATCHES", ())]
    assert {f"{p.owner.__name__}.{p.name}" for p in every} == {
        "Consumer.__init__", "Consumer.getmany", "Consumer.on_partitions_revoked", "Consumer._new_offset",
        "Consumer._commit_offsets", "Consumer.wait_first", "Recovery._build_highwaters",
        "Recovery._build_offsets", "AIOKafkaConsumer.__init__", "RocksDBOptions.as_options"}
    for patch in every:  # restored after the test: other tests may build real consumers
        monkeypatch.setattr(patch.owner, patch.name, getattr(patch.owner, patch.name))
    for module in patches.MODULES:
        if hasattr(module, "_state"):
            monkeypatch.setattr(module, "_state", dict(module._state))
    patches.install_patches(250, {"bootstrap.servers": "127.0.0.1:1"}, lambda lost: None)
    for patch in every:
        assert patch.owner.__dict__[patch.name] is patch.replacement, f"{patch.owner.__name__}.{patch.name}"
    assert patches.fetch_wait._state["fetch_max_wait_ms"] == 250
    assert patches.recovery_bounds._state["conf"] == {"bootstrap.servers": "127.0.0.1:1"}


@pytest.mark.integration  # starts processes of its own
def test_a_worker_with_an_unsupported_faust_stops_at_once_with_one_line(tmp_path: Path) -> None:
    # the installed faust-streaming reports another version: the real command line, before any broker
    script = ("import importlib.metadata as m\n"
              "real = m.version\n"
              "m.version = lambda d: '0.16.0' if d == 'faust-streaming' else real(d)\n"
              "from stream.cli import run\n"
              f"run(['worker', '--data-dir', {str(tmp_path)!r}])\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_CONFIG
    assert done.stderr.strip().splitlines() == [
        "dedup: error: faust-streaming 0.16.0 is installed, but the worker patches its internals and supports "
        "only faust-streaming>=0.15.3,<0.16: pip install 'faust-streaming>=0.15.3,<0.16'"]
    assert list(tmp_path.iterdir()) == []  # nothing started: no lock, no tables
