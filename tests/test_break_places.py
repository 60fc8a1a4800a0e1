"""Where a break really happens: where Dynamo stopped (``break_frame``, often in a
library) and the user's own line that led there (``frame``); the whole reason behind
torch's preambles; sites keyed on where Dynamo stopped; paths a user recognises;
frames torch ran without compiling counted as torch and tlparse count them.

Recorded payloads (torch 2.13, CPU) are inlined below, cut after the user traceback
(the torch-internal traceback that follows is never parsed for places)."""

from __future__ import annotations

import contextlib
import os

import torch

import ipycompile
from ipycompile import build_report
from ipycompile.analysis import diagnose
from ipycompile.capture.parse.graph_breaks import parse_graph_break
from ipycompile.report.owners import display_path
from ipycompile.views.viewmodel import view_model
from tracefile import gpu_records

SITE = "/opt/venv/lib/python3.11/site-packages"

# A tiny GPT-2 of a popular model library computing its loss, run by ipycompile.run_cell:
# the library logs from its loss function; Dynamo stops there, four frames below the cell.
LIBRARY_LOGGING = f"""Graph break in user code at {SITE}/transformers/modeling_utils.py:4769
Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):

logging.Logger method not supported for non-export cases
  Explanation: logging.Logger methods are not supported for non-export cases.
  Hint: Add the logging method to `torch._dynamo.config.ignore_logging_functions`.

  Developer debug context: method: <Logger transformers.modeling_utils (WARNING)>.warning_once, args: [ConstantVariable(str: '`loss_type=None` was set in the config but it is unrecognized. Using the default loss: `ForCausalLMLoss`.')], kwargs: {{}}

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0291.html

User code traceback:
  File "/home/me/train.py", line 9, in <module>
    run = ipycompile.run_cell(src, ns)
  File "/home/me/ipycompile/run/runner.py", line 285, in measure
    value = compiled()
            ^^^^^^^^^^
  File "/tmp/ipykernel_77/2131.py", line 2, in cell
    out = model(ids, labels=ids).loss
          ^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "{SITE}/transformers/utils/generic.py", line 943, in wrapper
    output = func(self, *args, **kwargs)
             ^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "{SITE}/transformers/models/gpt2/modeling_gpt2.py", line 700, in forward
    loss = self.loss_function(
           ^^^^^^^^^^^^^^^^^^^
  File "{SITE}/transformers/modeling_utils.py", line 4769, in loss_function
    logger.warning_once(

Traceback (most recent call last):
  File "{SITE}/torch/_dynamo/symbolic_convert.py", line 1076, in wrapper
    return inner_fn(self, inst)
"""

# capture_dynamic_output_shape_ops=True and a loop over x.nonzero() in a helper: torch logs
# the one break twice, the second time behind its "cannot resume" preamble.
_GUARD = """Consider annotating your code using torch._check*(). Could not extract specialized integer from data-dependent expression u0 (unhinted: u0).  (Size-like symbols: u0)


Caused by: for e in sel.nonzero():  # me/moe.py:10 in route (_dynamo/variables/tensor.py:2606 in evaluate_expr)
For more information, run with TORCH_LOGS="dynamic"
For extended logs when we create symbols, also add TORCHDYNAMO_EXTENDED_DEBUG_CREATE_SYMBOL="u0"
If you suspect the guard was triggered from C++, add TORCHDYNAMO_EXTENDED_DEBUG_CPP=1
For more debugging help, see https://docs.google.com/document/d/1HSuTTVvYH1pTew89Rtpeu84Ht3nQEFTYhAX3Ypa_xJs/edit?usp=sharing

User Stack (most recent call last):
  (snipped, see stack below for prefix)
  File "/home/me/moe.py", line 10, in route
    for e in sel.nonzero():

For C++ stack trace, run with TORCHDYNAMO_EXTENDED_DEBUG_CPP=1
For more information about this error, see: https://pytorch.org/docs/main/generated/exportdb/index.html#constrain-as-size-example

User code traceback:
  File "/home/me/moe.py", line 25, in <module>
    torch.compile(m, backend="eager")(torch.randn(6, 4))
  File "{site}/torch/nn/modules/module.py", line 1778, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
  File "/home/me/moe.py", line 19, in forward
    h = route(h, s.w)
        ^^^^^^^^^^^^^
  File "/home/me/moe.py", line 10, in route
    for e in sel.nonzero():

""".replace("{site}", SITE)
NONZERO_LOOP = ("Graph break in user code at /home/me/moe.py:10\nGraph Break Reason: Encountered graph break when "
                "attempting to trace CALL: a function call, e.g. f(x, y):\n\n" + _GUARD)
NONZERO_LOOP_CANNOT_RESUME = (
    "Graph break in user code at /home/me/moe.py:10\nGraph Break Reason: Encountered graph break that we cannot "
    "resume from. Compiling up to the previous resumable state, then skipping the rest of the function. Graph "
    "break encountered:\n\n" + _GUARD)


def _records(*payloads: str, frame_ids=None) -> list:
    out = []
    for i, p in enumerate(payloads):
        fid = frame_ids[i] if frame_ids else 0
        out.append(({"artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"}, "frame_id": fid,
                     "frame_compile_id": 0, "attempt": 0}, p))
    return out


def test_a_library_break_has_both_places():
    gb = parse_graph_break(LIBRARY_LOGGING)
    assert (gb.break_frame.filename, gb.break_frame.lineno, gb.break_frame.function) == (
        f"{SITE}/transformers/modeling_utils.py", 4769, "loss_function")
    assert gb.break_frame.source_line == "logger.warning_once("
    # the user's own line is the cell's, not the library's and not ipycompile's runner
    assert (gb.frame.filename, gb.frame.lineno, gb.frame.function) == ("/tmp/ipykernel_77/2131.py", 2, "cell")
    assert gb.frame.source_line == "out = model(ids, labels=ids).loss"
    assert gb.reason == "logging.Logger method not supported for non-export cases" and gb.gb_code == "GB0291"


def test_views_show_where_torch_stopped_and_the_users_line_with_the_path_between():
    r = diagnose(build_report(_records(LIBRARY_LOGGING, LIBRARY_LOGGING)))
    r.sources["/tmp/ipykernel_77/2131.py"] = "In [3]"
    (gb,) = r.graph_breaks
    assert gb.count == 2
    text = r.summary()
    assert "transformers/modeling_utils.py:4769 in loss_function: logging.Logger method" in text
    assert "reached from In [3], line 2: out = model(ids, labels=ids).loss" in text
    t = next(b for b in view_model(r).tab("graph_breaks").blocks() if hasattr(b, "rows"))
    row = t.rows[0]
    assert row[t.columns.index("where torch stopped")] == "transformers/modeling_utils.py:4769"
    assert row[t.columns.index("function")] == "loss_function"
    assert row[t.columns.index("reached from")] == "In [3], line 2"
    path = next(b for b in t.details[0] if getattr(b, "title", "").startswith("call path"))
    assert path.code.splitlines() == [
        "In [3], line 2 in cell: out = model(ids, labels=ids).loss",
        "transformers/utils/generic.py:943 in wrapper: output = func(self, *args, **kwargs)",
        "transformers/models/gpt2/modeling_gpt2.py:700 in forward: loss = self.loss_function(",
        "transformers/modeling_utils.py:4769 in loss_function: logger.warning_once(",
    ]


def test_sites_are_keyed_on_where_dynamo_stopped():
    # five data-dependent branches at five library lines, all reached from one cell line:
    # five rows, not one "(x5)" at the cell line
    lines = [1210, 1214, 1230, 2001, 2003]
    payloads = [LIBRARY_LOGGING.replace("4769", str(n)) for n in lines]
    r = build_report(_records(*payloads))
    assert len(r.graph_breaks) == 5
    assert sorted(b.break_frame.lineno for b in r.graph_breaks) == lines
    assert {(b.frame.filename, b.frame.lineno) for b in r.graph_breaks} == {("/tmp/ipykernel_77/2131.py", 2)}


def test_the_whole_reason_behind_torchs_preamble():
    plain, behind = parse_graph_break(NONZERO_LOOP), parse_graph_break(NONZERO_LOOP_CANNOT_RESUME)
    for gb in (plain, behind):
        assert gb.reason.startswith("Consider annotating your code using torch._check*()"), gb.reason
        assert "Caused by: for e in sel.nonzero():" in gb.explanation
        assert "TORCH_LOGS" not in gb.explanation and "User Stack" not in gb.explanation  # torch's pointers dropped
        assert (gb.break_frame.filename, gb.break_frame.lineno, gb.break_frame.function) == ("/home/me/moe.py", 10, "route")
    assert plain.site == behind.site
    # the one break logged twice (for the frame and again for the helper's own frame) is one site
    (gb,) = build_report(_records(NONZERO_LOOP, NONZERO_LOOP_CANNOT_RESUME, frame_ids=[0, 1])).graph_breaks
    assert gb.count == 2 and [str(c) for c in gb.compile_ids] == ["0/0", "1/0"]


def test_paths_a_user_recognises():
    assert display_path(f"{SITE}/transformers/modeling_utils.py") == "transformers/modeling_utils.py"
    assert display_path("/usr/lib/python3.11/logging/__init__.py") == "logging/__init__.py"
    assert display_path("C:\\py\\Lib\\site-packages\\torch\\nn\\functional.py") == "torch/nn/functional.py"
    assert display_path("/home/me/train.py") == "train.py"
    assert display_path("<ipycompile-cell-3>") == "<ipycompile-cell-3>"
    r = build_report([])
    assert r.where(f"{SITE}/transformers/utils/generic.py", 1446) == "transformers/utils/generic.py:1446"


def _with_open(x):
    with open(os.devnull) as fh:  # noqa: F841
        y = x + 1
    return y * 2


def test_frames_torch_ran_without_compiling_are_not_failures():
    torch._dynamo.reset()
    with ipycompile.capture() as cap:
        out = torch.compile(_with_open, backend="eager")(torch.ones(3))
    torch.testing.assert_close(out, torch.full((3,), 4.0))
    r = cap.report
    eager = r.ran_without_compiling
    assert eager and all(c.fail_type for c in eager)  # counted as torch and tlparse count them (fail_type set)
    assert not r.failures  # the code ran fine: no failure
    text = r.summary()  # among the first screen's numbers; no failure said
    assert f"ran without compiling: {len(eager)} frame" in text and "failure" not in text.lower()
    chip = view_model(r).chip("ran_without_compiling")
    assert chip is not None and chip.value == len(eager) and not chip.warn
    assert view_model(r).chip("failures") is None
    torch._dynamo.reset()


def test_failure_names_the_function_that_holds_its_line():
    from torch._higher_order_ops.scan import scan

    def step(h, xt):
        h = torch.tanh(h + xt)
        return h, h

    def f(h0, xs):
        return scan(step, h0, xs)

    torch._dynamo.reset()
    with contextlib.suppress(Exception), ipycompile.capture() as cap:
        torch.compile(f, backend="eager")(torch.zeros(3), torch.randn(4, 3))
    (failure,) = cap.report.failures
    assert failure.frame.function == "f" and failure.frame.source_line == "return scan(step, h0, xs)"
    torch._dynamo.reset()


def test_gpu_traces_of_torch_2_11_still_parse_with_both_places():
    r = diagnose(build_report(gpu_records("quickstart")))
    (gb,) = r.graph_breaks
    assert (gb.break_frame.function, gb.break_frame.lineno) == ("forward", 17) and gb.frame == gb.break_frame
    assert gb.break_frame.source_line.startswith("if h.mean() > 0:")
    r = diagnose(build_report(gpu_records("reduce_overhead")))
    (gb,) = r.graph_breaks
    assert (gb.break_frame.function, gb.break_frame.lineno) == ("cpu_scalar", 46)


def test_gpu_traces_of_torch_2_11_get_sensible_suggestions_from_the_recorded_lines():
    # the trace keeps only each frame's line (no source was captured with it)
    (gb,) = diagnose(build_report(gpu_records("quickstart"))).graph_breaks
    s = gb.suggestion
    assert s.kind == "torch.cond" and s.confidence == "low" and s.first_line is None  # a skeleton, not a rewrite
    assert "torch.cond(h.mean() > 0, true_fn, false_fn" in s.code
    (gb,) = diagnose(build_report(gpu_records("reduce_overhead"))).graph_breaks
    s = gb.suggestion
    # checked on the H100 with torch 2.11.0 (default and reduce-overhead modes): no break, same output
    assert s.kind == "keep_tensor" and s.code == "return x * s + torch.ones(1).cuda()"
    assert (s.first_line, s.last_line) == (46, 46)


def test_a_long_file_keeps_the_function_around_the_break(tmp_path, monkeypatch):
    filler = "\n".join(f"CONSTANT_{i} = {i}" for i in range(450))
    body = "def clamp(x):\n    y = x * 2\n    if y.max() > 1:\n        y = y / y.max()\n    return y + 1\n"
    text = "import torch\n" + filler + "\n\n\n" + body
    (tmp_path / "longmod.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    import longmod

    torch._dynamo.reset()
    with ipycompile.capture() as cap:
        torch.compile(longmod.clamp, backend="eager")(torch.linspace(0, 2, 8))
    torch._dynamo.reset()
    r = cap.report
    (span,) = [s for s in r.source_context if s.filename == longmod.__file__]
    first = text.splitlines().index("def clamp(x):") + 1
    assert (span.first_line, span.last_line) == (first, first + 4) and span.lines[0] == "def clamp(x):"
    assert span.module == "longmod"
    s = r.graph_breaks[0].suggestion
    assert s.kind == "torch.where" and s.code == "y = torch.where(y.max() > 1, y / y.max(), y)"
