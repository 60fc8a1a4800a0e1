"""Test helper: split a TORCH_TRACE log file into ``(metadata, payload)`` records.

Reading whole trace files is a product feature of a later issue; this is the
small splitter the tests need to feed ``build_report`` from real GPU logs.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

DATA = Path(__file__).parent / "data"
_LINE = re.compile(r"^[VIWE]\d{4} [\d:.]+ +\d+ \S+\] (\{.*\})\s*$")


def read_records(path: "str | Path") -> list[tuple[dict, "str | None"]]:
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    records: list[tuple[dict, "str | None"]] = []
    meta = None
    payload: list[str] = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("\t"):
                payload.append(line[1:])
                continue
            m = _LINE.match(line)
            if not m:
                continue
            if meta is not None:
                records.append((meta, "\n".join(payload) if payload else None))
            meta, payload = json.loads(m.group(1)), []
    if meta is not None:
        records.append((meta, "\n".join(payload) if payload else None))
    return records


def gpu_records(workload: str) -> list[tuple[dict, "str | None"]]:
    """Records of one H100 trace: 'quickstart', 'max_autotune' or 'reduce_overhead'."""
    return read_records(DATA / "gpu-h100" / f"{workload}.log.gz")
