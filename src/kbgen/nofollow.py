"""Files below a folder, read and written through open folder descriptors, never through a link.

``kbgen init`` writes into a project someone else laid out: any name on the way (``kb``,
``.github``, ``docs``) or at the end (``mkdocs.yml``) may be a symbolic link to somewhere else, a
FIFO or a device. Every step below the root is opened relative to the folder above it with
``O_NOFOLLOW``, so a link is refused where it stands, even one put in place after a first look;
an existing file is read only when it is a regular file, and never past a limit; a new version
is written to a temporary file in the same open folder and hard-linked (a new file) or renamed
(a replacement) into place, which puts a file where a link was at most, never writes through it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from kbgen.errors import KbgenError
from kbgen.fileio import Unreadable, file_kind, read_fd

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
#: what a link is called in every message
LINK = "a symbolic link, which kbgen never writes through"


class Blocked(Exception):
    """A name on the way that is not a folder kbgen may enter: ``where`` is its path below the
    root, ``message`` says what is there instead."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


class Changed(Exception):
    """The file to be replaced is no longer the one that was read."""


def _what_is(dir_fd: int, name: str) -> str:
    """What stands at ``name`` (for a message only: the decision was made by ``open``)."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError as exc:
        return f"cannot open: {exc.strerror}"
    if stat.S_ISLNK(info.st_mode):
        return LINK
    if stat.S_ISREG(info.st_mode):
        return "a file, not a folder"
    return f"{file_kind(info.st_mode)}, not a folder"


def _open_dir(dir_fd: int, name: str) -> int:
    flags = os.O_RDONLY | os.O_NONBLOCK | _DIRECTORY | _NOFOLLOW | _CLOEXEC
    return os.open(name, flags, dir_fd=dir_fd)


def _open_root(root: Path, *, create: bool) -> int | None:
    """The folder the user named; links in its own path are the user's choice and are followed."""
    flags = os.O_RDONLY | os.O_NONBLOCK | _DIRECTORY | _CLOEXEC
    try:
        return os.open(root, flags)
    except FileNotFoundError:
        if not create:
            return None
    except OSError as exc:
        raise KbgenError(f"{root}: cannot open the folder: {exc.strerror}") from None
    try:
        root.mkdir(parents=True, exist_ok=True)
        return os.open(root, flags)
    except OSError as exc:
        raise KbgenError(f"{root}: cannot make the folder: {exc.strerror}") from None


@contextlib.contextmanager
def folder(root: Path, parts: Sequence[str], *, create: bool) -> Iterator[int | None]:
    """An open descriptor of ``root/parts...`` (None where a step is missing and ``create`` is
    false; made where it is true). Raises :class:`Blocked` at a step that is a link, a file or
    anything else but a folder."""
    fd = _open_root(root, create=create)
    try:
        for depth, part in enumerate(parts):
            if fd is None:
                break
            where = "/".join(parts[: depth + 1])
            try:
                child = _open_dir(fd, part)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    fd = None
                    break
                child = _make_dir(fd, part, where)
            except OSError as exc:
                if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                    raise Blocked(where, _what_is(fd, part)) from None
                raise Blocked(where, f"cannot open: {exc.strerror}") from None
            os.close(fd)
            fd = child
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def _make_dir(dir_fd: int, name: str, where: str) -> int:
    try:
        with contextlib.suppress(FileExistsError):  # made meanwhile: opened as any other
            os.mkdir(name, 0o777, dir_fd=dir_fd)
        return _open_dir(dir_fd, name)
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):
            raise Blocked(where, _what_is(dir_fd, name)) from None
        raise Blocked(where, f"cannot make the folder: {exc.strerror}") from None


def read_file(dir_fd: int, name: str, limit: int) -> tuple[bytes, os.stat_result] | None:
    """The bytes of the regular file ``name`` in the open folder and its ``fstat`` (None when
    there is none). Raises :class:`~kbgen.fileio.Unreadable` for a link (dangling or not), a FIFO,
    a device, a folder, a file larger than ``limit`` or one that cannot be opened."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Unreadable(LINK) from None
        raise Unreadable(f"cannot open: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"{file_kind(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise Unreadable(f"{info.st_size:,} bytes; kbgen reads at most {limit:,} here")
        return read_fd(fd, limit, "the file"), info
    except OSError as exc:
        raise Unreadable(f"cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)


def write_file(dir_fd: int, name: str, data: bytes, mode: int, *, over: os.stat_result | None) -> None:
    """Put ``data`` at ``name`` in the open folder with permission bits ``mode``, through a
    temporary file beside it: a new file (``over`` None; FileExistsError when the name is taken,
    by a link too), or a replacement of the very file :func:`read_file` returned ``over`` for
    (:class:`Changed` when something else stands there now). Raises OSError when the system
    refuses."""
    tmp = f".{name}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        if over is None:
            os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        else:
            now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if _identity(now) != _identity(over):
                raise Changed(name)
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
    with contextlib.suppress(OSError):
        os.fsync(dir_fd)


def _identity(info: os.stat_result) -> tuple[int, int, int, int, int]:
    return (info.st_mode, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
