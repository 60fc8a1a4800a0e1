"""A sweep's points as a table a person reads: the parameters, then only the figures that
vary from point to point, each with its unit (``136.0 us``, ``531.2 MiB``), the run time's
IQR beside it as a share of the median, and the points whose figures were noisy marked.
Columns with one value for every point are listed once under the table. The full
DataFrame stays on the result (``result.df``); this module only renders it, as HTML for a
notebook and as text for a terminal (:func:`sweep_table`)."""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any, Callable

from ..report.text import fmt_bytes, fmt_seconds

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["sweep_table"]


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v == ""


def _speedup(v: Any) -> str:
    return f"{v:.2f}x"


# (column, heading, formatter) in the order shown; a column appears when the DataFrame has it,
# some point has a value, and the points do not all share one value
_FIGURES: list[tuple[str, str, Callable[[Any], str]]] = [
    ("status", "status", str),
    ("error", "error", str),
    ("compile_s", "compile", fmt_seconds),
    ("run_median_s", "run time", fmt_seconds),
    ("run_iqr_s", "IQR", fmt_seconds),
    ("device_median_s", "device time", fmt_seconds),
    ("latency_median_s", "latency", fmt_seconds),
    ("speedup", "speedup", _speedup),
    ("break_even_calls", "break-even calls", lambda v: f"{int(v)}"),
    ("peak_device_bytes", "device peak", fmt_bytes),
    ("peak_host_added_bytes", "host added", fmt_bytes),
    ("graphs", "graphs", lambda v: f"{int(v)}"),
    ("graph_breaks", "graph breaks", lambda v: f"{int(v)}"),
    ("recompiles", "recompiles", lambda v: f"{int(v)}"),
    ("kernels", "kernels", lambda v: f"{int(v)}"),
    ("noisy", "noisy", str),
]


def _distinct(values: list[Any]) -> int:
    return len({repr(v) for v in values})


def _cells(df: "pd.DataFrame") -> tuple[list[str], list[list[str]], list[str]]:
    """Headings, rows of formatted cells, and ``name value`` for the columns every point shares."""
    params = [p for p in df.attrs.get("params", []) if p in df.columns]
    heads: list[str] = list(params)
    cols: list[tuple[str, Callable[[Any], str]]] = [(p, lambda v: str(v)) for p in params]
    same: list[str] = []
    if "label" in df.columns and _distinct(list(df["label"])) > 1:
        heads.append("label")
        cols.append(("label", str))
    for name, head, fmt in _FIGURES:
        if name not in df.columns:
            continue
        vals = list(df[name])
        present = [v for v in vals if not _missing(v)]
        if not present:
            continue
        if len(df) > 1 and _distinct(vals) == 1:  # one value for every point: said once, below
            same.append(f"{head} {fmt(present[0])}")
            continue
        heads.append(head)
        cols.append((name, fmt))
    rows = []
    for _, r in df.iterrows():
        row = []
        for name, fmt in cols:
            v = r[name]
            text = "" if _missing(v) else fmt(v)
            if name == "run_median_s" and "run time" in str(r.get("noisy", "") or ""):
                text += " NOISY"
            if name == "run_iqr_s" and not _missing(v) and not _missing(r.get("run_median_s")) and r["run_median_s"] > 0:
                text += f" ({100 * v / r['run_median_s']:.0f} %)"
            row.append(text)
        rows.append(row)
    return heads, rows, same


def sweep_table(df: "pd.DataFrame", medium: str = "html") -> str:
    """``df`` (a sweep's DataFrame) as a table: ``medium`` ``"html"`` or ``"text"``."""
    if medium not in ("html", "text"):
        raise ValueError(f"medium: {medium!r} is not allowed; choose html or text")
    heads, rows, same = _cells(df)
    n = len(df)
    foot = [f"{n} point{'s' if n != 1 else ''}"]
    if same:
        foot.append("the same at every point: " + ", ".join(same))
    foot.append(f"the full DataFrame ({len(df.columns)} columns) is .df")
    note = "; ".join(foot)
    if medium == "text":
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(heads)]
        line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
        return "\n".join([line(heads), line(["-" * w for w in widths]), *map(line, rows), note])
    esc = html.escape
    head = "".join(f"<th>{esc(h)}</th>" for h in heads)
    body = "".join(
        "<tr>" + "".join(f"<td style=\"text-align:right\">{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return (f"<table class=\"ipycompile-sweep\"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
            f"<p style=\"font-size:smaller\">{esc(note)}</p>")
