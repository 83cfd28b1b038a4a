"""Bounded reads and locked, atomic writes of KB records.

Only regular files are records: a FIFO or a link to a device is refused without blocking, and no
read goes past a limit whatever ``fstat`` says. Every write kbgen makes to a record holds an
exclusive lock on that file (``flock`` on the file itself, so nothing is left beside it) from the
moment it reads the version it changes until the new one is renamed into place; the content
digest check stays, for an editor that saves in between without taking any lock.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from kbgen.errors import ConflictError, KbgenError, relpath

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the exclusive link and the digest check remain
    fcntl = None  # type: ignore[assignment]

#: Records larger than this are refused unread, and no write may make one larger.
MAX_ENTRY_BYTES = 2 * 1024 * 1024
#: How long a writer waits for another kbgen process to finish with the same file.
LOCK_WAIT_S = 60.0
_HELD = threading.local()  # .paths: the locks this thread holds (flock does not nest per file)


class Unreadable(Exception):
    """A file kbgen will not read as a record; ``message`` says why, without the file name."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _open_regular(path: str | os.PathLike[str], flags: int = 0) -> tuple[int, os.stat_result]:
    """Open without blocking (a FIFO would wait for a writer) and insist on a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | flags)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise Unreadable(f"{file_kind(info.st_mode)}, not a regular file")
    return fd, info


def read_fd(fd: int, limit: int, what: str) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, min(1 << 20, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise Unreadable(f"{what} is larger than {limit:,} bytes; entries are limited to {limit:,}")


def read_limited(path: str | os.PathLike[str], limit: int = MAX_ENTRY_BYTES, what: str = "file") -> bytes:
    """A regular file's bytes, never more than ``limit``; raises Unreadable or OSError."""
    fd, info = _open_regular(path)
    try:
        if info.st_size > limit:
            if limit == MAX_ENTRY_BYTES:  # a record: say what to do with the bulk of it
                why = f"entries are limited to {limit:,} (move long logs into an attachment)"
            else:
                why = f"kbgen reads at most {limit:,} here"
            raise Unreadable(f"{what} is {info.st_size:,} bytes; {why}")
        return read_fd(fd, limit, what)
    finally:
        os.close(fd)


def read_limited_nofollow(path: str | os.PathLike[str], limit: int, what: str = "file") -> bytes:
    """:func:`read_limited` for a file another program was told to write: a symbolic link in its
    place is refused too (``O_NOFOLLOW``), not followed to wherever it points."""
    try:
        fd, info = _open_regular(path, getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Unreadable("a symbolic link, which kbgen does not follow") from None
        raise
    try:
        if info.st_size > limit:
            raise Unreadable(f"{what} is {info.st_size:,} bytes; kbgen reads at most {limit:,} here")
        return read_fd(fd, limit, what)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- locking


def _acquire(fd: int, path: Path) -> None:
    deadline = time.monotonic() + LOCK_WAIT_S
    pause = 0.002
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return  # a file system without flock: the digest check still guards the write
        if time.monotonic() > deadline:
            raise KbgenError(
                f"{relpath(path)}: another kbgen process has been writing it for {LOCK_WAIT_S:.0f} s",
                hint="wait for it to finish, then run the command again",
            )
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the lock of ``path`` (of its folder when it does not exist yet) against other kbgen writers.

    The lock is taken on the file itself; a writer that finds the name pointing at another file
    once it holds the lock (the previous holder renamed a new version in) takes that one instead.
    """
    key = os.path.abspath(path)  # noqa: PTH100
    held: set[str] = _HELD.__dict__.setdefault("paths", set())
    if fcntl is None or key in held:
        yield
        return
    while True:
        try:
            fd, info = _open_lockable(path)
        except Unreadable as exc:
            raise KbgenError(f"{relpath(path)}: {exc.message}") from None
        except OSError as exc:
            raise KbgenError(f"{relpath(path)}: cannot open: {exc.strerror or exc}") from None
        try:
            _acquire(fd, path)
            if info is None or _same_file(path, info):
                held.add(key)
                try:
                    yield
                finally:
                    held.discard(key)
                return
        finally:
            os.close(fd)


def _open_lockable(path: Path) -> tuple[int, os.stat_result | None]:
    try:
        return _open_regular(path)
    except FileNotFoundError:
        return os.open(path.parent, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)), None


def _same_file(path: Path, info: os.stat_result) -> bool:
    try:
        now = path.stat()
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino)


@contextlib.contextmanager
def locked_folder(folder: Path) -> Iterator[None]:
    """Hold the lock of a folder (``flock`` on the folder itself: no lock file is created)."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise KbgenError(f"{relpath(folder)}: cannot open: {exc.strerror}") from None
    try:
        _acquire(fd, folder)
        yield
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- writing


def new_file_mode() -> int:
    """The mode a plain ``open(path, 'w')`` would give a new file under the current umask."""
    try:  # Linux says it without changing it (setting it, even briefly, affects every thread)
        with open("/proc/self/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def current_digest_and_mode(path: Path) -> tuple[str | None, int]:
    """sha256 and permission bits of the record at ``path`` (None and the umask mode if missing)."""
    try:
        fd, info = _open_regular(path)
    except FileNotFoundError:
        return None, new_file_mode()
    except Unreadable as exc:
        raise KbgenError(f"{relpath(path)}: {exc.message}") from None
    try:
        digest = hashlib.sha256(read_fd(fd, MAX_ENTRY_BYTES, "the file")).hexdigest()
    except Unreadable:
        digest = ""
    finally:
        os.close(fd)
    return digest, stat.S_IMODE(info.st_mode)


def check_size(path: Path, data: bytes) -> None:
    """Refuse a write that would make a record too large for kbgen to read back."""
    if len(data) > MAX_ENTRY_BYTES:
        raise KbgenError(
            f"{relpath(path)}: the record would grow to {len(data):,} bytes, past the "
            f"{MAX_ENTRY_BYTES:,} kbgen reads; nothing was written",
            hint="keep long logs and notes in a file of their own and link to it",
        )


def atomic_write(
    path: Path, data: bytes, *, expect_digest: str | None = None, exclusive: bool = False
) -> None:
    """Write ``data`` to ``path`` through a temporary file, fsync and rename, under the file's lock.

    ``expect_digest``: refuse (ConflictError) when the file on disk no longer has this sha256.
    ``exclusive``: create only; fail with FileExistsError when ``path`` exists (hard link).
    The file keeps its permission bits; a new one gets those of the umask.
    """
    check_size(path, data)
    if exclusive:
        _write_new(path, data, new_file_mode())
        return
    with locked(path):
        current, mode = current_digest_and_mode(path)
        if expect_digest is not None and current != expect_digest:
            raise ConflictError(
                f"{relpath(path)}: changed on disk since kbgen read it; nothing was written",
                hint="run the command again to work from the new version",
            )
        _write_new(path, data, mode, replace=True)


def replace_file(path: Path, data: bytes, mode: int, *, durable: bool = True) -> None:
    """Put ``data`` at ``path`` through a temporary file beside it and a rename, with permission
    bits ``mode``: a reader sees the old file or the new one, never half of one.

    The one writer of kbgen's files: records go through :func:`atomic_write` (lock, conflict
    check, then this); generated pages come here directly with ``durable=False``, which skips
    the fsync of the file and its folder (the next build makes a lost page again).
    """
    _write_new(path, data, mode, replace=True, durable=durable)


def _write_new(path: Path, data: bytes, mode: int, *, replace: bool = False, durable: bool = True) -> None:
    folder = path.parent
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise KbgenError(
            f"{relpath(folder)}: cannot write here: {exc.strerror}", hint="check the folder's permissions"
        ) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        Path(tmp).chmod(mode)  # mkstemp makes it 0600
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # atomic and exclusive: fails if the name was taken meanwhile
    except OSError as exc:
        if isinstance(exc, FileExistsError):
            raise
        raise KbgenError(f"{relpath(path)}: cannot write: {exc.strerror}") from None
    finally:
        with contextlib.suppress(OSError):
            if not replace or os.path.lexists(tmp):
                os.unlink(tmp)
    if durable:
        _sync_folder(folder)


def create_files(files: list[tuple[Path, bytes]]) -> list[Path]:
    """Create many new files as ``atomic_write(path, data, exclusive=True)`` creates one, with one
    flush to disk for all of them; returns the paths whose name was already taken (not written).

    Each file is written under a temporary name beside its own, the disk is flushed once
    (``os.sync``: an fsync per file costs milliseconds each), and only then is each linked to its
    name, so no name ever points at data a power cut could still lose.
    """
    mode = new_file_mode()
    staged: list[tuple[Path, str]] = []
    taken: list[Path] = []
    try:
        for path, data in files:
            check_size(path, data)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            staged.append((path, tmp))
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            Path(tmp).chmod(mode)
        _flush_all([tmp for _, tmp in staged], [])  # the data
        for path, tmp in staged:
            try:
                os.link(tmp, path)
            except FileExistsError:
                taken.append(path)
    except OSError as exc:
        where = relpath(Path(exc.filename)) if exc.filename else "kb"
        raise KbgenError(f"{where}: cannot write: {exc.strerror}") from None
    finally:
        for _, tmp in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    _flush_all([], sorted({path.parent for path, _ in staged}))  # the new names
    return taken


def _flush_all(paths: list[str], folders: list[Path]) -> None:
    """Flush these files' data and these folders' entries: all at once where ``os.sync`` exists."""
    if hasattr(os, "sync"):
        os.sync()
        return
    for folder in folders:  # pragma: no cover - Windows
        _sync_folder(folder)
    for path in paths:  # pragma: no cover
        fd = os.open(path, os.O_RDWR)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _sync_folder(folder: Path) -> None:
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass
