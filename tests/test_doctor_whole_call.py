"""Classes of wrong answer found on the PyTorch-tests part of the doctor's corpus (issue 27), each ruled
out as a class on code other than the corpus case (real compiles, backend "eager"), the fix applied where
one is offered:

* **torch names only the first failed guard.** ``get_guard_fail_reason_helper`` reports the first failed
  check of a guard set, so a call that changes a number *and* sizes is named by the number alone; a fix
  for that one change leaves the recompile (``k = torch.tensor(k)`` with ``x`` resized too). The fix covers
  every change the guards of both compiles show, or its code is withheld.
* **several sizes at 0 or 1 together.** One ``mark_unbacked`` leaves the other sizes specialised; one on each
  works or breaks depending on how the code reads the sizes, which no record shows: words, no code.
* **a rewrite that deletes the work.** ``torch._dynamo.disable()`` inside the compiled code gets the
  decorator's use, not "move it out"; a call that is all the compiled code does is never moved out.
* **a value carried across a graph break** (``___stack0``, a variable the function closes over) is named as
  the user's code names it, or worded without a name: never an empty name.

And a kind that had no answer: ``torch._dynamo.graph_break()`` passed as an argument (GB0025) becomes ``None``,
the value it returns, and the graph goes on with the same outputs.
"""

from __future__ import annotations

import os

import torch

import ipycompile


def captured(*calls):
    torch._dynamo.reset()
    with ipycompile.capture() as cap:
        outs = [call() for call in calls]
    torch._dynamo.reset()
    return cap.report, outs


def same(a, b) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y)


def texts(report) -> list[str]:
    out = []
    for x in [*report.recompiles, *report.graph_breaks]:
        out.append(getattr(x, "explanation", "") or "")
        if x.suggestion is not None:
            out += [x.suggestion.title, x.suggestion.explanation, x.suggestion.code]
    return out


# -- torch names only the first failed guard ----------------------------------------------------------------
# torch 2.13 checks (and so names) the guards in an order of its own: in `shift_scale`, `k`'s value before the
# sizes of `x` and `y`; in `scale_shift`, the size of `x` before `alpha`'s value (each asserted below)
def shift_scale(x, y, k):
    x = x * 2
    y = y - 1
    return x * y * k


def scale_shift(x, y, alpha):
    return (x + y) * alpha


def test_a_number_fix_also_marks_the_sizes_the_same_call_changed():
    small = (torch.randn(4), torch.randn(4), 2)
    large = (torch.randn(7), torch.randn(7), 3)
    f = torch.compile(shift_scale, backend="eager")
    r, before = captured(lambda: f(*small), lambda: f(*large))
    (rc,) = r.recompiles
    assert rc.changes[0].kind == "value" and rc.changes[0].subject == "k"  # the only guard torch's reason names
    assert "The same call changed dim 0 of `x`" in rc.explanation and "dim 0 of `y`" in rc.explanation
    s = rc.suggestion
    assert s.kind == "tensor_value"
    code = [ln for ln in s.code.splitlines() if not ln.startswith("#")]
    assert code[0].startswith("k = torch.tensor(k)")
    assert code[1:] == ["torch._dynamo.mark_dynamic(x, 0)  # before the first call",
                        "torch._dynamo.mark_dynamic(y, 0)  # before the first call"]

    # the number alone in a tensor (what the doctor said before): the sizes still recompile
    f = torch.compile(shift_scale, backend="eager")
    alone, _ = captured(*(lambda c=c: f(c[0], c[1], torch.tensor(c[2])) for c in (small, large)))
    assert len(alone.recompiles) == 1

    # the whole fix, as written: no recompile, the same outputs
    def fixed_call(x, y, k):
        k = torch.tensor(k)
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(y, 0)
        return f(x, y, k)

    f = torch.compile(shift_scale, backend="eager")
    fixed, after = captured(*(lambda c=c: fixed_call(c[0].clone(), c[1].clone(), c[2]) for c in (small, large)))
    assert not fixed.recompiles and fixed.graph_break_count == 0
    same(before, after)


def test_a_size_fix_is_withheld_where_a_number_changed_too():
    """torch's reason names the size of `x`; `alpha` went 2 -> 3 in the same call: the marks alone leave the
    recompile (shown), so the answer names both changes and gives no code."""
    calls = [(torch.randn(4), torch.randn(4), 2), (torch.randn(7), torch.randn(7), 3)]
    f = torch.compile(scale_shift, backend="eager")
    r, _ = captured(*(lambda c=c: f(*c) for c in calls))
    (rc,) = r.recompiles
    assert rc.changes[0].kind == "size" and "`alpha` (2, then another value)" in rc.explanation
    s = rc.suggestion
    assert s.kind == "mark_dynamic" and s.code == "" and "which this fix does not reach" in s.explanation

    marked = [(a.clone(), b.clone(), w) for a, b, w in calls]
    for x, y, _ in marked:
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(y, 0)
    f = torch.compile(scale_shift, backend="eager")
    after, _ = captured(*(lambda c=c: f(*c) for c in marked))
    assert len(after.recompiles) == 1


def test_a_number_fix_is_withheld_where_another_size_went_to_1():
    """The other sizes go 4 -> 1: no mark makes them dynamic (0 and 1 are specialised), so no code."""
    f = torch.compile(shift_scale, backend="eager")
    r, _ = captured(lambda: f(torch.randn(4), torch.randn(4), 2), lambda: f(torch.randn(1), torch.randn(1), 3))
    (rc,) = r.recompiles
    s = rc.suggestion
    assert rc.changes[0].kind == "value"
    assert s.code == "" and "which this fix does not reach" in s.explanation


# -- several sizes at 0 or 1 together ---------------------------------------------------------------------
def pooled(a, b):
    counts = torch.as_tensor([a.shape[0], b.shape[0]], device=a.device)
    return torch.cat([a, b]).sum(0) / counts.sum()


def pooled_calls():
    torch.manual_seed(0)
    return [(torch.randn(3, 4), torch.randn(3, 4)), (torch.randn(1, 4), torch.randn(1, 4))]


def test_sizes_that_go_to_1_together_get_no_single_mark_unbacked():
    f = torch.compile(pooled, backend="eager")
    r, _ = captured(*(lambda c=c: f(*c) for c in pooled_calls()))
    (rc,) = r.recompiles
    s = rc.suggestion
    assert s.kind == "mark_unbacked" and s.code == ""
    assert "mark_unbacked(a, 0)" in s.explanation and "mark_unbacked(b, 0)" in s.explanation
    assert "compiled once" in s.title

    # what the doctor offered before, one mark: the other size still recompiles
    calls = pooled_calls()
    torch._dynamo.decorators.mark_unbacked(calls[0][0], 0)
    f = torch.compile(pooled, backend="eager")
    one, _ = captured(*(lambda c=c: f(*c) for c in calls))
    assert len(one.recompiles) == 1
    # a mark on each: here the shapes turned into a tensor break the graph instead (why no code is given)
    calls = pooled_calls()
    for t in calls[0]:
        torch._dynamo.decorators.mark_unbacked(t, 0)
    f = torch.compile(pooled, backend="eager")
    each, _ = captured(*(lambda c=c: f(*c) for c in calls))
    assert each.graph_break_count >= 1


# -- a rewrite that deletes the work ------------------------------------------------------------------------
def disables_inside(x):
    y = x.sin()
    torch.compiler.disable()
    return y.cos()


def only_a_call():
    os.getpid()


def test_the_disable_decorator_called_inside_is_answered_with_its_use_not_moved_out():
    f = torch.compile(disables_inside, backend="eager")
    r, outs = captured(lambda: f(torch.ones(3)))
    torch.testing.assert_close(outs[0], torch.ones(3).sin().cos())
    (b,) = r.graph_breaks
    s = b.suggestion
    assert s.kind == "compiler_disable" and s.code == "" and s.first_line is None
    assert "disables nothing" in s.explanation and "@torch.compiler.disable" in s.explanation


def test_a_call_that_is_all_the_compiled_code_does_is_not_moved_out():
    f = torch.compile(only_a_call, backend="eager")
    r, _ = captured(f)
    assert r.graph_breaks
    for b in r.graph_breaks:
        assert b.suggestion.kind != "move_out" and "(moved" not in b.suggestion.code


# -- a value carried across a graph break -----------------------------------------------------------------
def _breaks(x):
    print("", end="")  # a graph break inside the call
    return x + 1


def stack_value(x):
    # `torch.cat([x, x])` is on the stack when `_breaks` breaks the graph: torch carries it as `___stack0`
    return torch.cat([x, x]) * _breaks(torch.cat([x, x]))


def test_a_stack_value_carried_across_a_break_is_worded_without_an_empty_name():
    f = torch.compile(stack_value, backend="eager")
    r, _ = captured(*(lambda n=n: f(torch.randn(n)) for n in (3, 5, 7)))
    carried = [rc for rc in r.recompiles if any(g.origin == "carried" for g in rc.guards)]
    assert carried
    for t in texts(r):
        assert "``" not in t and "___stack" not in t and "of ` " not in t, t
    s = carried[0].suggestion
    assert s.kind == "automatic_dynamic" and "a value torch carries across the graph break" in s.explanation


def test_a_closed_over_value_carried_across_a_break_keeps_the_users_name():
    holder = {"t": torch.randn(2, 3)}

    def f(x):
        x = x * 2
        print("", end="")  # the graph break
        return holder["t"].cos() + x.sum()

    cf = torch.compile(f, backend="eager")

    def call(n):
        holder["t"] = torch.randn(n, 3)
        return cf(torch.randn(3))

    r, _ = captured(*(lambda n=n: call(n) for n in (2, 4)))
    (rc,) = r.recompiles
    assert "`holder['t']`, a value torch carries across the graph break" in rc.explanation
    assert "`holder['t']`" in rc.suggestion.explanation and "``" not in rc.suggestion.explanation


# -- an explicit graph break used as a value (GB0025) ---------------------------------------------------------
GRAPH_BREAK_ARGUMENT = """
def scaled(t, marker):
    return t * 3
y = scaled(x + 1, torch._dynamo.graph_break()) - 2
y
"""


def test_a_graph_break_passed_as_an_argument_becomes_none_and_the_graph_goes_on():
    import textwrap

    from ipycompile.analysis.source import apply_suggestion

    def run(src):
        ipycompile.reset()
        try:
            r = ipycompile.run_cell(textwrap.dedent(src), {"torch": torch, "x": torch.arange(4.0)}, backend="eager",
                                    runs=1, warmup=0, record=False)
            return r.value, r.report
        finally:
            ipycompile.reset()

    before, report = run(GRAPH_BREAK_ARGUMENT)
    (b,) = report.graph_breaks
    s = b.suggestion
    assert s.kind == "remove_graph_break" and s.code == "y = scaled(x + 1, None) - 2"
    fixed = apply_suggestion(GRAPH_BREAK_ARGUMENT, s)
    after, again = run(fixed)
    assert again.graph_break_count == 0 and not again.failures
    torch.testing.assert_close(after, before)
