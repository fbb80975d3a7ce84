"""Ordinary mistakes get one line naming the problem and a documented exit code, never a traceback.

``dedup`` runs in this process (tests/harness/cli.py); the tests that need a process of their own (no
terminal, the entry point, commands waiting out a connect timeout at once) start one."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.harness.cli import dedup, dedup_process, one_line_error


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": "a", "text": "床前明月光，疑是地上霜。"}\n', encoding="utf-8")
    return path


def test_a_missing_input_file(tmp_path: Path) -> None:
    one_line_error(dedup("scan", str(tmp_path / "nope.jsonl")), 2, "nope.jsonl", "does not exist")


def test_an_output_path_that_cannot_be_written(docs: Path) -> None:
    one_line_error(dedup("scan", str(docs), "--out", "/nonexistent/x.jsonl"), 2, "/nonexistent/x.jsonl",
                   "No such file or directory")


def test_rejected_lines_make_scan_exit_1_after_judging_every_good_line(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b'{"id": "a", "text": "one"}\n\xff\xfe\x00\x01binary\n{"id": "b", "text": "two"}\n')
    result = dedup("scan", str(path))
    one_line_error(result, 1, "line 2: not UTF-8: byte 0xff at position 0", "rejected 1")
    assert result.stdout.count('"verdict"') == 2


def test_a_client_command_without_a_broker_says_how_to_get_one(docs: Path, tmp_path: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(tmp_path), "DEDUP_BROKER": ""}  # no `dedup broker` registered here
    one_line_error(dedup("publish", str(docs), env=env), 2, "no broker", "--broker", "dedup broker")


def test_bad_settings_and_data_dirs(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("")
    one_line_error(dedup("worker", "--data-dir", str(a_file)), 2, "is a file")  # click checks the option
    one_line_error(dedup("worker", env={"DEDUP_DATA_DIR": str(a_file)}), 3, "is a file")  # we check the setting
    one_line_error(dedup("worker", "--data-dir", str(tmp_path / "no" / "such" / "dir")), 3, "does not exist")
    one_line_error(dedup("worker", "--loglevel", "loud"), 2, "'loud' is not one of")
    one_line_error(dedup("worker", env={"DEDUP_PARTITIONS": "many"}), 3, "partitions must be an integer")
    config = tmp_path / "bad.yaml"
    config.write_text("partitons: 3\n")
    one_line_error(dedup("worker", "--config", str(config)), 3, "unknown setting 'partitons'")


def test_debug_adds_the_traceback(tmp_path: Path) -> None:
    result = dedup("--debug", "worker", "--data-dir", str(tmp_path / "no" / "such"))
    assert result.returncode == 3 and "Traceback" in result.stderr and "does not exist" in result.stderr


@pytest.mark.integration  # starts processes of its own
def test_help_lists_exit_codes_and_every_option_is_explained() -> None:
    import click

    from stream.cli import main

    result = dedup_process("--help")  # the entry point itself
    assert result.returncode == 0 and "Exit codes" in result.stdout and "75" in result.stdout

    def walk(group: click.Group, path: str) -> None:
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            assert command is not None and command.help, f"{path} {name} has no help"
            if isinstance(command, click.Group):
                walk(command, f"{path} {name}")
                continue
            for param in command.params:
                if isinstance(param, click.Option) and param.name != "help":
                    assert param.help, f"{path} {name}: {param.opts} has no help"

    walk(main, "dedup")


def only_line(result: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    """The error is exactly one line on standard error (besides the note of a found broker)."""
    one_line_error(result, code, *words)
    lines = [line for line in result.stderr.splitlines() if not line.startswith("using the broker started")]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.integration  # starts processes of its own
def test_an_unreachable_broker_is_one_line_from_every_command(docs: Path, tmp_path: Path) -> None:
    """librdkafka's own "%3|...|FAIL|" lines stay off stderr (they come with --debug)."""
    broker = f"kafka://127.0.0.1:{closed_port()}"
    env = {"DEDUP_CONNECT_TIMEOUT": "2", "DEDUP_DATA_DIR": str(tmp_path / "w")}
    commands = (("verdicts",), ("publish", str(docs)), ("dlq", "list"), ("topology", "check"), ("worker",))
    with ThreadPoolExecutor(len(commands)) as pool:  # each waits out its connect timeout: at once, not in turn
        results = list(pool.map(lambda args: dedup_process(*args, "--broker", broker, env=env), commands))
    for args, result in zip(commands, results, strict=True):
        assert "%3|" not in result.stderr and "FAIL" not in result.stderr, (args, result.stderr)
        only_line(result, 4, "no Kafka broker answers at 127.0.0.1:", "waited 2 s")


def test_a_bad_option_value_is_one_line_and_exit_2() -> None:
    line = only_line(dedup("worker", "--retention", "30days"), 2, "--retention", "30days", "30d")
    assert line.startswith("dedup worker: error:")
    only_line(dedup("scan", "--retention", "30days", "x.jsonl"), 2, "--retention")
    only_line(dedup("worker", "--late-allowance", "soon"), 2, "--late-allowance")
    only_line(dedup("no-such-command"), 2, "No such command")
    only_line(dedup("verdicts", "--since", "yesterday-ish"), 2, "--since", "neither a duration")
    only_line(dedup("verdicts", "--verdict", "maybe"), 2, "--verdict")


@pytest.mark.integration  # starts processes of its own
def test_reset_without_a_terminal_refuses_unless_yes(tmp_path: Path) -> None:
    data = tmp_path / "w"
    (data / "v1").mkdir(parents=True)
    refused = dedup_process("reset", "--data-dir", str(data))
    only_line(refused, 2, "no terminal", "--yes")
    assert (data / "v1").exists()
    done = dedup("reset", "--data-dir", str(data), "--yes")
    assert done.returncode == 0 and not (data / "v1").exists(), done.stderr


def test_the_local_broker_s_port_and_registry_are_documented_and_not_kafka_s() -> None:
    from stream.service.commands.broker import DEFAULT_PORT

    assert DEFAULT_PORT != 9092
    text = dedup("broker", "--help").stdout
    assert f"default: {DEFAULT_PORT}" in text and "broker.json" in text and "DEDUP_BROKER_REGISTRY" in text


@pytest.mark.integration  # starts processes of its own
def test_the_broker_registry_is_per_user_and_can_be_moved(tmp_path: Path) -> None:
    from stream.service.runtime.embedded import registry_path

    env = {k: v for k, v in os.environ.items() if k != "DEDUP_BROKER_REGISTRY"}
    code = "from stream.service.runtime.embedded import registry_path; print(registry_path())"
    default = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                             env={**env, "XDG_RUNTIME_DIR": str(tmp_path)}).stdout.strip()
    assert default == str(tmp_path / f"dedup-{os.getuid()}" / "broker.json")
    moved = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                           env={**env, "DEDUP_BROKER_REGISTRY": str(tmp_path / "mine.json")}).stdout.strip()
    assert moved == str(tmp_path / "mine.json")
    assert registry_path().name.endswith(".json")


def test_bad_security_settings_exit_3_naming_the_setting(docs: Path) -> None:
    for args in (("worker",), ("publish", str(docs))):
        one_line_error(dedup(*args, env={"DEDUP_SECURITY_PROTOCOL": "SASL_SSSL"}), 3,
                       "DEDUP_SECURITY_PROTOCOL", "SASL_SSSL")
    one_line_error(dedup("worker", env={"DEDUP_SECURITY_PROTOCOL": "sasl_plaintext"}), 3, "DEDUP_SASL_USERNAME")
