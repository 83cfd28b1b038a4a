"""Write generated pages into a folder, and never touch anything outside it.

``kbgen build-pages OUT`` keeps a folder of pages current: a file is rewritten only when its
bytes differ, and pages an earlier run wrote that are gone are removed (a
manifest in the folder names them). The manifest is not trusted: a name in it is removed only
when it is a plain relative path, every folder on the way is a real folder inside OUT (a symbolic
link is never followed), and the file itself is a regular file. Nothing is written through a
symbolic link either, and OUT may not be, or hold, the KB's own records and templates.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbgen.errors import KbgenError
from kbgen.fileio import Unreadable, new_file_mode, read_limited, replace_file

MANIFEST = ".kbgen-pages.json"
#: a file of docs/ (an image, a PDF) larger than this is refused rather than read into memory
MAX_DOCS_FILE = 64 * 1024 * 1024


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)


def refuse_unsafe_out(out: Path, kb: Path, templates: list[Path], docs: Path) -> None:
    """Refuse an OUT whose pages would overwrite records, templates or hand-written pages."""
    target = out.resolve()
    for label, folder in [("kb/", kb), *[("templates/", t) for t in templates]]:
        folder = folder.resolve()
        if target == folder or folder in target.parents:
            _refuse(out, f"it is inside {label} ({folder}); the pages would overwrite records")
        if target in folder.parents:
            _refuse(out, f"it holds {label} ({folder}); write the pages to a folder of their own")
    docs = docs.resolve()
    if (target == docs or docs in target.parents) and _has_files_outside(docs, target):
        _refuse(out, f"it is inside the site's docs_dir ({docs}), which holds hand-written pages")


def _refuse(out: Path, why: str) -> None:
    raise KbgenError(
        f"{out}: not a safe place for the pages: {why}", hint="e.g. kbgen build-pages build/pages"
    )


def _has_files_outside(docs: Path, target: Path) -> bool:
    for folder, dirs, names in os.walk(docs):
        here = Path(folder)
        if here == target:
            dirs.clear()
            continue
        if any(not n.startswith(".") for n in names):
            return True
    return False


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` by its '/'-separated relative path (hidden ones left out).

    Links to folders are not followed; a FIFO or a device is an error, not a hang.
    """
    found = {}
    for here, dirs, names in os.walk(folder) if folder.is_dir() else []:
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(n for n in names if not n.startswith(".")):
            path = Path(here) / name
            if path.is_dir():
                continue  # a link to a folder
            why = unpublishable(path, folder.resolve()) if path.is_symlink() else None
            if why is not None:
                raise KbgenError(f"{path}: {why}; kbgen does not publish it", hint="remove the link")
            try:
                found[path.relative_to(folder).as_posix()] = read_limited(path, MAX_DOCS_FILE)
            except Unreadable as exc:
                raise KbgenError(f"{path}: {exc.message}") from None
            except OSError as exc:
                raise KbgenError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return found


def unpublishable_files(files: Iterable[Any], docs_dir: str, docs: Path) -> list[tuple[Any, str]]:
    """The files of docs/ (mkdocs Files of the folder ``docs_dir``, resolved ``docs``) that must
    not be published, with why (see :func:`unpublishable`): mkdocs follows links, so a build or
    preview would publish what they point at. The theme's and generated files are not looked at."""
    found = []
    for file in files:
        if file.src_dir == docs_dir:
            why = unpublishable(Path(file.abs_src_path or ""), docs)
            if why is not None:
                found.append((file, why))
    return found


def unpublishable(path: Path, docs: Path) -> str | None:
    """Why the file ``path`` found in the docs folder ``docs`` (resolved) must not be published:
    a symbolic link leading out of it (a preview would serve whatever it points at, a file of
    the user's home included), or not a regular file (a FIFO would hang the build); None if fine."""
    try:
        real = path.resolve(strict=True)
        info = real.stat()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a loop of links
        return f"cannot be read: {getattr(exc, 'strerror', None) or exc}"
    if docs not in real.parents:
        return f"a symbolic link to {real}, outside {docs}"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    return None


# --------------------------------------------------------------------------- writing


def write_pages(files: dict[str, bytes], out: Path) -> WriteReport:
    """Write ``{relative path: content}`` under ``out``, touching only files whose bytes differ.

    Files written by an earlier run and no longer produced are removed; nothing else is touched.
    """
    report = WriteReport()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KbgenError(f"{out}: cannot create: {exc.strerror}") from None
    root = out.resolve()
    for rel, data in sorted(files.items()):
        path = _place(root, rel, create=True)
        assert path is not None
        if _current(path, len(data)) == data:
            report.unchanged += 1
            continue
        _replace(path, data)
        report.written.append(rel)
    manifest = root / MANIFEST
    for rel in sorted(set(_read_manifest(manifest)) - set(files)):
        target = _place(root, rel, create=False)
        if target is not None and _is_regular(target):
            target.unlink()
            report.removed.append(rel)
    if report.written or report.removed or not _is_regular(manifest):
        _replace(manifest, json.dumps(sorted(files), indent=0).encode())
    return report


def _safe_name(name: Any) -> bool:
    """A plain relative '/'-separated path: no absolute path, '..', backslash, NUL or hidden part."""
    if not isinstance(name, str) or not name or len(name) > 1024 or "\\" in name or "\0" in name:
        return False
    return all(part and not part.startswith(".") for part in name.split("/"))


def _place(root: Path, rel: str, *, create: bool) -> Path | None:
    """``root/rel`` when every folder on the way is a real folder (made when ``create``).

    A symbolic link on the way is never followed: writing refuses it, removing skips the name.
    """
    if not _safe_name(rel):
        if create:
            raise KbgenError(f"{rel!r}: not a plain relative page path")
        return None
    parts = rel.split("/")
    current = root
    for part in parts[:-1]:
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            if not create:
                return None
            _make_folder(current)
            continue
        if not stat.S_ISDIR(info.st_mode):
            if not create:
                return None
            what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder"
            raise KbgenError(
                f"{current}: {what}; kbgen writes pages only into real folders inside {root}",
                hint="remove it, or choose another OUT",
            )
    return current / parts[-1]


def _make_folder(path: Path) -> None:
    try:
        path.mkdir()
    except FileExistsError:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            raise KbgenError(f"{path}: appeared while writing and is not a folder") from None
    except OSError as exc:
        raise KbgenError(f"{path}: cannot create: {exc.strerror}") from None


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _current(path: Path, size: int) -> bytes | None:
    """The bytes of the regular file at ``path`` when it could equal ``size`` bytes, else None."""
    if not _is_regular(path):
        return None  # missing, a folder, or a link: a link is replaced, never written through
    try:
        return read_limited(path, size)
    except (OSError, Unreadable):
        return None


def _read_manifest(path: Path) -> list[str]:
    if not _is_regular(path):
        return []
    try:
        names: Any = json.loads(read_limited(path, 16 * 1024 * 1024).decode("utf-8"))
    except (OSError, Unreadable, ValueError):
        return []
    return [n for n in names if _safe_name(n)] if isinstance(names, list) else []


def _replace(path: Path, data: bytes) -> None:
    """Write through a temporary file and rename (kbgen's one atomic writer): a reader never sees
    half a page. The file keeps its permission bits; a new one gets those of the umask."""
    mode = stat.S_IMODE(os.lstat(path).st_mode) if _is_regular(path) else new_file_mode()
    replace_file(path, data, mode, durable=False)
