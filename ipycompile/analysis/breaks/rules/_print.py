"""What the print rules share: torch's description of a `print` call it stopped at."""

from __future__ import annotations


from ..base import Facts

#: the argument kinds torch can hold back and print after the graph
REORDERABLE = {"TensorVariable", "ConstantVariable", "StringFormatVariable"}


def is_print(f: Facts) -> bool:
    return f.said.print_kwargs is not None or (f.code == "GB0296" and f.said.prints)


def arg_types(f: Facts) -> list[str]:
    """The kinds of the printed values as torch names them (``TensorVariable``, ``SizeVariable``)."""
    return list(f.said.print_types)


def reorderable(f: Facts) -> bool:
    return f.said.print_kwargs is False and all(t in REORDERABLE for t in arg_types(f))
