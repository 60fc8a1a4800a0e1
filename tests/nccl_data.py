"""The recorded two-GPU NCCL jobs (``tests/data/nccl-h100x2/``), unpacked once per test process."""

from __future__ import annotations

import atexit
import functools
import shutil
import tarfile
import tempfile
from pathlib import Path

ARCHIVE = Path(__file__).parent / "data" / "nccl-h100x2" / "logs.tar.xz"


@functools.cache
def nccl_data() -> Path:
    """The folder the archive was unpacked into (``ddp/``, ``fsdp2/``, ``diverge/``, ``collective/``, ...)."""
    root = Path(tempfile.mkdtemp(prefix="ipycompile-nccl-"))
    atexit.register(shutil.rmtree, root, True)
    # The "data" extraction filter exists from Python 3.10.12 and 3.11.4 on (Debian 12's python3.11 is
    # 3.11.2): where it is missing, the archive (the repository's own) is extracted as before.
    safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(root, **safe)
    return root
