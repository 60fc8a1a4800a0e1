"""What every magic's line goes through: split as a shell would, and the ``-o NAME`` rule.

IPython's ``parse_argstring`` splits with ``shlex`` in non-POSIX mode, which keeps the quotes
(``--label "my run"`` is the label ``"my run"``, quotes and all); :func:`parse_line` splits as a
POSIX shell does and hands the words to the magic's own ``magic_arguments`` parser (whose errors
are ``UsageError``). :func:`output_name` is the one rule for ``-o NAME`` in every magic.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Callable, Optional

from IPython.core.error import UsageError

from ..run.cell import check_name

_SHELL_HISTORY = re.compile(r"_+|_i+|_i?\d+|_[iod]h")  # _, __, ___, _i, _ii, _5, _i5, _ih, _oh, _dh


def parse_line(magic: Callable, line: str, name: str) -> Any:
    """``line`` split as a shell would (quotes group words and are removed) and parsed by
    ``magic``'s ``magic_arguments`` parser; an unbalanced quote is a ``UsageError``."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"%{name}: {exc} in {line.strip()!r}; quote a value with spaces as \"my run\"") from None
    return magic.parser.parse_args(words)  # type: ignore[attr-defined]


def output_name(shell: Any, text: Optional[str], magic: str) -> Optional[str]:
    """``text`` when ``-o`` may store a result under it: a Python name, not a keyword, and not a
    name the shell itself relies on (``get_ipython``, ``In``, ``Out``, ``exit``, ``_``, ``_i3``,
    ``__builtins__``, any ``__dunder__``). A one-line ``UsageError`` otherwise."""
    if text is None:
        return None
    try:
        check_name("-o", text, "-o report")
    except ValueError as exc:
        raise UsageError(f"%{magic} {exc}") from None
    hidden = getattr(shell, "user_ns_hidden", {}) or {}
    if text in hidden or _SHELL_HISTORY.fullmatch(text) or (text.startswith("__") and text.endswith("__")):
        raise UsageError(f"%{magic} -o: {text!r} is not allowed (IPython itself uses that name: storing a result "
                         "there would break the shell); give another name, e.g. -o report")
    return text
