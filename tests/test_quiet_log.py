"""Torch's log lines about breaks and recompiles are kept out of a %%compile cell's output,
through a filter that exists only while the cell runs; every other torch line still prints."""

from __future__ import annotations

import io
import logging

import torch

from ipycompile.run.quiet import quiet_torch_log


def test_covered_lines_are_kept_out_only_during_the_block_and_logging_is_left_as_it_was():
    torch._dynamo.reset()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("torch._dynamo")
    logger.addHandler(handler)
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
    out = stream.getvalue()
    assert "something the report does not cover" in out  # never hide what the report does not show
    assert "Graph break after the cell" in out  # the filter is gone after the block
    assert any("recompile_limit" in line for line in kept.kept), kept.kept
    assert "recompile_limit" not in out.split("something the report")[0], out
    # every handler that was there before has exactly the filters it had (torch adds its own handlers lazily)
    assert all(h.filters == filters for h, filters in before)
