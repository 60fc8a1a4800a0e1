"""Test helper: small hostile TORCH_TRACE inputs, built from the recorded H100 logs.

Each is what a user (or an adversarial tester) can hand to ``load_trace`` or
``python -m ipycompile report``: a log with a deeply nested JSON line, wrong-typed
``compilation_metrics`` fields, control characters in messages and file names,
and a real one-process TORCH_TRACE directory made by a fresh Python process.
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import sys
from pathlib import Path

from ipycompile.capture.tracefile import glog_prefix, iter_records, write_trace

DATA = Path(__file__).parent / "data" / "gpu-h100"
ROOT = Path(__file__).resolve().parents[1]
PREFIX = glog_prefix(1_700_000_000.0, 4242, "torch/_dynamo/utils.py", 1)


def records(workload: str = "quickstart") -> list[tuple[dict, "str | None"]]:
    """The ``(metadata, payload)`` records of a recorded log, payload md5s dropped (write_trace adds fresh ones)."""
    out = []
    for r in iter_records(DATA / f"{workload}.log.gz"):
        meta = {k: v for k, v in r.metadata.items() if k != "has_payload"}
        out.append((meta, r.payload))
    return out


def nested(depth: int) -> str:
    """JSON nested ``depth`` lists deep: ``[[[...]]]``."""
    return "[" * depth + "]" * depth


def deep_envelope_line(depth: int = 100_000) -> bytes:
    """An event line whose JSON envelope nests ``depth`` levels (json.loads raises RecursionError)."""
    return f'{PREFIX} {{"chromium_event": {{}}, "deep": {nested(depth)}}}\n'.encode()


def deep_payload_event(name: str = "torch_version", depth: int = 100_000, compile_id=None) -> bytes:
    """An artifact event whose payload (with a valid md5) nests ``depth`` levels, of compile
    ``compile_id`` (``(frame, compile)``) when given."""
    payload = "{" + '"a": ' + nested(depth) + "}"
    md5 = hashlib.md5(payload.encode()).hexdigest()
    cid = f', "frame_id": {compile_id[0]}, "frame_compile_id": {compile_id[1]}' if compile_id else ""
    return (f'{PREFIX} {{"artifact": {{"name": "{name}", "encoding": "json"}}{cid}, "has_payload": "{md5}"}}\n'
            f"\t{payload}\n").encode()


def write_log(path: Path, recs, extra_lines: bytes = b"") -> Path:
    write_trace([(m, p, PREFIX) for m, p in recs], path)
    if extra_lines:
        with open(path, "ab") as f:
            f.write(extra_lines)
    return path


@functools.cache
def one_process_trace_dir() -> Path:
    """``TORCH_TRACE=DIR python train.py``, as a user runs a script: DIR holds one log, without a rank.
    Run once per test run (under xdist: by the first worker that asks; ``trace_jobs._once_per_run``)."""
    from trace_jobs import _once_per_run

    def make(work: Path) -> None:
        work.mkdir(parents=True)
        script = work / "train.py"
        script.write_text(
            "import torch\n"
            "@torch.compile(backend='eager')\n"
            "def f(x):\n"
            "    if x.sum() > 0:\n"  # a graph break
            "        return x.sin()\n"
            "    return x.cos()\n"
            "f(torch.randn(8))\n"
        )
        env = {**os.environ, "TORCH_TRACE": str(work / "traces")}
        env.pop("TORCH_LOGS", None)
        subprocess.run([sys.executable, str(script)], check=True, env=env, cwd=work, timeout=300,
                       capture_output=True)

    return _once_per_run("one-process", make) / "traces"
