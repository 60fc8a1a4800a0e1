"""A loaded report's records that capture reads from torch's text, for a report saved before they
were kept: each filled by the reader that fills it when a report is built, so that a report saved
by an older version gives the same answers. :func:`fill` runs on every report
:meth:`~ipycompile.report.CompileReport.from_dict` loads (``ipycompile.capture`` registers it); a
record already there is left as saved."""

from __future__ import annotations

from .graph_breaks import names_collective
from .kernel_code import fill_report as fill_kernel_code
from .provenance import graph_node_lines, user_lines_by_node

__all__ = ["fill"]


def fill(report) -> None:
    fill_kernel_code(report)
    for b in report.graph_breaks:
        if b.names_collective is None:
            b.names_collective = names_collective(b)
    if report.node_lines is None:  # the graphs' node -> user line map, read from their code
        lines = user_lines_by_node(graph_node_lines(report.graphs))
        if lines:  # (none to read: left as saved, so that a report saves and reloads the same)
            report.node_lines = lines
