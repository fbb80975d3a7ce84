"""The ``dedup`` command line: one thin entry point; each subcommand lives beside the layer it drives.

Subcommands are loaded lazily (``module:attribute``) so that ``dedup scan`` never pays for importing
Faust, and so each layer owns its own command. ``run`` turns every error into one line on standard
error and an exit code (``stream.errors``); ``--debug`` or ``DEDUP_DEBUG=1`` adds the traceback.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from typing import Any, NoReturn

import click

from stream.errors import EXIT_BROKER, EXIT_INTERNAL, EXIT_USAGE, DedupError
from stream.startup import skip_numba_scipy

# name -> "module:attribute" of a click.Command
COMMANDS: dict[str, str] = {
    "scan": "stream.batch.scan:command",
    "worker": "stream.service.commands.worker:worker",
    "publish": "stream.service.commands.publish:publish",
    "verdicts": "stream.service.commands.verdicts:verdicts",
    "demo": "stream.service.commands.demo:demo",
    "topology": "stream.service.commands.topology:topology",
    "broker": "stream.service.commands.broker:broker",
    "reset": "stream.service.commands.worker:reset",
    "repartition": "stream.service.commands.repartition:repartition",
    "dlq": "stream.service.commands.dlq:command",
    "console": "stream.console.command:console",
    "show": "stream.console.command:show",
    "diff": "stream.console.command:diff",
}


def _load(spec: str) -> click.Command:
    module, attr = spec.split(":")
    cmd = getattr(importlib.import_module(module), attr)
    assert isinstance(cmd, click.Command)
    return cmd


class LazyGroup(click.Group):
    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._lazy:
            return _load(self._lazy[cmd_name])
        return super().get_command(ctx, cmd_name)


_debug = {"on": os.environ.get("DEDUP_DEBUG", "") not in ("", "0")}


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="Exit codes: 0 done; 1 done, some input rejected (each reported); 2 usage error; "
                    "3 settings, state or an unsupported faust-streaming version; 4 broker unreachable or records "
                    "not delivered; 70 internal error; "
                    "75 worker stopped on a fault, restart it.")
@click.version_option(package_name="stream-dedup")
@click.option("--debug", is_flag=True, help="Print the traceback of an error (also DEDUP_DEBUG=1).")
def main(debug: bool) -> None:
    """Near-duplicate detection for document streams (SimHash + MinHash LSH, Kafka)."""
    if debug:
        _debug["on"] = True


def describe_error(exc: BaseException) -> tuple[int, str]:
    """The exit code and one-line message for an error that reached the command line."""
    if isinstance(exc, DedupError):
        return exc.exit_code, str(exc)
    if isinstance(exc, OSError) and exc.filename is not None:
        return EXIT_USAGE, f"{exc.filename}: {exc.strerror or exc}"
    kafka_error = type(exc).__name__ == "KafkaException"
    if kafka_error:
        return EXIT_BROKER, f"Kafka: {exc}"
    return EXIT_INTERNAL, (f"internal error: {type(exc).__name__}: {exc} (a bug: please report it with the "
                           "output of --debug)")


def run(argv: list[str] | None = None, group: click.Group | None = None, prog_name: str = "dedup") -> NoReturn:
    """The ``dedup`` console script (or another command ``group``): every error as one line on standard
    error and its exit code."""
    from stream.service.runtime.logs import quiet_librdkafka

    skip_numba_scipy()  # ~0.3 s of every start (stream.startup)
    args = sys.argv[1:] if argv is None else argv
    quiet_librdkafka(_debug["on"] or "--debug" in args[:1])
    try:
        code = (group or main).main(args=argv, prog_name=prog_name, standalone_mode=False)
    except click.UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # a group alone (`dedup dlq`): its help, as click shows it
            exc.show()
        else:  # one line, like every other error: click's own form takes three
            where = exc.ctx.command_path if exc.ctx is not None else prog_name
            click.echo(f"{where}: error: {exc.format_message()} (see {where} --help)", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"dedup: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as exc:
        if _debug["on"]:
            traceback.print_exc()
        code, message = describe_error(exc)
        click.echo(f"dedup: error: {message}", err=True)
        sys.exit(code)
    sys.exit(code if isinstance(code, int) else 0)
