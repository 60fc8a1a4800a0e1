"""The one reader of each kind of torch's text (capture/parse): tracebacks and resume-function
names (frames.py), ``# File:`` places, graph nodes and brackets (fx.py), what torch's
developer context names (context.py), the settings its hints name; and the records the
report carries from them (``GraphBreak.stop``, ``Compile.resumes``, ``Graph.nodes``),
which load from JSON. Recorded payloads of torch 2.13 (CPU), inlined."""

from __future__ import annotations

import torch

import ipycompile
from ipycompile import CompileReport
from ipycompile.capture.parse.context import read_detail
from ipycompile.capture.parse.frames import parse_traceback, resume_origin, user_stack_text
from ipycompile.capture.parse.fx import cut_top_level, graph_nodes, layer_inputs, matching_close, place, split_top_level
from ipycompile.capture.parse.graph_breaks import hinted_settings
from ipycompile.report.model import GraphBreak, UserFrame
from ipycompile.report.owners import is_notebook_cell

TRACEBACK = '''User code traceback:
  File "/home/me/train.py", line 9, in <module>
    run = step(x)
          ^^^^^^^
  File "/tmp/ipykernel_77/2131.py", line 2, in step
    out = model(ids).loss
Traceback (most recent call last):
  File "/site-packages/torch/_dynamo/symbolic_convert.py", line 1076, in wrapper
    return inner_fn(self, inst)
'''


def test_one_traceback_reader_for_every_listing():
    frames = parse_traceback(TRACEBACK.splitlines()[1:], until_unindented=True)
    assert frames == [UserFrame("/home/me/train.py", 9, "<module>", "run = step(x)"),
                      UserFrame("/tmp/ipykernel_77/2131.py", 2, "step", "out = model(ids).loss")]
    assert len(parse_traceback(TRACEBACK)) == 3  # without the stop: torch's frame too
    failure = "boom\n\nfrom user code:\n   File \"/c.py\", line 4, in f\n    return scan(g, x)\n\nSet TORCHDYNAMO_VERBOSE=1"
    assert parse_traceback(user_stack_text(failure)) == [UserFrame("/c.py", 4, "f", "return scan(g, x)")]
    assert parse_traceback(None) == [] and parse_traceback("garbage") == []


def test_resume_function_names():
    assert resume_origin("torch_dynamo_resume_in_forward_at_17") == ("forward", 17)
    assert resume_origin("forward") is None and resume_origin(None) is None


def test_places_of_both_forms_and_nodes():
    assert place("    # File: /a/b.py:12 in forward, code: y = x @ w") == UserFrame("/a/b.py", 12, "forward", "y = x @ w")
    assert place("# File: t.py:3, code: return cond(p, t, f, [x])") == UserFrame("t.py", 3, "", "return cond(p, t, f, [x])")
    assert place("# No stacktrace found") is None
    code = '''class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[4][1]cpu", L_self_modules_layers_modules_0_parameters_weight_: "f32[4, 4][4, 1]cpu"):
        l_x_ = L_x_
        l_self_modules_layers_modules_0_parameters_weight_ = L_self_modules_layers_modules_0_parameters_weight_
        # File: /u/m.py:7 in forward, code: x = layer(x)
        linear: "f32[4][1]cpu" = torch._C._nn.linear(l_x_, l_self_modules_layers_modules_0_parameters_weight_, None);  l_x_ = None
        # File: /u/m.py:8 in forward, code: x = x.relu()
        relu: "f32[4][1]cpu" = linear.relu();  linear = None
        return (relu,)
'''
    nodes, places = graph_nodes(code)
    assert [n.name for n in nodes] == ["linear", "relu"]
    assert [places[n.place].lineno for n in nodes] == [7, 8]
    assert nodes[0].shape_key == "torch._C._nn.linear(%, %, None)" and nodes[1].reads == ["linear"]
    assert layer_inputs(nodes) == {"l_x_": "", "l_self_modules_layers_modules_0_parameters_weight_": "self.layers"}
    assert graph_nodes(None) == ([], [])


def test_one_bracket_scanner():
    text = "f(a, (b, c), 'x)', [d])"
    assert matching_close(text, 1) == len(text) - 1
    assert split_top_level(text[2:-1]) == ["a", "(b, c)", "'x)'", "[d]"]
    assert cut_top_level("g(a; b);  a = None") == "g(a; b)"


def test_what_torchs_context_names():
    d = read_detail("module: torch.optim.adam, qualname: Adam.step, skip reason: file is force-skipped")
    assert (d.callee_module, d.callee_qualname) == ("torch.optim.adam", "Adam.step")
    d = read_detail("raised exception TypeError(\"unsupported operand type(s) for %: 'int' and 'int'\")")
    assert d.raised_type == "TypeError" and "unsupported operand" in d.raised_args
    d = read_detail("builtin print [<class 'torch._dynamo.variables.tensor.TensorVariable'>] False")
    assert d.prints and d.print_types == ["TensorVariable"] and d.print_kwargs is False
    assert read_detail("aten.bincount.default").aten_op == "bincount"
    assert read_detail("next(list_iterator)").iterator_type == "list_iterator"
    # torch 2.14's GB9493 (a C-implemented special method it has no model of), as it says it for `d.items()`
    # passed in: iterating it is an iterator torch cannot step through; another method is not
    d = read_detail("name=__iter__, type=dict_items, attr=<slot wrapper '__iter__' of 'dict_items' objects>")
    assert (d.c_method, d.c_method_type, d.iterator_type) == ("__iter__", "dict_items", "dict_items")
    d = read_detail("name=__len__, type=Foo, attr=<slot wrapper '__len__' of 'Foo' objects>")
    assert (d.c_method, d.c_method_type, d.iterator_type) == ("__len__", "Foo", "")
    d = read_detail("Called `torch.compiler.disable()` with args `[]`, kwargs `{}`")  # 2.14's GB0377: the API called
    assert (d.callee_module, d.callee_qualname) == ("torch.compiler", "disable")
    d = read_detail("qualname: set_grad_enabled.__enter__, name: __enter__, filename: `/site-packages/torch/autograd/"
                    "grad_mode.py`, skip reason: file matches MOD_SKIPLIST (/site-packages/torch/autograd)")  # GB0008
    assert (d.inline_skipped_qualname, d.inline_skipped_name) == ("set_grad_enabled.__enter__", "__enter__")
    assert read_detail(None) == read_detail("")  # nothing said, nothing read; never raises


def test_the_settings_torchs_hints_name():
    hints = ["Enable tracing of data-dependent output operators with `torch._dynamo.config.capture_scalar_outputs = True`",
             "Change `torch._dynamo.config.trace_autograd_ops` to `True`.", "Remove the call."]
    assert hinted_settings(hints) == ["torch._dynamo.config.capture_scalar_outputs = True",
                                      "torch._dynamo.config.trace_autograd_ops = True"]


def test_where_a_break_stopped_is_one_property():
    gb = GraphBreak("r", frame=UserFrame("/u/cell.py", 2, "cell", "y = lib.f(x)"),
                    break_frame=UserFrame("/site-packages/lib/x.py", 9),
                    user_stack=[UserFrame("/u/cell.py", 2, "cell", "y = lib.f(x)"),
                                UserFrame("/site-packages/lib/x.py", 9, "f", "if x.sum() > 0:")])
    assert gb.stop == UserFrame("/site-packages/lib/x.py", 9, "f", "if x.sum() > 0:")
    assert gb.reached_from == gb.frame
    own = GraphBreak("r", frame=UserFrame("/u/cell.py", 2, "cell", "if x.sum() > 0:"))
    assert own.stop == own.frame and own.reached_from is None


def test_notebook_cells_are_decided_in_owners():
    assert is_notebook_cell("/tmp/ipykernel_12/3456.py") and is_notebook_cell("<ipython-input-3-0a1b2c>")
    assert is_notebook_cell("/home/me/x.py", {"/home/me/x.py": "In [2]"})
    assert not is_notebook_cell("/home/me/ipykernel_tools.py") and not is_notebook_cell("")


def test_a_compiled_report_carries_the_records_and_they_load_from_json():
    torch._dynamo.reset()

    def f(x):
        x = x + 1
        torch._dynamo.graph_break()
        return x * 2

    with ipycompile.capture() as cap:
        torch.compile(f, backend="eager")(torch.ones(3))
    torch._dynamo.reset()
    r = cap.report
    assert any(c.resumes == "f" and c.user_function == "f" for c in r.compiles)
    g = next(g for g in r.graphs if g.stage == "dynamo")
    assert g.nodes and all(g.place_of(n).function == "f" for n in g.nodes)
    assert r.graph_breaks[0].stop.function == "f" and r.graph_breaks[0].stop.source_line == "torch._dynamo.graph_break()"
    back = CompileReport.from_json(r.to_json())
    assert back.graphs == r.graphs and back.compiles == r.compiles and back.graph_breaks == r.graph_breaks
    old = r.to_dict()  # a report saved before these records existed still loads
    for gd in old["graphs"]:
        for k in ("nodes", "places", "layer_inputs"):
            gd.pop(k, None)
    for b in old["graph_breaks"]:
        b.pop("said", None), b.pop("hinted_settings", None)
    assert CompileReport.from_dict(old).graphs[0].nodes == []
