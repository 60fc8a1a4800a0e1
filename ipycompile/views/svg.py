"""Charts written as SVG by our own code: no matplotlib to import (about 1 s) or to draw and
encode a PNG with (0.4 s) when a page shows a figure.

:class:`Drawing` collects shapes and text in pixels and gives back an :class:`SvgImage`,
the markup a page inlines and a notebook shows (``_repr_svg_``). Text and axes are drawn in
``currentColor``, so a chart takes the colour of the text around it and reads in light and
dark themes alike; bars keep their own mid-tone colours. Every text from a report (a phase,
a compile id, an event's name) is escaped. :func:`ticks` picks the axis's round values.
"""

from __future__ import annotations

import html
import math
from typing import Optional

__all__ = ["Drawing", "SvgImage", "ticks", "tick_label", "text_width"]

#: The font of a chart's text (the page's own).
FONT = 'system-ui,-apple-system,"Segoe UI",sans-serif'


def _n(x: float) -> str:
    """A coordinate, to a tenth of a pixel (the markup stays small)."""
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def text_width(text: str, size: float = 11) -> float:
    """About how wide ``text`` is in pixels at ``size`` (a sans-serif's mean advance, 0.6 em):
    enough to leave room for labels, no font to measure."""
    return 0.6 * size * len(text)


class SvgImage:
    """An SVG chart: its markup, its size in pixels and its title (what it shows, in words)."""

    def __init__(self, markup: str, width: float, height: float, title: str):
        self.markup = markup
        self.width = width
        self.height = height
        self.title = title

    def _repr_svg_(self) -> str:
        """The chart as an SVG document of its own (inline in HTML, its markup needs no namespace)."""
        return self.markup.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1)

    def __repr__(self) -> str:
        return f"<SvgImage {self.title!r} {self.width:.0f}x{self.height:.0f}>"


class Drawing:
    """Shapes and text on a canvas of ``width`` x ``height`` pixels, drawn in order."""

    def __init__(self, width: float, height: float, title: str):
        self.width = width
        self.height = height
        self.title = title
        self.parts: list[str] = []

    def rect(self, x: float, y: float, w: float, h: float, fill: str, tip: Optional[str] = None) -> None:
        """A filled rectangle; ``tip``: its tooltip (the value it stands for)."""
        body = f"<title>{_e(tip)}</title></rect>" if tip else "</rect>"
        self.parts.append(f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(max(w, 0.0))}" height="{_n(h)}" '
                          f'fill="{_e(fill)}">{body}')

    def line(self, x1: float, y1: float, x2: float, y2: float, opacity: float = 0.6, dash: bool = False) -> None:
        """A line in the text's colour (an axis, a tick, a grid line)."""
        extra = ' stroke-dasharray="3 3"' if dash else ""
        self.parts.append(f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" stroke="currentColor" '
                          f'stroke-opacity="{opacity:g}"{extra}/>')

    def text(self, x: float, y: float, text: str, size: float = 11, anchor: str = "start",
             weight: str = "", cls: str = "") -> None:
        """Text centred vertically on ``y``; ``anchor``: start, middle or end (at ``x``)."""
        attrs = f' text-anchor="{anchor}"' if anchor != "start" else ""
        attrs += f' font-weight="{weight}"' if weight else ""
        attrs += f' class="{cls}"' if cls else ""
        self.parts.append(f'<text x="{_n(x)}" y="{_n(y)}" font-size="{size:g}" dy=".35em"{attrs}>{_e(text)}</text>')

    def x_axis(self, x0: float, x1: float, y: float, hi: float, label: str) -> None:
        """A horizontal axis from ``x0`` to ``x1`` at ``y`` for values 0 to ``hi``: its line, round
        ticks with their values, and ``label`` below."""
        self.line(x0, y, x1, y)
        for v in ticks(hi):
            x = x0 + (x1 - x0) * v / hi
            self.line(x, y, x, y + 4)
            self.text(x, y + 12, tick_label(v), size=10, anchor="middle")
        self.text((x0 + x1) / 2, y + 30, label, size=11, anchor="middle")

    def image(self) -> SvgImage:
        w, h = math.ceil(self.width), math.ceil(self.height)
        markup = (f'<svg class="ipyc-chart" role="img" aria-label="{_e(self.title)}" '
                  f'viewBox="0 0 {w} {h}" width="{w}" height="{h}" font-family=\'{FONT}\' fill="currentColor" '
                  f'style="max-width:100%;height:auto">' + "".join(self.parts) + "</svg>")
        return SvgImage(markup, w, h, self.title)


def ticks(hi: float, most: int = 6) -> list[float]:
    """Round values from 0 to ``hi`` (steps of 1, 2 or 5 times a power of ten), at most ``most``+1."""
    if not hi > 0 or not math.isfinite(hi):
        return [0.0]
    raw = hi / most
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    count = int(hi / step + 1e-9)
    return [i * step for i in range(count + 1)]


def tick_label(v: float) -> str:
    """A tick's value, as short as it reads: 0, 0.5, 2, 1e+03."""
    return f"{v:.6g}"
