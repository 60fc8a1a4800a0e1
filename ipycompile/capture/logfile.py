"""A TORCH_TRACE log file as bytes, before any record is read: whether it is gzip, and the
error for an input that cannot be read as a log. Its own module so that the reader
(``tracefile.py``) and the read-ahead process (``readahead.py``) share them without
importing each other."""

from __future__ import annotations

__all__ = ["GZIP_MAGIC", "TraceFileError", "is_gzip"]

#: the first two bytes of a gzip file
GZIP_MAGIC = b"\x1f\x8b"


class TraceFileError(ValueError):
    """An input that cannot be read as a TORCH_TRACE log (the message says why),
    or, with ``strict=True``, a line that cannot be read."""


def is_gzip(path: str) -> bool:
    """Whether the file at ``path`` is gzip (by its magic bytes, as the reader tells it)."""
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC
