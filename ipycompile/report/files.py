"""Writing files safely: the one way ipycompile writes a file, and the one check that an
output is not one of the inputs.

:func:`atomic_writer` writes to a temporary file beside the target and renames it
over the target only when everything was written: a failure (disk full, a
file-size limit, an exception while rendering) leaves an earlier file as it was
and no temporary file behind, and its error names the path the caller gave.
A target that is a symlink is written through (the file it points to is
replaced; the link stays). :func:`refuse_input` refuses an output path that is
(or resolves to, through symlinks or hard links) an input file or lies inside an
input directory: ``report LOG --json LOG`` must never overwrite the log.
Every HTML page ipycompile writes carries :data:`REPORT_MARKER` in its head;
:func:`is_ipycompile_report` recognises one (the launcher overwrites a file only if it is one).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
from typing import IO, Callable, Iterable, Iterator, Optional

__all__ = ["atomic_writer", "write_atomic", "WRITTEN_HOOKS", "refuse_input", "OutputIsInputError", "REPORT_MARKER",
           "is_ipycompile_report"]

#: In the ``<head>`` of every HTML page ipycompile writes: how a page of ours is told from any other file.
REPORT_MARKER = '<meta name="generator" content="ipycompile">'


def is_ipycompile_report(path: "str | os.PathLike[str]") -> bool:
    """Whether ``path`` is an HTML page ipycompile wrote (:data:`REPORT_MARKER` in its first 4 KB)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return head.startswith(b"<!DOCTYPE html>") and REPORT_MARKER.encode() in head


class OutputIsInputError(ValueError):
    """An output path that would overwrite an input (the message names both)."""


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _renamed(exc: OSError, path: str) -> OSError:
    """``exc`` naming ``path`` (what the caller gave), never the temporary file."""
    out = type(exc)(exc.errno, exc.strerror or str(exc), path) if exc.errno is not None else OSError(str(exc))
    return out


#: Functions called with the path of each file :func:`atomic_writer` has written (every output of
#: ipycompile: a saved report, a page, a log, the command line's outputs), once it is in place: the
#: test suite checks each page and report it writes there (tests/written_checks.py).
WRITTEN_HOOKS: list[Callable[[str], None]] = []


@contextlib.contextmanager
def atomic_writer(path: "str | os.PathLike[str]", mode: str = "w", *, encoding: Optional[str] = "utf-8",
                  newline: Optional[str] = None) -> Iterator[IO]:
    """``with atomic_writer(path) as f: f.write(...)``: ``f`` is a temporary file beside
    ``path`` (text, or bytes with ``mode="wb"``), renamed over ``path`` when the block ends
    without an exception; on any exception the temporary file is removed and ``path`` is left
    as it was. ``OSError`` names ``path``. The new file gets the mode of the file it replaces,
    or, for a new file, what ``open()`` would have given it."""
    if mode not in ("w", "wb"):
        raise ValueError(f"mode {mode!r}: 'w' or 'wb'")
    given = os.fspath(path)
    target = os.path.realpath(given)  # write through a symlink: the file it points to is replaced
    folder = os.path.dirname(target)
    try:
        old = os.stat(target)
        perms = stat.S_IMODE(old.st_mode) if stat.S_ISREG(old.st_mode) else None
        if stat.S_ISDIR(old.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", given)
    except FileNotFoundError:
        perms = None
    import tempfile  # here: reading a report or a log writes nothing, and loads no tempfile (nor shutil)

    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    except OSError as exc:
        raise _renamed(exc, given) from None
    raw = os.fdopen(fd, "wb")
    try:
        # a lone surrogate (a file name not in UTF-8) written as an escape, never a UnicodeEncodeError
        f = raw if mode == "wb" else io.TextIOWrapper(raw, encoding=encoding, newline=newline,
                                                      errors="backslashreplace")
        yield f
        f.flush()
        os.fsync(raw.fileno())
        f.close()
        os.chmod(tmp, perms if perms is not None else 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(Exception):
            raw.close()
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename in (None, tmp):  # the write failed: name the user's path
            raise _renamed(exc, given) from None
        raise
    for hook in list(WRITTEN_HOOKS):
        hook(target)


def write_atomic(path: "str | os.PathLike[str]", data: "str | bytes", *, encoding: str = "utf-8") -> None:
    """Write ``data`` to ``path`` through :func:`atomic_writer`."""
    with atomic_writer(path, "wb" if isinstance(data, bytes) else "w", encoding=encoding) as f:
        f.write(data)


def _inside(path: str, folder: str) -> bool:
    return os.path.commonpath([path, folder]) == folder


def refuse_input(output: "str | os.PathLike[str]", inputs: Iterable["str | os.PathLike[str]"],
                 what: str = "the output") -> None:
    """:class:`OutputIsInputError` when ``output`` is one of ``inputs`` (the same file, also
    through a symlink or a hard link) or lies inside an input directory (at any depth, or as a
    hard link of a file in it); nothing when it is safe to write."""
    out = os.fspath(output)
    real = os.path.realpath(out)
    for given in inputs:
        name = os.fspath(given)
        try:
            st = os.stat(name)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            folder = os.path.realpath(name)
            if _inside(real, folder):
                raise OutputIsInputError(f"{what} {out} is inside the input directory {name}: "
                                         "write it elsewhere (ipycompile never writes among its inputs)")
            try:
                mine = os.stat(out)
            except OSError:
                continue
            for entry in os.scandir(folder):
                with contextlib.suppress(OSError):
                    if entry.is_file() and os.path.samestat(entry.stat(), mine):
                        raise OutputIsInputError(f"{what} {out} is the input {entry.path} (a link to it): "
                                                 "writing it would destroy the input; give another path")
        else:
            same = real == os.path.realpath(name)
            if not same:
                try:
                    same = os.path.samestat(os.stat(out), st)
                except OSError:
                    same = False
            if same:
                raise OutputIsInputError(f"{what} {out} is the input {name}"
                                         f"{'' if out == name else ' (the same file)'}: "
                                         "writing it would destroy the input; give another path")
