"""Helpers shared by the benchmarks: locating the shared corpora, CPU time of processes, saving JSON and charts."""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import time
from pathlib import Path
from typing import Any

DEFAULT_OUT = "bench-results"


def shared_dir() -> Path | None:
    """../shared next to the checkout (or $DEDUP_SHARED); None when absent (a user's clone)."""
    env = os.environ.get("DEDUP_SHARED")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve()
    candidates += [p / "shared" for p in (Path.cwd().parent, here.parents[1].parent)]
    return next((c for c in candidates if (c / "corpora").is_dir()), None)


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    """User and system CPU seconds of this process's children that have been waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def machine() -> dict[str, Any]:
    return {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "commit": commit(), "load": os.getloadavg()[0]}


def versions(*packages: str) -> dict[str, str]:
    """Installed versions of the peers and libraries a benchmark compares ("-" when absent)."""
    from importlib import metadata

    found = {}
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "-"
    return found


def save_json(out_dir: str, name: str, payload: dict[str, Any]) -> Path:
    path = Path(out_dir)
    path.mkdir(parents=True, exist_ok=True)
    target = path / f"{name}.json"
    target.write_text(json.dumps({"machine": machine(), **payload}, indent=1, ensure_ascii=False))
    return target


def stamp(fig: Any, peers: dict[str, str] | None = None) -> None:
    """A footer on a chart: the commit and machine it was made on, and the peers' versions."""
    m = machine()
    text = (f"commit {m['commit']} · {m['machine']}, {m['cpus']} CPUs, Python {m['python']}, load {m['load']:.1f} · "
            f"{m['time']}")
    if peers:
        text += " · " + ", ".join(f"{name} {version}" for name, version in peers.items())
    fig.text(0.01, 0.005, text, fontsize=7, color="dimgray", ha="left", va="bottom")


def save_figure(fig: Any, path: Any, dpi: int = 110) -> None:
    """Stamp ``fig`` (``stamp``), leave room for the footer and write it to ``path``."""
    stamp(fig)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=dpi)


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def commit() -> str:
    """The checkout's short commit, with "+dirty" when tracked files differ from it: the package's own
    checkout (an editable install), else the one the benchmark runs in (an installed package)."""
    for root in (Path(__file__).resolve().parents[1], Path.cwd()):
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=root)
        if head.returncode == 0 and head.stdout.strip():
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                                   text=True, cwd=root).stdout.strip()
            return head.stdout.strip() + ("+dirty" if dirty else "")
    return "unknown"
