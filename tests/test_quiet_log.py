"""Torch's log lines about breaks and recompiles are kept out of a %%compile cell's output,
through a filter that exists only while the cell runs, on the handlers that print into the output;
every other torch line still prints, and a user's own handlers (a file, a stream of their own)
still receive every line."""

from __future__ import annotations

import io
import logging
import sys

import torch

from ipycompile.run.quiet import quiet_torch_log


def test_covered_lines_are_kept_out_only_during_the_block_and_logging_is_left_as_it_was(monkeypatch):
    torch._dynamo.reset()
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)  # the cell's output
    handler = logging.StreamHandler()  # prints into it, as torch's own handler does
    own = io.StringIO()
    users = logging.StreamHandler(own)  # the user's own: a stream of theirs
    logger = logging.getLogger("torch._dynamo")
    logger.addHandler(handler)
    logger.addHandler(users)
    before = [(h, list(h.filters)) for name in ["", *logging.root.manager.loggerDict]
              for h in getattr(logging.getLogger(name), "handlers", ())]
    try:
        with quiet_torch_log() as kept:
            # torch's own warning, for real: the recompile limit of a function whose input changes type
            def f(x, n):
                return x + n

            compiled = torch.compile(f, backend="eager")
            with torch._dynamo.config.patch(recompile_limit=1):
                for n in (1, 2.5, "a"[:0] or 3):
                    compiled(torch.ones(2), n)
            logging.getLogger("torch._dynamo.eval_frame").warning("something the report does not cover")
            logging.getLogger("other").warning("Graph break in a library that is not torch")
        logging.getLogger("torch._dynamo.convert_frame").warning("Graph break after the cell")
    finally:
        logger.removeHandler(handler)
        logger.removeHandler(users)
    out = stream.getvalue()
    assert "recompile_limit" in own.getvalue().split("something the report")[0]  # the user's handler has every line
    assert "something the report does not cover" in out  # never hide what the report does not show
    assert "Graph break after the cell" in out  # the filter is gone after the block
    assert any("recompile_limit" in line for line in kept.kept), kept.kept
    assert "recompile_limit" not in out.split("something the report")[0], out
    # every handler that was there before has exactly the filters it had (torch adds its own handlers lazily)
    assert all(h.filters == filters for h, filters in before)


def test_a_users_handlers_receive_torchs_lines_while_a_compile_cell_runs(tmp_path, ip):
    """In a real IPython shell: ``torch._logging.set_logs(graph_breaks=True, recompiles=True)`` and the
    user's own handlers on ``torch._dynamo`` (a file, a stream of theirs): a ``%%compile`` cell's graph
    break and recompile lines reach them as they do outside ``%%compile``."""
    from IPython.utils.capture import capture_output

    log_file = tmp_path / "dynamo.log"
    to_file = logging.FileHandler(log_file)
    own = io.StringIO()
    to_stream = logging.StreamHandler(own)
    logger = logging.getLogger("torch._dynamo")
    logger.addHandler(to_file)
    logger.addHandler(to_stream)
    torch._logging.set_logs(graph_breaks=True, recompiles=True)
    cell = ("def brk(x):\n    y = x + 1\n    if y.sum() > 0:\n        y = y * 2\n    return y\n"
            "c = torch.compile(brk, backend='eager')\nc(torch.randn(8))\nc(torch.randn(8, 3))")
    try:
        torch._dynamo.reset()
        with capture_output():
            ip.run_cell_magic("compile", "--runs 1 --backend eager", cell)
    finally:
        torch._logging.set_logs()
        logger.removeHandler(to_file)
        logger.removeHandler(to_stream)
        to_file.close()
    for got in (log_file.read_text(), own.getvalue()):
        assert "Graph break in user code" in got, got[:500]
        assert "Recompiling function brk" in got, got[:2000]
