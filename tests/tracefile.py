"""Test helper: the ``(metadata, payload)`` records of the recorded H100 logs.

Read with ipycompile's own reader (:func:`ipycompile.capture.tracefile.iter_records`),
strictly: a line of these logs that it could not read fails the tests using them.
"""

from __future__ import annotations

from pathlib import Path

from ipycompile.capture.tracefile import iter_records

DATA = Path(__file__).parent / "data"


def read_records(path: "str | Path") -> list[tuple[dict, "str | None"]]:
    return [(rec.metadata, rec.payload) for rec in iter_records(path, strict=True)]


def gpu_records(workload: str) -> list[tuple[dict, "str | None"]]:
    """Records of one H100 trace: 'quickstart', 'max_autotune' or 'reduce_overhead'."""
    return read_records(DATA / "gpu-h100" / f"{workload}.log.gz")
