"""``dedup`` as a user's shell runs it: through the console script's own entry (``stream.cli.run``) in this
process (the same parsing, messages and exit codes, without ~1 s of imports per call), or in a process of
its own where the process is the point (no terminal, the entry point itself, librdkafka's own output)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys

from stream import cli


def dedup(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``dedup ARGS`` with ``env`` added to the environment, run in this process."""
    out, err, saved, debug = io.StringIO(), io.StringIO(), dict(os.environ), dict(cli._debug)
    os.environ.update(env or {})
    code: int | str | None = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            cli.run(list(args))
    except SystemExit as exc:
        code = exc.code
    finally:
        os.environ.clear()
        os.environ.update(saved)
        cli._debug.update(debug)
    status = 0 if code is None else code if isinstance(code, int) else 1  # as the interpreter exits
    return subprocess.CompletedProcess(["dedup", *args], status, out.getvalue(), err.getvalue())


def dedup_process(*args: str, env: dict[str, str] | None = None, timeout: float = 60,
                  ) -> subprocess.CompletedProcess[str]:
    """``dedup ARGS`` in a process of its own, as a user's shell starts it."""
    return subprocess.run([sys.executable, "-m", "stream", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


def one_line_error(result: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    """``result`` failed with ``code``, naming each of ``words``, without a traceback."""
    assert result.returncode == code, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr
