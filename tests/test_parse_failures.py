"""Capture reads a failed compile's text into the fields a Failure carries (its kind, GB code,
explanation, hints, developer context, user frames), as it does for a graph break; the doctor
reads those fields, not torch's text. A recorded torch 2.13 message, and a recorded log."""

from __future__ import annotations

import recorded
from ipycompile.capture.parse.failures import parse_failure
from ipycompile.capture.parse.graph_breaks import debug_context
from ipycompile.report.model import CompileId, UserFrame

MESSAGE = (
    "RuntimeError when making fake tensor call\n"
    "  Explanation: Dynamo failed to run FX node with fake tensors: call_function rx.nofake(*(FakeTensor(..., "
    "size=(3,)), 2), **{}): got RuntimeError('There was no fake impl registered for <CustomOpDef(rx::nofake)>.')\n"
    "  Hint: Your code may result in an error when running in eager.\n\n"
    "  Developer debug context: \n\n"
    " For more details about this graph break, please visit: "
    "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb4315.html"
)
TRACEBACK = MESSAGE + (
    "\n\nfrom user code:\n"
    '   File "/home/me/cell.py", line 6, in fn\n'
    "    return torch.ops.rx.nofake(x, 2) + 1\n"
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n\n"
    "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace\n"
)


def test_a_failure_is_read_into_its_fields():
    f = parse_failure(CompileId(0, 0), "TorchRuntimeError", MESSAGE, UserFrame("/home/me/cell.py", 6), TRACEBACK)
    assert (f.type, f.message, f.traceback) == ("TorchRuntimeError", MESSAGE, TRACEBACK)  # torch's text kept
    assert f.gb_type == "RuntimeError when making fake tensor call" and f.gb_code == "GB4315"
    assert f.explanation.startswith("Dynamo failed to run FX node") and f.hints == ["Your code may result in an error when running in eager."]
    assert f.context == ""
    assert [(u.filename, u.lineno, u.function, u.source_line) for u in f.user_stack] == [
        ("/home/me/cell.py", 6, "fn", "return torch.ops.rx.nofake(x, 2) + 1")]


def test_bad_text_gives_a_failure_with_empty_fields_never_an_error():
    f = parse_failure(None, "X", None, UserFrame())  # type: ignore[arg-type]
    assert f.gb_code == "" and f.user_stack == [] and f.type == "X"
    assert debug_context("Developer debug context: call_method TensorVariable() item () {}\n\nmore") == \
        "call_method TensorVariable() item () {}"


def test_a_constraint_violation_is_placed_at_the_line_its_user_stack_names():
    """A ConstraintViolationError raised while torch builds guards carries its frames after
    "User stack:", not "from user code:": the failure is at the `if` that specialised the size
    (was: the function's `def` line, for want of a frame). A real compile's recorded log."""
    name = "failure-constraint-violation"
    line = 1 + next(i for i, ln in enumerate(recorded.recipe(name).source.splitlines()) if "# the line" in ln)
    (f,) = recorded.report(name).failures
    assert f.type == "ConstraintViolationError"
    assert (f.frame.filename, f.frame.lineno, f.frame.function) == (recorded.filename(name), line, "my_dyn_fn")
    assert [(u.lineno, u.function) for u in f.user_stack] == [(line, "my_dyn_fn")]
