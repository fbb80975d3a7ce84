"""Errors the core raises for bad input. Every one carries a message fit for an operator."""


class DedupError(Exception):
    """Base class for errors this package raises on purpose."""


class DocumentError(DedupError, ValueError):
    """A document is malformed: the message names the field and the problem."""


class ConfigError(DedupError, ValueError):
    """A setting is invalid or inconsistent with stored state (e.g. a schema mismatch)."""
