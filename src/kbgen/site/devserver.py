"""What the live preview server (``kbgen serve``, or ``mkdocs serve`` with the kbgen plugin) answers.

mkdocs' development server answers every request that reaches its port. A page on another site,
open in the browser of someone running it, can look its own host name up to 127.0.0.1 (DNS
rebinding) and read the preview through it, drafts of bug reports and all. Such requests name
the attacker's host in their ``Host:`` header: the server answers only requests that name it
by a loopback name, by the host of ``--dev-addr``, or by a name ``kbgen serve --allow-host``
adds. A path holding a NUL (``%00``) is a bad request; the server's own file lookup fails on it
with a 500.

mkdocs finds changes by polling: every half second it lists and stats every watched file, so a
saved bug waits a quarter of a second on average before the rebuild starts, and more on a large
KB. :func:`notify_changes` lets the operating system report changes instead (inotify, FSEvents,
ReadDirectoryChangesW); ``KBGEN_SERVE_POLL=1`` keeps mkdocs' polling, for folders whose changes
the system does not report (network mounts, WSL's /mnt/c).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

#: the names of this machine's loopback interface, as a browser writes them in ``Host:``
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
#: set to 1 to keep mkdocs' polling watcher (see the module's text)
POLL_ENV = "KBGEN_SERVE_POLL"

_allowed: frozenset[str] = frozenset()  # the names `kbgen serve --allow-host` adds for this run

Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def allow_hosts(names: Iterable[str]) -> None:
    """Also answer requests that name the server by one of ``names`` (this process's servers)."""
    global _allowed
    _allowed = frozenset(host_name(name) for name in names)


def host_name(header: str) -> str:
    """The host of a ``Host:`` header (or an address), without its port and brackets, lower case."""
    value = header.strip().lower()
    if value.startswith("["):  # an IPv6 address: [::1]:8000
        return value[1 : value.find("]")] if "]" in value else value
    name, colon, port = value.rpartition(":")
    if colon and ":" not in name and (port.isdigit() or not port):
        value = name
    return value.rstrip(".")


def guard(app: Wsgi, names: frozenset[str]) -> Wsgi:
    """``app`` answering only requests whose ``Host:`` is one of ``names`` and whose path has no NUL."""

    def checked(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if "\0" in str(environ.get("PATH_INFO", "")):
            return _refuse(start_response, "400 Bad Request", "A path holds a NUL character.")
        host = environ.get("HTTP_HOST")
        if host is not None and host_name(str(host)) not in names:
            shown = ", ".join(f"[{n}]" if ":" in n else n for n in sorted(names))
            return _refuse(
                start_response,
                "403 Forbidden",
                f"This preview answers only requests for {shown}. To reach it by another name, "
                "start it with `kbgen serve --allow-host NAME`.",
            )
        return app(environ, start_response)

    return checked


def _refuse(start_response: Callable[..., Any], status: str, why: str) -> list[bytes]:
    body = (why + "\n").encode("utf-8")
    headers = [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))]
    start_response(status, headers)
    return [body]


def install(server: Any, dev_host: str) -> None:
    """Put the guard in front of mkdocs' live-reload ``server`` (a wsgiref server) that listens on
    ``dev_host``."""
    server.set_app(guard(server.get_app(), LOOPBACK | {host_name(dev_host)} | _allowed))


def address_taken(dev_addr: str) -> str | None:
    """Why ``--dev-addr`` cannot be listened on (another server has the port), found before the
    first build (seconds on a large KB) rather than after it; None when it is free or when the
    address does not resolve (mkdocs says so itself)."""
    import errno
    import socket

    host, _, port = dev_addr.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        family, kind, proto, _name, address = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)[0]
    except (OSError, ValueError, UnicodeError):
        return None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as mkdocs' server does
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"{dev_addr} is taken: another program already listens on port {port}"
            return None
    return None


def notify_changes(server: Any) -> bool:
    """Have mkdocs' live-reload ``server`` learn of changes from the operating system rather than
    by polling; the paths it watches so far are watched again through the new observer. False
    (and the server left as it was) under ``$KBGEN_SERVE_POLL``, or where the system offers only
    polling, or where this mkdocs keeps its watcher differently."""
    if os.environ.get(POLL_ENV, "").strip().lower() not in ("", "0", "no", "false", "off"):
        return False
    from watchdog import events
    from watchdog.observers import Observer
    from watchdog.observers.polling import PollingObserver

    watched = getattr(server, "_watched_paths", None)
    refs = getattr(server, "_watch_refs", None)
    old = getattr(server, "observer", None)
    if not isinstance(watched, dict) or not isinstance(refs, dict) or old is None or old.is_alive():
        return False
    observer = Observer()
    if isinstance(observer, PollingObserver):
        return False
    # Changes only: the build itself opens and reads every watched file, and a rebuild for each
    # "opened" or "closed without writing" event would never end.
    changes: list[type[events.FileSystemEvent]] = [
        events.FileCreatedEvent,
        events.FileDeletedEvent,
        events.FileModifiedEvent,
        events.FileMovedEvent,
    ]
    schedule = observer.schedule

    def changes_only(handler: Any, path: str, *, recursive: bool = False) -> Any:
        return schedule(handler, path, recursive=recursive, event_filter=changes)

    observer.schedule = changes_only  # type: ignore[method-assign,assignment]
    old.unschedule_all()
    server.observer = observer
    counts = dict(watched)
    watched.clear()
    refs.clear()
    for path, count in counts.items():
        for _ in range(count):
            server.watch(path)
    return True
