"""What a patch replaces (``Patch``) and what a worker reads without replacing it (``Read``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple


class Patch(NamedTuple):
    """``owner.name`` becomes ``replacement`` for the whole process."""

    owner: type
    name: str
    replacement: Any


class Read(NamedTuple):
    """A private attribute of ``owner`` (or of its instances: a class annotation) that a patch reads."""

    owner: type
    name: str


def apply(patches: Iterable[Patch]) -> None:
    """Install ``patches`` (idempotent: each replacement is a module-level function)."""
    for patch in patches:
        setattr(patch.owner, patch.name, patch.replacement)
