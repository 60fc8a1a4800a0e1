"""Reading large trace reports (issue 32): the faster paths of the parser (the JSON depth
check, the FX op count) give the same results as the slow ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.fx

from ipycompile.capture.parse.control_flow import count_ops
from ipycompile.report.serialize import MAX_JSON_DEPTH, NestingError, loads

DATA = Path(__file__).parent / "data" / "gpu-h100"


def test_json_nested_past_the_limit_is_still_refused():
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(NestingError):
        loads(deep)
    with pytest.raises(NestingError):
        loads(deep.encode())
    ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert loads(ok) is not None
    # many brackets, most inside strings or side by side: shallow, read (the walk decides)
    wide = json.dumps({"s": "[" * 500, "xs": [[1]] * 500})
    assert loads(wide)["s"] == "[" * 500
    # a deep value whose text also has many brackets in strings is still refused
    with pytest.raises(NestingError):
        loads(json.dumps({"s": "{" * 10, "v": json.loads("[" * 70 + "]" * 70)}))


# -- the FX op count --------------------------------------------------------------
class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, y):
        z = self.lin(x).relu() + torch.cat([x, y], dim=-1)[..., :4]
        w = z.reshape((2, -1)).sum(dim=(0,)) * 2  # a tuple in brackets over lines once printed long
        return torch.where(w > 0, w, torch.zeros_like(w)).to(torch.float32), z.transpose(0, 1).contiguous()


@pytest.mark.parametrize("extra_strings", [False, True])
def test_count_ops_counts_the_call_nodes_of_a_real_graph(extra_strings):
    gm = torch.fx.symbolic_trace(_Net())
    if extra_strings:  # string arguments with brackets, quotes and '#' inside
        g = gm.graph
        out = next(n for n in g.nodes if n.op == "output")
        with g.inserting_before(out):
            g.call_function(torch.ops.aten.view.dtype, (next(iter(g.nodes)), torch.float32))
            g.call_method("rename", (next(iter(g.nodes)), "a(b[c{#", 'q"\'u)'))
        gm.recompile()
    code = gm.print_readable(print_output=False)
    calls = sum(n.op in ("call_function", "call_method", "call_module") for n in gm.graph.nodes)
    assert count_ops(code) == calls
    assert count_ops(gm.code) == calls
