"""Record the logs of ``tests/inputs/`` again, with the running torch: ``python tests/inputs/record.py [--only NAME ...]``.

Each recipe of ``recipes.py`` runs from a clean Dynamo under ``ipycompile.capture(trace_dir=...)``
and its log is written here as ``<recipe>-torch-<version>.log.gz`` (see ``tests/recorded.py``).
Run it from the repository root with the venv's python (another torch's venv records that version).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS.parent), str(TESTS)]

import recorded  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="record these recipes only")
    args = parser.parse_args(argv)
    names = args.only or list(recorded.recipes())
    unknown = [n for n in names if n not in recorded.recipes()]
    if unknown:
        parser.error(f"no recipe named {', '.join(unknown)} (recipes: {', '.join(recorded.recipes())})")
    for name in names:
        report, path = recorded.record(name, recorded.INPUTS)
        print(f"{path.relative_to(TESTS.parent)}: {path.stat().st_size} bytes, {len(report.compiles)} compiles, "
              f"{len(report.recompiles)} recompiles, {report.graph_break_count} graph breaks, {len(report.failures)} failures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
