"""Progress while a run or a sweep runs: the views of the run layer's :class:`~ipycompile.run.progress.Status`.

- :func:`status_line` / :func:`final_line`: the status as one line of text (the one rendering
  every medium shares); :func:`status_html` the same line with a bar where there is a count.
- :class:`NotebookStatus`: in a Jupyter kernel, one output: an ipywidgets status line updated
  in place (``widget=True``, where ipywidgets is installed), or a display updated in place
  through its ``display_id``; once the run is over, the output is replaced by one line of what
  it took, and the widget is closed, so the saved notebook keeps that line only.
- :class:`TerminalStatus`: on a terminal, a single line rewritten in place (``\\r``), ended by
  the line of what it took; on a stream that is not a terminal (a pipe, a log file), a line per
  sweep point and that last line, nothing rewritten.

:func:`progress_view` is the factory ``import ipycompile`` registers with the run layer
(:func:`ipycompile.run.progress.register_progress_view`); the run layer draws nothing.
"""

from __future__ import annotations

import html
import shutil
import sys
from typing import IO, Any, Optional

from ..report.progress import COMPILING, FIRST_CALL, Status, SweepPoint


def _fmt_s(s: float) -> str:
    return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"


def _point_head(p: SweepPoint) -> str:
    if p.warm_start:
        return f"{p.title}: paying one-time start-up before the first point{f' ({p.label})' if p.label else ''}"
    what = ", ".join(f"{name}={value}" for name, value in p.params)
    return f"{p.title} {p.index + 1}/{p.total}: {f'{p.label}: ' if p.label else ''}{what}"


def _point_tail(s: Status) -> str:
    p = s.point
    assert p is not None
    eta = f", about {_fmt_s(p.remaining_s)} left" if p.remaining_s is not None else ""
    failed = f", {p.failed} failed" if p.failed else ""
    return f"elapsed {_fmt_s(s.elapsed_s)}{eta}{failed}"


def _phase_text(s: Status) -> str:
    if s.run_phase and s.phase != s.run_phase:  # torch's compile step, inside a run phase
        where = COMPILING if s.run_phase == FIRST_CALL else f"{s.run_phase}, {COMPILING}"
        text = where if s.phase == COMPILING else f"{where}: {s.phase}"
    else:
        text = s.phase or "running"
    if s.detail:
        text += f" {s.detail}"
    if s.done is not None and s.total:
        text += f" ({s.done}/{s.total} done)"
    return text


def status_line(s: Status) -> str:
    """The status as one line: the sweep point (if any), the phase, time in it, time in all."""
    if s.final:
        return final_line(s)
    phase = f"{_phase_text(s)} {_fmt_s(s.phase_s)}"
    if s.point is not None:
        return f"{_point_head(s.point)} · {phase} ({_point_tail(s)})"
    return f"ipycompile: {phase} ({_fmt_s(s.elapsed_s)} in all)"


_TOOK_NAMES = {FIRST_CALL: "compile and first call"}


def final_line(s: Status) -> str:
    """What it took, in one line: a run's time by phase, or a sweep's points and time."""
    p = s.point
    if p is not None:
        state = s.outcome if s.outcome in ("stopped", "failed") else "done"
        warm = sum(t for _, t in s.took)
        warm_text = f"; one-time start-up paid first ({_fmt_s(warm)}, not in any point)" if s.took else ""
        return (f"{p.title} {state}: {p.index}/{p.total} points in {_fmt_s(s.elapsed_s)}"
                f"{f', {p.failed} failed' if p.failed else ''}{warm_text}")
    state = {"stopped": "stopped after", "failed": "the cell raised after"}.get(s.outcome, "took")
    phases = ", ".join(f"{_TOOK_NAMES.get(name, name)} {_fmt_s(t)}" for name, t in s.took if t >= 0.05)
    return f"ipycompile: {state} {_fmt_s(s.elapsed_s)}{f' ({phases})' if phases else ''}"


def _bar(s: Status) -> Optional[tuple[int, int]]:
    if s.point is not None and not s.point.warm_start:
        return (s.point.index if not s.final else s.point.index), s.point.total
    if s.done is not None and s.total:
        return s.done, s.total
    return None


def status_html(s: Status) -> str:
    bar = _bar(s)
    drawn = (f'<progress value="{bar[0]}" max="{bar[1]}" style="width:12em;vertical-align:middle"></progress> '
             if bar else "")
    return f'<div class="ipycompile-progress" role="status">{drawn}<code>{html.escape(status_line(s))}</code></div>'


class _Line:
    """One status as a display: its line as text and HTML."""

    def __init__(self, status: Status) -> None:
        self.status = status

    def __repr__(self) -> str:
        return status_line(self.status)

    def _repr_html_(self) -> str:
        return status_html(self.status)


def _kernel_shell() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return shell if shell is not None and getattr(shell, "kernel", None) is not None else None


class NotebookStatus:
    """A live status line in a Jupyter kernel's output (see the module's docstring)."""

    def __init__(self, widget: bool = True) -> None:
        from IPython.display import display

        first = Status(phase="starting")
        self.widget = None
        if widget:
            try:
                import ipywidgets

                self.widget = ipywidgets.HTML(value=status_html(first))
            except Exception:  # no ipywidgets, or no comm with the frontend: the display alone
                self.widget = None
        self.handle = display(self.widget if self.widget is not None else _Line(first), display_id=True)

    def __call__(self, status: Status) -> None:
        if status.final:
            self.handle.update(_Line(status))  # the one line left in the saved output
            if self.widget is not None:
                for part in (self.widget.layout, self.widget.style, self.widget):  # each is a widget of its own
                    part.close()
                self.widget = None
        elif self.widget is not None:
            self.widget.value = status_html(status)
        else:
            self.handle.update(_Line(status))


class TerminalStatus:
    """A single updating line on a terminal; a line per sweep point and the last line elsewhere."""

    def __init__(self, stream: Optional[IO[str]] = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        try:
            self.tty = bool(self.stream.isatty())
        except Exception:
            self.tty = False
        self._point: Optional[tuple] = None
        self._drawn = False

    def __call__(self, status: Status) -> None:
        if self.tty:
            self._rewrite(status)
        elif status.final:
            self._write(final_line(status) + "\n")
        elif status.point is not None:
            key = (status.point.index, status.point.warm_start, status.point.label)
            if key != self._point:  # a new point: one line, as it starts
                self._point = key
                head = _point_head(status.point)
                self._write(head + ("" if status.point.warm_start else f" ({_point_tail(status)})") + "\n")

    def _rewrite(self, status: Status) -> None:
        if status.final:
            self._write("\r\x1b[K" + final_line(status) + "\n")
            self._drawn = False
            return
        width = max(20, shutil.get_terminal_size((100, 20)).columns - 1)
        line = status_line(status)
        if len(line) > width:
            line = line[: width - 1] + "…"
        self._write("\r" + line + "\x1b[K")
        self._drawn = True

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except Exception:
            pass


def progress_view(kind: str = "run") -> Any:
    """The callback for a new run or sweep: a live status line in a Jupyter kernel, else the
    terminal's line on stderr."""
    if _kernel_shell() is not None:
        return NotebookStatus()
    return TerminalStatus()
