"""Worker process of :func:`ipycompile.capture.tracedir.read_summaries`.

``python -m ipycompile.capture._rankworker [--strict]`` reads ``[[rank, path], ...]``
(JSON) on stdin and writes one JSON line per log on stdout as each is read:
``{"rank": r, "report": <slim summary report as a dict>}`` or ``{"rank": r, "error": why}``.
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    import signal

    # Ctrl-C at a terminal reaches the whole foreground group, this worker too: the process that
    # started it decides (it stops and reaps its workers), so the worker prints no traceback of its own
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from .tracedir import _read_one
    from .tracefile import TraceFileError

    strict = "--strict" in argv
    share = json.loads(sys.stdin.read())
    for rank, path in share:
        try:
            msg = {"rank": rank, "report": _read_one(path, strict).to_dict()}
        except TraceFileError as exc:
            msg = {"rank": rank, "error": str(exc)}
        except Exception as exc:  # one bad log must not lose the others
            msg = {"rank": rank, "error": f"{path}: {type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()
        if "error" in msg and strict:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
