"""The time and host kbgen stamps on records; both can be pinned for reproducible output.

``KBGEN_NOW`` (ISO 8601, e.g. ``2025-11-09T23:04:00+09:00``) fixes the clock and
``KBGEN_HOSTNAME`` the host name, so tests and golden files do not depend on when they run.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import socket

from kbgen.errors import KbgenError


def now() -> dt.datetime:
    """The current time, timezone-aware, to the second (or ``$KBGEN_NOW``)."""
    pinned = os.environ.get("KBGEN_NOW")
    if pinned:
        try:
            value = dt.datetime.fromisoformat(pinned)
        except ValueError:
            raise KbgenError(f"KBGEN_NOW={pinned!r} is not an ISO 8601 time") from None
        return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    return dt.datetime.now(dt.timezone.utc).astimezone().replace(microsecond=0)


def hostname() -> str:
    return os.environ.get("KBGEN_HOSTNAME") or socket.gethostname()


def user() -> str | None:
    """Who is acting, for history events: ``$KBGEN_USER``, else ``git config user.name``, else ``$USER``."""
    return os.environ.get("KBGEN_USER") or _git_user() or os.environ.get("USER") or None


@functools.lru_cache(maxsize=1)
def _git_user() -> str | None:
    import subprocess

    try:
        done = subprocess.run(
            ["git", "config", "user.name"],
            capture_output=True,
            text=True,
            timeout=5,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None
