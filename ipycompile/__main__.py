"""``python -m ipycompile report TRACE_OR_DIR``: see :mod:`ipycompile.cli`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
