"""A run asked for in words: the magic's options, still as text, to one library call.

``%%compile`` hands over what it parsed (``--option KEY=VALUE`` and
``--sweep NAME=v1,v2,...`` as the user typed them, the other options as values);
:func:`run_request` reads the texts, validates them, and runs the cell once
(:func:`~ipycompile.run.runner.execute`) or as a sweep
(:func:`~ipycompile.run.sweeps.sweep_cell`). Everything here is plain Python, so
any magic line can be reproduced without IPython.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from typing import Any, Optional

from .kernel_times import cell_devices
from .options import OPTION_NAMES, RunOptions
from .pipeline import CellRun
from .runner import execute
from .settings import parse_option
from .sweeps import SweepError, parse_sweep, sweep_cell


def run_request(
    source: str,
    namespace: dict,
    *,
    option: Sequence[str] = (),
    sweep: Sequence[str] = (),
    quiet: bool = False,
    **kwargs: Any,
) -> "CellRun | Any":
    """Run ``source`` as ``%%compile`` would: a :class:`CellRun`, or the sweep's DataFrame
    when ``sweep`` names parameters. Bad options raise ``ValueError`` (``SettingsError``,
    ``SweepError``) before anything runs; ``kwargs`` are :func:`execute`'s (the options among
    them become one :class:`~ipycompile.run.options.RunOptions`)."""
    options = dict(parse_option(text) for text in option)
    params = dict(parse_sweep(text) for text in sweep)
    if len(params) < len(sweep):
        raise SweepError("--sweep: each NAME may be swept once; give all its values in one --sweep")
    chosen = {k: kwargs.pop(k) for k in OPTION_NAMES if k in kwargs}
    # the run's options, built once (bad ones fail before anything runs)
    opts = RunOptions.build(options=options, **chosen, devices=lambda: cell_devices(source, namespace))
    if not sweep:
        return execute(source, namespace, run_options=opts, progress=not quiet, **kwargs)
    return sweep_cell(source, namespace, params, run_options=opts, progress=not quiet, **kwargs)


def split_options(line: str, parses: Callable[[str], bool]) -> Optional[tuple[str, str]]:
    """Split ``[options] CODE`` (the line form, ``%compile --runs 3 model(x)``) into the
    option text and the code: the longest run of leading ``-`` tokens that ``parses``
    accepts. None when no split parses."""
    try:
        tokens = shlex.split(line, posix=False)
    except ValueError:  # an unbalanced quote in the code
        tokens = line.split()
    pos = 0
    starts = []
    for tok in tokens:
        pos = line.index(tok, pos)
        starts.append(pos)
        pos += len(tok)
    for i in range(len(tokens) + 1):
        rest = line[starts[i]:] if i < len(tokens) else ""
        if rest.startswith("-"):
            continue
        opts = line[: starts[i]] if i < len(tokens) else line
        if parses(opts):
            return opts.strip(), rest
    return None
