"""Control flow the user wrote but torch inlined: shown from the graph's source annotations."""

from __future__ import annotations

import torch
from torch._higher_order_ops.associative_scan import associative_scan

import ipycompile
from ipycompile.capture.parse.control_flow import inlined_control_flow
from ipycompile.views.viewmodel import Text, view_model


def add(a, b):
    return a + b


def generic_scan(x):
    y = associative_scan(add, x, dim=0, combine_mode="generic")  # traced into plain ops
    return y.sin()


def scan(x):  # the user's own function that happens to be called scan: not torch's operator
    return (x * 2).cumsum(0)


def calls_own_scan(x):
    y = scan(x)
    return y + 1


def real_cond(x):
    return torch.cond(x.sum() > 0, lambda t: t.cos(), lambda t: t.sin(), (x,))


def capture(fn, x):
    torch._dynamo.reset()
    with ipycompile.capture() as cap:
        out = torch.compile(fn, backend="eager", fullgraph=True)(x)
    torch.testing.assert_close(out, fn(x))
    return cap.report


def test_associative_scan_generic_is_shown_as_inlined_with_its_op_count():
    r = capture(generic_scan, torch.randn(8, 4))
    (node,) = r.control_flow
    assert node.op == "associative_scan" and node.inlined_ops is not None and node.subgraphs == []
    assert node.filename == __file__ and node.source_line.startswith("y = associative_scan(add, x")
    (graph,) = [g for g in r.graphs if g.stage == "dynamo"]
    assert 0 < node.inlined_ops < graph.op_count  # the trailing sin() is not the scan's
    assert "higher_order" not in graph.code  # really inlined: no HOP in the graph
    # the view and the summary say so
    tree = view_model(r).tab("control_flow").blocks()[1]
    assert tree.label.startswith(f"associative_scan -- inlined by torch: {node.inlined_ops} plain ops")
    assert any(isinstance(b, Text) and "traced it into plain ops" in b.text for b in tree.blocks)
    assert f"inlined by torch: {node.inlined_ops} plain ops" in r.summary()
    # it survives the JSON round trip
    again = ipycompile.CompileReport.from_json(r.to_json())
    assert again.control_flow[0].inlined_ops == node.inlined_ops


def test_a_users_own_function_named_scan_is_not_torchs_operator():
    r = capture(calls_own_scan, torch.randn(8, 4))
    assert r.control_flow == []


def test_a_real_higher_order_op_is_not_also_reported_as_inlined():
    r = capture(real_cond, torch.randn(4))
    assert [n.op for n in r.control_flow] == ["cond"] and r.control_flow[0].inlined_ops is None


def test_text_without_annotations_gives_nothing():
    assert inlined_control_flow("def forward(self, x):\n    y = x + 1\n    return (y,)") == []
    assert inlined_control_flow(None) == []  # type: ignore[arg-type]
