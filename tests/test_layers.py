"""Each folder of ``stream/`` is one layer, and a layer uses another only through the names that
layer exports: every name imported from another layer is in that layer's ``__all__`` and is not
private (``_name``)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

STREAM = Path(__file__).resolve().parents[1] / "stream"
LAYERS = sorted(p.name for p in STREAM.iterdir() if (p / "__init__.py").exists())


def cross_layer_imports() -> list[tuple[str, str, str]]:
    """(file, layer imported from, name) for every ``from stream.<layer>... import name`` outside it."""
    found = []
    for path in sorted(STREAM.rglob("*.py")):
        relative = path.relative_to(STREAM).parts
        own = relative[0] if len(relative) > 1 else None
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("stream."):
                layer = node.module.split(".")[1]
                if layer in LAYERS and layer != own:
                    found += [(str(path.relative_to(STREAM.parent)), layer, alias.name) for alias in node.names]
    return found


def test_layers_import_each_other_only_through_their_exports() -> None:
    imports = cross_layer_imports()
    assert len(imports) > 50  # the walk found the imports
    wrong = [f"{file}: {name} (stream.{layer})" for file, layer, name in imports
             if name.startswith("_") or name not in importlib.import_module(f"stream.{layer}").__all__]
    assert wrong == []


def test_every_exported_name_resolves() -> None:
    for layer in LAYERS:
        package = importlib.import_module(f"stream.{layer}")
        for name in getattr(package, "__all__", ()):
            assert getattr(package, name) is not None, f"stream.{layer}.{name}"


def test_no_exported_name_is_also_a_module_of_its_package() -> None:
    """A package whose names load on first use (stream.exports) must not export a name that is also one
    of its modules: importing that module would set the package's attribute to the module, and
    ``from package import name`` would then give the module instead of the function."""
    import importlib
    import pkgutil

    for package in ("stream.text", "stream.fingerprint", "stream.detect", "stream.service"):
        module = importlib.import_module(package)
        submodules = {info.name for info in pkgutil.iter_modules(module.__path__)}
        assert set(module.__all__) & submodules == set(), package
