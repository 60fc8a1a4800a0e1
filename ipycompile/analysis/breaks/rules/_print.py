"""What the print rules share: torch's description of a `print` call it stopped at."""

from __future__ import annotations

import re

from ..base import Facts

_PRINT = re.compile(r"^builtin print \[(?P<types>.*?)\] (?P<kw>True|False)")
#: the argument kinds torch can hold back and print after the graph
REORDERABLE = {"TensorVariable", "ConstantVariable", "StringFormatVariable"}


def is_print(f: Facts) -> bool:
    return bool(_PRINT.match(f.context)) or (f.code == "GB0296" and "built-in function print" in f.context)


def arg_types(f: Facts) -> list[str]:
    """The kinds of the printed values as torch names them (``TensorVariable``, ``SizeVariable``)."""
    m = _PRINT.match(f.context)
    return re.findall(r"\.(\w+Variable)'", m.group("types")) if m else []


def reorderable(f: Facts) -> bool:
    m = _PRINT.match(f.context)
    return bool(m) and m.group("kw") == "False" and all(t in REORDERABLE for t in arg_types(f))
