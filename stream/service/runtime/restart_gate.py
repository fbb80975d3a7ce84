"""``python -m stream.service.runtime.restart_gate CMD...``: run a worker under a container restart policy
that can only say "on failure" (Docker's ``restart: on-failure`` cannot filter exit codes).

The command's exit code passes through when a restart can help: 75 (a fault that is not the input's)
and 4 (broker unreachable). Any other failure (2 usage, 3 settings or state such as lost broker data,
70 a bug) would fail the same way again, so the gate reports it in one line and exits 0: the container
stays stopped instead of restarting in a loop. SIGTERM and SIGINT are passed to the command, so a
``docker stop`` is a clean stop of the worker.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from stream.errors import EXIT_BROKER, EXIT_RESTART

RESTARTABLE = frozenset((EXIT_RESTART, EXIT_BROKER))


def run(command: Sequence[str]) -> int:
    child = subprocess.Popen(list(command))

    def forward(signum: int, _frame: Any) -> None:
        child.send_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, forward)
    code = child.wait()
    if code == 0 or code in RESTARTABLE:
        return code
    print(f"restart_gate: {' '.join(command)} exited {code}: not restarted, a restart would fail the same way "
          "(see the lines above; exit codes: docs/usage.md); fix the cause and start it again", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print("usage: python -m stream.service.runtime.restart_gate COMMAND [ARGS...]", file=sys.stderr)
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
