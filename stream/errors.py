"""Errors the package raises on purpose, and the exit codes of the ``dedup`` command.

Every error here carries a message fit for an operator: the command line prints it as one line and
exits with the error's ``exit_code`` (docs/usage.md, "Exit codes"); a traceback only with ``--debug``.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_REJECTED = 1  # the run finished, but some input records were rejected (each one reported)
EXIT_USAGE = 2  # a bad option, argument or file (click's own code for usage errors)
EXIT_CONFIG = 3  # settings, a config file, a data or state directory
EXIT_BROKER = 4  # Kafka unreachable, or records not delivered
EXIT_INTERNAL = 70  # a bug: an error the code did not expect (EX_SOFTWARE)
EXIT_RESTART = 75  # the worker stopped on a fault that is not the input's; restart it (EX_TEMPFAIL)


class DedupError(Exception):
    """Base class for errors this package raises on purpose."""

    exit_code = EXIT_INTERNAL


class DocumentError(DedupError, ValueError):
    """A document is malformed: the message names the field and the problem; ``code`` is a stable
    name for the kind of problem (dead letters carry it: docs/usage.md, "Dead letters")."""

    exit_code = EXIT_REJECTED

    def __init__(self, message: str, code: str = "invalid_document") -> None:
        super().__init__(message)
        self.code = code


class ConfigError(DedupError, ValueError):
    """A setting is invalid or inconsistent with stored state (e.g. a schema mismatch)."""

    exit_code = EXIT_CONFIG


class UsageError(DedupError):
    """A command was given something it cannot use: a missing file, an unwritable output path."""

    exit_code = EXIT_USAGE


class BrokerUnavailable(DedupError):
    """No Kafka broker answered, or records could not be delivered to it."""

    exit_code = EXIT_BROKER


class StorageError(DedupError):
    """The local store failed (disk full, I/O error): not the input's fault. The worker stops without
    acknowledging its batch and a restart re-reads it."""

    exit_code = EXIT_RESTART


class UnsupportedVersion(DedupError):
    """An installed library the worker patches (faust-streaming, aiokafka, mode-streaming) is outside
    the versions the patches were checked against (``stream.service.runtime.patches.versions``)."""

    exit_code = EXIT_CONFIG
