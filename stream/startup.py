"""Process start-up: what the command line sets before anything imports numba.

numba imports SciPy when it is installed, only to check its version (``numba._ensure_critical_deps``)
and to probe for BLAS (``numba.np.linalg.ensure_blas``, when its registries load at the first
compiled call). No kernel of this package uses BLAS, and the two imports cost ~0.3 s of CPU at every
start where SciPy is installed (the bench extra brings it, through datasketch). ``skip_numba_scipy``
makes those two imports, and only those, fail as if SciPy were absent: numba then compiles no
``np.dot``/``np.linalg`` for this process, which nothing here needs; SciPy itself stays importable.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any


def _imported_by_numba() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not name.startswith("importlib") and frame.f_code.co_filename[:8] != "<frozen ":
            return bool(name == "numba" or name.startswith("numba."))
        frame = frame.f_back  # type: ignore[assignment]
    return False


class _NoScipyForNumba:
    """A meta path finder that refuses ``scipy`` to numba's own imports and defers every other import."""

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if name == "scipy" and _imported_by_numba():
            raise ModuleNotFoundError("scipy is not used by numba in this process", name=name)
        return None


def skip_numba_scipy() -> None:
    """Install the finder (once), unless numba or SciPy is loaded already."""
    if "numba" in sys.modules or "scipy" in sys.modules:
        return
    if not any(isinstance(finder, _NoScipyForNumba) for finder in sys.meta_path):
        sys.meta_path.insert(0, _NoScipyForNumba())


# numba versions whose Cache.load_overload and _load_overload lean_cache_loads was read and tested against
LEAN_LOADS_CHECKED = ("0.68.",)


def lean_cache_loads() -> None:
    """Load kernels from numba's on-disk cache without first loading numba's compiler registries.

    ``numba.core.caching.Cache.load_overload`` calls ``target_context.refresh()`` before it reads a
    cached kernel: that imports and installs every typing and lowering registry (~0.15 s of CPU at
    the first load), which only compiling uses; compiling calls it itself. A cached kernel is machine
    code that needs numba's runtime (NRT), which is initialized here. When a load does not give a
    kernel (no cache entry, or any error), numba's own ``load_overload`` runs as before.
    """
    import numba
    from numba.core import caching
    from numba.core.runtime import rtsys

    full = caching.Cache.load_overload
    if getattr(full, "lean", False) or not numba.__version__.startswith(LEAN_LOADS_CHECKED):
        return  # a numba this was not read against loads as numba does

    def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
        try:
            rtsys.initialize(target_context)
            with self._guard_against_spurious_io_errors():
                data = self._load_overload(sig, target_context)
        except Exception:
            data = None
        return data if data is not None else full(self, sig, target_context)

    load_overload.lean = True  # type: ignore[attr-defined]
    caching.Cache.load_overload = load_overload  # type: ignore[method-assign]
