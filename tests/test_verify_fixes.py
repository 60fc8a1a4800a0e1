"""``--verify-fixes``: each suggested fix tried on the user's own cell in a scratch compile
(:mod:`ipycompile.run.verify`), on CPU with real compiles; the magic in a real IPython shell.

Each test that verifies also proves that nothing of the user's changed: the namespace (the
same objects, the same values), the random state (torch, Python, NumPy), torch's config, the
state of modules, optimizers and schedulers bit for bit, and the user's compiled code (a
further call compiles nothing, and the compiled versions torch keeps for it are the same).
"""

from __future__ import annotations

import random
import types

import numpy as np
import pytest
import torch

import ipycompile
from ipycompile.report import CompileReport, Fix, FixStatus, Suggestion
from ipycompile.report.fix import rewrite
from ipycompile.run import verify
from ipycompile.run.cell import make_cell_function, placeholders
from ipycompile.run.runner import run_cell
from ipycompile.run.settings import make_settings
from ipycompile.views.tabs import suggestion_blocks
from ipycompile.views.plain_text import render_blocks
from torch._dynamo import eval_frame


def _users_entries(code) -> list:
    """The compiled versions of ``code`` the user's calls look up (torch's default bucket, where it has buckets)."""
    if hasattr(eval_frame, "_get_cache_entries_for_region"):
        return list(eval_frame._get_cache_entries_for_region(code, -1))
    return list(eval_frame._debug_get_cache_entry_list(code))

EAGER = make_settings(backend="eager")


# -- the user's side: a cell compiled and called as the magic does, and what must stay as it was ----------
class UserCell:
    """A cell compiled like ``%%compile`` compiles it, called ``calls`` times under a capture."""

    counter = 0

    def __init__(self, body: str, ns: dict, calls: int = 1) -> None:
        UserCell.counter += 1
        self.body, self.ns = body, ns
        self.cf = make_cell_function(body, ns, filename=f"<user-cell-{UserCell.counter}>", header=None)
        self.compiled = torch.compile(self.cf.fn, backend="eager")
        with ipycompile.capture() as cap, placeholders(self.cf):  # as the runner calls it
            for _ in range(calls):
                self.compiled()
        self.report = cap.report

    def verify(self, **kwargs) -> CompileReport:
        return verify.verify_fixes(self.report, self.cf, self.body, None, self.ns, EAGER, **kwargs)

    def further_call_compiles(self) -> int:
        with ipycompile.capture() as cap:
            self.compiled()
        return len(cap.report.compiles)


def _bits(value):
    """A bit-for-bit image of a value: tensors cloned, state dicts walked."""
    if isinstance(value, torch.Tensor):
        grad = value.grad if value.is_leaf else None
        return ("tensor", value.detach().clone(), None if grad is None else grad.clone())
    if isinstance(value, torch.nn.Module):
        return ("module", _bits(value.state_dict()), _bits({k: p.grad for k, p in value.named_parameters()}))
    if isinstance(value, (torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler)):
        return ("state", _bits(value.state_dict()))
    if isinstance(value, dict):
        return {k: _bits(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_bits(v) for v in value]
    return value


def _same_bits(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype \
            and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_bits(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same_bits(x, y) for x, y in zip(a, b))
    return a == b


class UserState:
    """Everything of the user's that verification must leave as it was."""

    def __init__(self, ns: dict, code_objects=()) -> None:
        self.ns = ns
        self.ids = {k: id(v) for k, v in ns.items()}
        self.values = {k: _bits(v) for k, v in ns.items() if k != "__builtins__"}
        self.torch_rng = torch.get_rng_state()
        self.python_rng = random.getstate()
        self.numpy_rng = np.random.get_state()
        self.dynamo = torch._dynamo.config.get_config_copy()
        self.inductor = torch._inductor.config.get_config_copy()
        self.codes = list(code_objects)
        self.entries = [_users_entries(c) for c in self.codes]

    def assert_unchanged(self) -> None:
        assert {k: id(v) for k, v in self.ns.items()} == self.ids
        for k, v in self.values.items():
            assert _same_bits(_bits(self.ns[k]), v), k
        assert torch.equal(torch.get_rng_state(), self.torch_rng)
        assert random.getstate() == self.python_rng
        now = np.random.get_state()
        assert now[0] == self.numpy_rng[0] and np.array_equal(now[1], self.numpy_rng[1]) and now[2:] == self.numpy_rng[2:]
        assert torch._dynamo.config.get_config_copy() == self.dynamo
        assert torch._inductor.config.get_config_copy() == self.inductor
        for code, entries in zip(self.codes, self.entries):  # the same compiled versions, the same objects
            assert [id(e) for e in _users_entries(code)] == [id(e) for e in entries], code.co_name


def _checks(report: CompileReport) -> list:
    return [x.suggestion.check for x in [*report.graph_breaks, *report.recompiles, *report.failures]
            if x.suggestion is not None and x.suggestion.check is not None]


def _alive(cls) -> "weakref.WeakSet":
    """The live instances of ``cls`` (after a collection), held weakly: a test compares the sets before and
    after, so that an instance another test left, freed meanwhile, is no copy made and kept."""
    import gc
    import weakref

    gc.collect()
    return weakref.WeakSet(o for o in gc.get_objects() if isinstance(o, cls))


def _draw_all() -> None:
    """Move every random generator, so that a state put back to the wrong place would show."""
    torch.rand(3)
    random.random()
    np.random.rand()


# -- fixes verified -----------------------------------------------------------------------------------
def test_a_setting_is_verified_and_nothing_of_the_users_changes():
    ns = {"torch": torch, "x": torch.tensor([0.0, 1.5, 0.0, -2.0, 3.0])}
    user = UserCell("idx = torch.nonzero(x)\nz = idx.float().sum() + torch.rand(1)\n", ns)
    (b,) = user.report.graph_breaks
    assert b.suggestion.kind == "capture_dynamic_output_shape_ops"
    _draw_all()
    state = UserState(ns, [user.cf.fn.__code__])
    report = user.verify()
    state.assert_unchanged()
    assert user.further_call_compiles() == 0  # the user's compiled cell still hits its own cache
    (check,) = _checks(report)
    assert check.status == FixStatus.VERIFIED, check
    assert check.text == "verified on your cell: the break is gone, outputs equal (max abs diff 0)"
    assert check.applied == ["torch._dynamo.config.capture_dynamic_output_shape_ops = True"]
    assert check.max_abs_diff == 0.0 and check.seconds > 0
    v = report.fix_verification
    assert v.fixes == v.tried == 1 and v.compiles == 2 and v.calls == 1 and v.spent_s > 0 and "BUT" not in v.isolation
    # the report is plain data: the check round-trips through JSON
    again = CompileReport.from_json(report.to_json())
    assert again.graph_breaks[0].suggestion.check == check and again.fix_verification == v
    assert user.report.graph_breaks[0].suggestion.check is None  # the report given is not edited


def test_a_rewrite_of_the_cells_own_lines_is_verified():
    ns = {"torch": torch, "x": torch.randn(6)}
    body = "y = x * 2\nif y.sum() > 0:\n    z = y + 1\nelse:\n    z = y - 1\nw = z.cos()\n"
    user = UserCell(body, ns)
    (b,) = user.report.graph_breaks
    assert b.suggestion.kind == "torch.where" and b.suggestion.first_line == 2
    state = UserState(ns, [user.cf.fn.__code__])
    report = user.verify()
    state.assert_unchanged()
    (check,) = _checks(report)
    assert check.status == FixStatus.VERIFIED and check.max_abs_diff == 0.0
    assert check.applied == ["lines 2-5 of the cell rewritten as suggested"]
    assert user.further_call_compiles() == 0


def test_a_fix_that_does_not_work_is_withdrawn_with_torchs_words():
    # capture_scalar_outputs lets `.item()` into the graph, but the `if` on it then breaks the graph
    # anyway (data-dependent branching): the break moved, it was not removed
    ns = {"torch": torch, "x": torch.randn(6)}
    user = UserCell("if x.sum().item() > 0:\n    z = x + 1\nelse:\n    z = x - 1\n", ns)
    (b,) = user.report.graph_breaks
    assert b.suggestion.code.startswith("torch._dynamo.config.capture_scalar_outputs = True")
    state = UserState(ns, [user.cf.fn.__code__])
    report = user.verify()
    state.assert_unchanged()
    (check,) = _checks(report)
    assert check.status == FixStatus.FAILED
    assert "a new break: GB0170 at cell line 1" in check.reason
    assert "Data-dependent branching" in check.torch_says and "GB0170" in check.torch_says
    assert check.text.startswith("withdrawn, tried on your cell:")
    # the views show it withdrawn, with torch's words, and without the code as a fix
    s = report.graph_breaks[0].suggestion
    blocks = suggestion_blocks(s)
    text = render_blocks(blocks)  # as the text view shows it
    assert "Withdrawn fix:" in text and "Data-dependent branching" in text and "capture_scalar_outputs = True" not in text
    assert blocks[0].text.startswith("Withdrawn fix:") and not any(getattr(x, "code", None) == s.code for x in blocks)
    assert any("Data-dependent branching" in getattr(x, "text", "") for x in blocks)


def test_a_fix_that_changes_what_the_cell_leaves_in_the_namespace_is_withdrawn():
    # `.tolist()` -> "keep it a tensor" removes the break, but `vals` is then a tensor, not a list
    ns = {"torch": torch, "x": torch.randn(5)}
    user = UserCell("vals = x.tolist()\nz = x * len(vals)\n", ns)
    report = user.verify()
    (check,) = _checks(report)
    assert check.status == FixStatus.FAILED
    assert check.reason.startswith("the break is gone, but the outputs differ") and "name vals" in check.reason


def test_a_statement_moved_out_of_the_compiled_code_still_runs_before_each_call():
    # `t0 = time.perf_counter()` moved out: the cell still leaves `t0`, a clock, which differs between two
    # uncompiled runs as well: not compared, and said so
    import time

    ns = {"torch": torch, "x": torch.randn(5), "time": time}
    user = UserCell("t0 = time.perf_counter()\ny = x * 2\nz = y + 1\n", ns)
    (b,) = user.report.graph_breaks
    assert b.suggestion.kind == "move_out"
    report = user.verify()
    (check,) = _checks(report)
    assert check.status == FixStatus.VERIFIED, check
    assert check.reason == ("the break is gone, outputs equal (max abs diff 0); not compared: `t0`, which differs "
                            "from one uncompiled run to the next")
    assert "`t0 = time.perf_counter()` run before each call" in check.applied[0]


def test_a_recompile_fixed_by_marking_an_input_dynamic():
    ns = {"torch": torch, "x": torch.randn(8)}
    body = "x = torch.cat([x, x[:1]])\nz = x.sin().sum()\n"
    user = UserCell(body, ns, calls=3)
    (rc,) = user.report.recompiles
    assert rc.suggestion.kind == "mark_dynamic" and "mark_dynamic(x, 0)" in rc.suggestion.code
    state = UserState(ns, [user.cf.fn.__code__])
    report = user.verify()
    state.assert_unchanged()
    assert not torch._dynamo.decorators.is_dynamic_dim(ns["x"], 0) if hasattr(torch._dynamo.decorators, "is_dynamic_dim") \
        else not getattr(ns["x"], "_dynamo_dynamic_indices", None)  # the user's x is not marked
    (check,) = _checks(report)
    assert check.status == FixStatus.VERIFIED, check
    assert check.reason.startswith("the recompile is gone") and check.applied == [
        "torch._dynamo.mark_dynamic(x, 0) on a copy of `x`"]
    assert report.fix_verification.calls == 2


def test_a_compile_option_a_fix_passes_is_applied_to_the_scratch_compile():
    """`torch.compile(..., dynamic=True)` (the doctor's fix where no name holds a tensor to mark) is read as a
    compile option (``read_fix_code``, the reading the corpus harness shares) and applied to the scratch compile."""
    import dataclasses

    ns = {"torch": torch, "x": torch.randn(8)}
    body = "x = torch.cat([x, x[:1]])\nz = x.sin().sum()\n"
    user = UserCell(body, ns, calls=3)
    (rc,) = user.report.recompiles
    record = Fix(compile_options={"dynamic": "True"})
    assert record.code == "torch.compile(..., dynamic=True)  # %%compile --dynamic"
    read = verify.read_fix_code(record)
    assert read.compile_kwargs == {"dynamic": True} and not read.why_not and not read.settings
    option = dataclasses.replace(rc.suggestion, code=record.code, fix=record)
    user.report = dataclasses.replace(user.report, recompiles=[dataclasses.replace(rc, suggestion=option)])
    state = UserState(ns, [user.cf.fn.__code__])
    report = user.verify()
    state.assert_unchanged()
    (check,) = _checks(report)
    assert check.status == FixStatus.VERIFIED, check
    assert check.reason.startswith("the recompile is gone") and check.applied == ["torch.compile(..., dynamic=True)"]
    assert "not applied" in verify.read_fix_code(None).why_not  # code with no record (words, a template)


def test_settings_are_verified_one_by_one_and_together():
    ns = {"torch": torch, "x": torch.rand(6)}
    body = "m = x.max().item()\nr = torch.arange(int(m * 10) + 20)\nidx = torch.nonzero(x > 0.5)\nw = idx.float().sum()\n"
    user = UserCell(body, ns)
    kinds = sorted(b.suggestion.kind for b in user.report.graph_breaks)
    assert kinds == ["capture_dynamic_output_shape_ops", "capture_scalar_outputs"]
    # the doctor gives the first break's setting as code, the other's is withheld until proven together
    assert [bool(b.suggestion.code) for b in user.report.graph_breaks] == [True, False]
    assert user.report.graph_breaks[1].suggestion.unproven_code.strip().endswith("= True")
    report = user.verify()
    assert all(b.suggestion.code and not b.suggestion.unproven_code for b in report.graph_breaks)  # now proven
    checks = _checks(report)
    assert [c.status for c in checks] == [FixStatus.VERIFIED, FixStatus.VERIFIED], checks
    (together,) = report.fix_verification.together
    assert sorted(together.together) == ["dynamo.capture_dynamic_output_shape_ops", "dynamo.capture_scalar_outputs"]
    assert together.status == FixStatus.VERIFIED and together.max_abs_diff == 0.0
    assert torch._dynamo.config.capture_scalar_outputs is False


def _pick(idx, n, x):  # a helper the cell calls: its branch compares the two data-dependent sizes
    if idx.shape[0] > n:
        return idx.float().sum()
    return x.sum()


def test_two_settings_that_each_work_alone_but_fail_together():
    # capture_scalar_outputs removes the `.item()` break, capture_dynamic_output_shape_ops the `nonzero`
    # one; with both, `idx.shape[0] > n` (in a helper) compares two data-dependent sizes and its `if` breaks
    ns = {"torch": torch, "pick": _pick, "x": torch.tensor([0.0, 2.0, 0.0, 1.0, 3.0])}
    body = "n = int(x.sum().item())\nidx = torch.nonzero(x)\nz = pick(idx, n, x)\n"
    user = UserCell(body, ns)
    state = UserState(ns, [user.cf.fn.__code__])
    report = user.verify()
    state.assert_unchanged()
    checks = _checks(report)
    assert [c.status for c in checks] == [FixStatus.VERIFIED, FixStatus.VERIFIED]
    (together,) = report.fix_verification.together
    assert together.status == FixStatus.FAILED
    assert together.reason.startswith("each works alone, together they fail:"), together.reason
    assert together.torch_says
    # beside each fix: it holds alone only
    assert "alone only: applied together with torch._dynamo.config.capture_dynamic_output_shape_ops = True it fails" \
        in checks[0].reason
    assert "alone only: applied together with torch._dynamo.config.capture_scalar_outputs = True it fails" \
        in checks[1].reason
    assert not report.graph_breaks[1].suggestion.code  # unproven together: still withheld, in words
    # the same branch in the cell itself: the doctor sees it and withholds capture_dynamic_output_shape_ops
    # (it would move the break there), so only the scalar setting is offered and verified
    inline = ("n = int(x.sum().item())\nidx = torch.nonzero(x)\nif idx.shape[0] > n:\n    z = idx.float().sum()\n"
              "else:\n    z = x.sum()\n")
    assert [c.status for c in _checks(UserCell(inline, dict(ns)).verify())] == [FixStatus.VERIFIED]


# -- state: a training step, and what cannot be copied ----------------------------------------------------
def test_a_training_step_with_an_optimizer_and_scheduler_is_left_exactly_as_it_was():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.2), torch.nn.Linear(8, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0)
    ns = {"torch": torch, "model": model, "opt": opt, "sched": sched, "x": torch.randn(16, 4)}
    body = ("out = model(x)\nloss = out.pow(2).mean()\nloss.backward()\nopt.step()\nopt.zero_grad()\n"
            "sched.step()\nactive = torch.nonzero(out > 0)\n")
    user = UserCell(body, ns, calls=4)  # a few steps: the optimizer has state; the code is warm
    assert user.further_call_compiles() == 0
    fixes = {b.suggestion.kind: b for b in user.report.graph_breaks if b.suggestion}
    assert "capture_dynamic_output_shape_ops" in fixes
    _draw_all()
    codes = [user.cf.fn.__code__, type(opt).step.__code__]
    state = UserState(ns, codes)
    linears = _alive(torch.nn.Linear)
    report = user.verify()
    state.assert_unchanged()  # parameters, gradients, AdamW's moments, the scheduler, the RNG, bit for bit
    assert user.further_call_compiles() == 0
    kept = [m for m in _alive(torch.nn.Linear) if m not in linears]
    assert not kept, kept  # the copies of the model were let go
    check = next(x.suggestion.check for x in report.graph_breaks
                 if x.suggestion and x.suggestion.kind == "capture_dynamic_output_shape_ops")
    # the fixed step and the unfixed step (eager) agree on the output and on the model, AdamW and
    # the scheduler after the step (dropout draws the same numbers in both), to float32's rounding
    assert check.status == FixStatus.VERIFIED and check.max_abs_diff < 1e-6, check


def test_state_that_cannot_be_copied_is_not_verified_and_not_touched():
    def numbers():
        yield from range(100)

    gen = numbers()
    next(gen)
    ns = {"torch": torch, "x": torch.randn(5), "gen": gen}
    user = UserCell("idx = torch.nonzero(x)\nk = next(gen)\n", ns)
    report = user.verify()
    assert report.fix_verification.not_verified.startswith("the cell's state cannot be copied: `gen` (generator)")
    assert all(c.status == FixStatus.NOT_VERIFIED for c in _checks(report)) and _checks(report)
    assert next(gen) == 2  # the user's generator was not advanced


def test_a_cell_that_changes_a_modules_attribute_is_not_verified():
    cfg = types.ModuleType("cfg")
    cfg.scale = 1
    ns = {"torch": torch, "x": torch.randn(5), "cfg": cfg}
    user = UserCell("idx = torch.nonzero(x)\ncfg.scale = cfg.scale + 1\n", ns)
    before = cfg.scale
    report = user.verify()
    assert "`cfg.scale`" in report.fix_verification.not_verified
    assert report.fix_verification.compiles == 0 and cfg.scale == before


def test_the_time_budget_bounds_it_and_is_reported():
    ns = {"torch": torch, "x": torch.randn(5)}
    user = UserCell("idx = torch.nonzero(x)\nz = idx.sum()\n", ns)
    report = user.verify(budget_s=1e-6)
    (check,) = _checks(report)
    assert check.status == FixStatus.NOT_VERIFIED and "time budget (1e-06 s) was spent" in check.reason
    v = report.fix_verification
    assert v.budget_s == 1e-6 and v.tried == 0 and v.fixes == 1 and "of a 1e-06 s budget" in v.text


# -- what is never "verified" ----------------------------------------------------------------------------------
def test_a_rewrite_outside_the_cell_is_not_verified(tmp_path):
    import importlib.util

    path = tmp_path / "helpers_mod.py"
    path.write_text("import torch\n\ndef scaled(x):\n    if x.sum() > 0:\n        return x * 2\n    return x * 3\n")
    spec = importlib.util.spec_from_file_location("helpers_mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ns = {"torch": torch, "x": torch.randn(5), "scaled": mod.scaled}
    user = UserCell("y = scaled(x)\n", ns)
    b = next(b for b in user.report.graph_breaks if b.suggestion and b.suggestion.first_line is not None)
    assert b.suggestion.filename == str(path)
    report = user.verify()
    check = next(x.suggestion.check for x in report.graph_breaks if x.suggestion and x.suggestion.check)
    assert check.status == FixStatus.NOT_VERIFIED and "outside this cell" in check.reason


def test_a_rewrite_of_library_code_is_never_verified():
    # the doctor's rewrite of a line of a library (here: a file of torch's) would not be the user's to make
    ns = {"torch": torch, "x": torch.randn(5)}
    user = UserCell("idx = torch.nonzero(x)\n", ns)
    b = user.report.graph_breaks[0]
    library = torch.nn.functional.__file__
    fake = Suggestion.of("rewrite a library line", "", rewrite(library, 10, 10, "y = x"), kind="keep_tensor")
    import dataclasses

    report = dataclasses.replace(user.report, graph_breaks=[dataclasses.replace(b, suggestion=fake)])
    plans = verify.plan_fixes(report, user.cf, user.body, ns)
    assert len(plans) == 1 and "library code you do not own" in plans[0].why_not


def test_frames_of_their_own_on_a_torch_that_cannot_isolate(monkeypatch):
    # on a torch without torch.compile(isolate_recompiles=...) (2.11), a cell whose report shows torch
    # compiling other frames (the optimizer's step) is not verified: a scratch compile would add to them
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ns = {"torch": torch, "model": model, "opt": opt, "x": torch.randn(3, 4)}
    user = UserCell("model(x).sum().backward()\nopt.step()\nidx = torch.nonzero(x)\n", ns)
    monkeypatch.setattr(verify, "_isolates", lambda: False)
    state = UserState(ns, [user.cf.fn.__code__, type(opt).step.__code__])
    report = user.verify()
    state.assert_unchanged()
    assert "as frame(s) of their own" in report.fix_verification.not_verified
    assert report.fix_verification.compiles == 0


# -- the verifier's blind spots (issue #40): a break of the first call only, a fix that adds a break, a fix that ---
# -- drops an in-place change ------------------------------------------------------------------------------------
class LazyScale(torch.nn.Module):
    """A module that makes an attribute on its first call, and says so (a print: a break) that once."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.scale = None

    def forward(self, x):
        if self.scale is None:
            print("first forward: scale made")
            self.scale = torch.full((4,), 2.0)
        return self.lin(x) * self.scale


class Counted(torch.nn.Module):
    """A module that counts its calls in a tensor held as a plain attribute and in a buffer left out of its
    state_dict: neither is in ``state_dict()``."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.calls = torch.zeros(1)
        self.register_buffer("seen", torch.zeros(1), persistent=False)

    def forward(self, x):
        return self.lin(x)


def _run(body, ns, **kwargs):
    return run_cell(body, ns, backend="eager", runs=1, warmup=0, record=False, verify_fixes=True, **kwargs)


def test_a_break_of_the_first_call_only_is_verified_from_the_state_the_first_call_started_from():
    # the cell's own flag: only the first call prints; the calls after it (warm-up, timing, eager) do not break
    ns = {"torch": torch, "x": torch.randn(5), "ready": False}
    run = _run("if not ready:\n    print('warming up')\n    ready = True\nz = x * 2\n", ns)
    (b,) = run.report.graph_breaks
    assert b.suggestion.code == "torch._dynamo.config.reorderable_logging_functions.add(print)"
    check = b.suggestion.check
    assert check.status == FixStatus.VERIFIED, check
    assert check.reason == "the break is gone, outputs equal (max abs diff 0)"
    assert ns["ready"] is True and torch.equal(ns["z"], ns["x"] * 2)  # as the first call left them
    # a module's attribute made on its first call: the model is copied as it was before that call
    model = LazyScale()
    ns = {"torch": torch, "x": torch.randn(2, 4), "model": model}
    run = _run("y = model(x)\n", ns)
    (b,) = run.report.graph_breaks
    assert b.suggestion.check.status == FixStatus.VERIFIED, b.suggestion.check
    assert ns["model"] is model and torch.equal(model.scale, torch.full((4,), 2.0))  # the user's model as it was left
    assert torch.allclose(ns["y"], model.lin(ns["x"]) * 2)


def test_a_fix_that_removes_a_recompile_but_adds_a_break_is_withdrawn_naming_the_new_break():
    # dynamic=False: each size of `x` is compiled anew; mark_dynamic(x, 0) removes those recompiles, but
    # math.factorial of a dynamic size cannot be traced: a break the unfixed cell never had
    import math

    ns = {"torch": torch, "math": math, "x": torch.randn(8)}
    exec("def grow():\n    global x\n    x = torch.cat([x, x[:1]])\n", ns)
    run = run_cell("grow()\nz = x.sin() * math.factorial(x.shape[0] % 5)\n", ns, backend="eager", runs=1, warmup=1,
                   record=False, verify_fixes=True, dynamic=False)
    assert not run.report.graph_breaks and run.report.recompiles
    marks = [rc.suggestion.check for rc in run.report.recompiles
             if rc.suggestion is not None and rc.suggestion.kind == "mark_dynamic"]
    assert marks
    for check in marks:
        assert check.status == FixStatus.FAILED, check
        assert "the recompile is gone, but a new break: " in check.reason and "at cell line 2" in check.reason
        # torch's words are those of the new break, not of what the unfixed cell had too (its recompile limit)
        assert check.torch_says and "recompile limit" not in check.torch_says
        assert check.torch_says.split(" (")[0] in check.reason or "non-Tensor" in check.torch_says


def test_a_fix_that_drops_an_in_place_change_of_a_tensor_is_withdrawn():
    # the print shows a module (torch cannot move it after the graph): the doctor comments the line out, and with it
    # the change the line makes; the changed tensor is in no state_dict (a plain attribute, a non-persistent
    # buffer) or an attribute of a plain object
    for target, expr in (("m.calls", "m.calls"), ("m.seen", "m.seen"), ("st.y", "st.y")):
        ns = {"torch": torch, "x": torch.randn(2, 3), "m": Counted(), "st": types.SimpleNamespace(y=torch.zeros(3))}
        run = _run(f"z = m(x)\nprint('calls', {expr}.add_(1), m)\nw = z + 1\n", ns)
        (b,) = run.report.graph_breaks
        assert b.suggestion.kind == "remove_print" and b.suggestion.code.startswith("# print(")
        check = b.suggestion.check
        assert check.status == FixStatus.FAILED, (target, check)
        assert f"it drops the in-place change of `{target}` that the cell makes uncompiled" in check.reason, check
    # torch printing after the graph keeps the change: verified
    ns = {"torch": torch, "x": torch.randn(5), "st": types.SimpleNamespace(y=torch.zeros(3))}
    run = _run("z = x * 2\nprint(st.y.add_(1))\n", ns)
    (b,) = run.report.graph_breaks
    assert b.suggestion.kind == "reorderable_logging_functions"
    assert b.suggestion.check.status == FixStatus.VERIFIED, b.suggestion.check


# -- run_cell, and the magic in a real IPython shell -------------------------------------------------------------
def test_run_cell_verify_fixes_and_bad_options():
    ns = {"torch": torch, "x": torch.randn(5)}
    run = run_cell("idx = torch.nonzero(x)\nz = idx.sum()\n", ns, backend="eager", runs=1, warmup=0, record=False,
                   verify_fixes=True, verify_budget_s=30)
    (check,) = _checks(run.report)
    assert check.status == FixStatus.VERIFIED
    assert run.report.fix_verification.budget_s == 30
    assert any(n.startswith("fixes verified on this cell: 1 of 1 tried") for n in run.report.profile.notes)
    with pytest.raises(ValueError, match="--verify-budget: -1 is not allowed"):
        run_cell("z = x + 1", ns, backend="eager", verify_fixes=True, verify_budget_s=-1)
    with pytest.raises(ValueError, match="--verify-budget: only with --verify-fixes"):
        run_cell("z = x + 1", ns, backend="eager", verify_budget_s=5)
    with pytest.raises(ValueError, match="--verify-fixes: not with --observe"):
        run_cell("z = x + 1", ns, verify_fixes=True, observe=True)


def test_a_cell_that_raises_is_not_verified():
    ns = {"torch": torch, "x": torch.randn(5)}
    with pytest.raises(ZeroDivisionError) as info:
        run_cell("idx = torch.nonzero(x)\nz = 1 / 0\n", ns, backend="eager", runs=1, warmup=0, record=False,
                 verify_fixes=True)
    v = info.value.ipycompile_report.fix_verification
    assert v.not_verified == "the cell raised ZeroDivisionError: verify its fixes once it runs" and v.compiles == 0


def test_the_magic_verifies_fixes_in_a_real_shell(ip, shows_html):
    from IPython.utils.capture import capture_output

    ip.run_cell("import torch\nx = torch.tensor([0.0, 2.0, 0.0, 1.0])")
    with capture_output() as out:
        res = ip.run_cell("%%compile --backend eager --runs 1 --verify-fixes -o rep\nidx = torch.nonzero(x)\n"
                          "z = idx.float().sum()\nz")
    assert res.error_in_exec is None, res.error_in_exec
    rep = ip.user_ns["rep"]
    (check,) = _checks(rep)
    assert check.status == FixStatus.VERIFIED
    assert "verified on your cell: the break is gone" in out.outputs[0].data["text/html"]
    assert float(res.result) == 4.0 and torch._dynamo.config.capture_dynamic_output_shape_ops is False
    # a rewrite: the cell's lines as the editor numbers them (the %%compile line is line 1)
    ip.run_cell("y0 = torch.randn(6)")
    before = {k: id(v) for k, v in ip.user_ns.items() if not k.startswith("_")}
    with capture_output():
        res = ip.run_cell("%%compile --backend eager --runs 1 --verify-fixes -o rep2\ny = y0 * 2\n"
                          "if y.sum() > 0:\n    w = y + 1\nelse:\n    w = y - 1\n")
    assert res.error_in_exec is None, res.error_in_exec
    (b,) = ip.user_ns["rep2"].graph_breaks
    assert (b.suggestion.kind, b.suggestion.first_line, b.suggestion.last_line) == ("torch.where", 3, 6)
    assert b.suggestion.check.status == FixStatus.VERIFIED, b.suggestion.check
    assert b.suggestion.check.applied == ["lines 3-6 of the cell rewritten as suggested"]
    after = {k: id(v) for k, v in ip.user_ns.items() if not k.startswith("_")}
    assert {k: v for k, v in after.items() if k in before and k not in ("y", "w", "rep2")} == \
        {k: v for k, v in before.items() if k not in ("y", "w", "rep2")}
    res = ip.run_cell("%%compile --backend eager --verify-fixes --verify-budget 0\nz = x + 1")
    assert "--verify-budget: 0.0 is not allowed" in str(res.error_in_exec)


def test_the_magic_verifies_from_the_first_calls_state_and_withdraws_fixes_that_add_breaks_or_drop_changes(ip, shows_html):
    from IPython.utils.capture import capture_output

    # a module of the notebook that makes an attribute (and prints) on its first call only
    ip.run_cell("import torch, math, types\n"
                "class Lazy(torch.nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__(); self.lin = torch.nn.Linear(4, 4); self.scale = None\n"
                "    def forward(self, x):\n"
                "        if self.scale is None:\n"
                "            print('first forward')\n"
                "            self.scale = x.new_full((4,), 2.0)  # no global: the test shell's __main__ is not its namespace\n"
                "        return self.lin(x) * self.scale\n"
                "model = Lazy()\nx = torch.randn(2, 4)\n")
    with capture_output():
        res = ip.run_cell("%%compile --backend eager --runs 1 --verify-fixes -o rep\ny = model(x)\n")
    assert res.error_in_exec is None, res.error_in_exec
    (b,) = ip.user_ns["rep"].graph_breaks
    assert b.suggestion.check.status == FixStatus.VERIFIED, b.suggestion.check
    assert torch.equal(ip.user_ns["model"].scale, torch.full((4,), 2.0))
    # a fix that removes the recompiles of each size but adds a break
    ip.run_cell("v = torch.randn(8)\ndef grow():\n    global v\n    v = torch.cat([v, v[:1]])\n")
    with capture_output():
        res = ip.run_cell("%%compile --backend eager --runs 1 --warmup 1 --no-dynamic --verify-fixes -o rep2\n"
                          "grow()\nw = v.sin() * math.factorial(v.shape[0] % 5)\n")
    assert res.error_in_exec is None, res.error_in_exec
    checks = [rc.suggestion.check for rc in ip.user_ns["rep2"].recompiles
              if rc.suggestion is not None and rc.suggestion.kind == "mark_dynamic"]
    assert checks and all(c.status == FixStatus.FAILED and "a new break: " in c.reason for c in checks), checks
    # a fix that drops the in-place change a print made
    ip.run_cell("st = types.SimpleNamespace(count=torch.zeros(1))\n")
    with capture_output() as out:
        res = ip.run_cell("%%compile --backend eager --runs 1 --verify-fixes -o rep3\n"
                          "y = model(x)\nprint('call', st.count.add_(1), model)\n")
    assert res.error_in_exec is None, res.error_in_exec
    (b,) = ip.user_ns["rep3"].graph_breaks
    assert b.suggestion.kind == "remove_print" and b.suggestion.check.status == FixStatus.FAILED
    assert "it drops the in-place change of `st.count`" in b.suggestion.check.reason
    assert "drops the in-place change of" in out.outputs[0].data["text/html"]


# -- a fix is a record (Suggestion.fix): what the rule filled is what its code says, and what verify applies ------
def _answer(report: CompileReport) -> Suggestion:
    (s,) = [x.suggestion for x in [*report.graph_breaks, *report.recompiles] if x.suggestion is not None]
    return s


def test_every_kind_of_fix_record_round_trips_and_a_report_saved_before_them_loads():
    from ipycompile.report import GraphBreak, Mark, Rebind, Rewrite, Setting

    fixes = [
        Fix(settings=[Setting("dynamo", "capture_scalar_outputs", "True", comment="before the first call")]),
        Fix(imports=["import logging", "import torch"],
            settings=[Setting("dynamo", "ignore_logging_functions", 'logging.getLogger("a").info', "add")]),
        Fix(settings=[Setting("inductor", "fallback_random", "True")]),
        Fix(marks=[Mark("mark_dynamic", "x", 0, "before the first call"), Mark("maybe_mark_dynamic", 'b["ids"]', 1),
                   Mark("mark_unbacked", "box_lists[0].tensor", 0)]),
        Fix(rebinds=[Rebind("x", "contiguous", "before the call")]),
        Fix(rebinds=[Rebind("i", "tensor", "once")], notes=["or compile dynamic from the first call"]),
        Fix(compile_options={"dynamic": "True"}),
        rewrite("<cell>", 2, 3, "pass  # t0 = time.time()  (moved: call it outside the compiled code)",
                moved="t0 = time.time()"),
        Fix(marks=[Mark("mark_dynamic", "x", 0)],
            then=Fix(lead="only if needed:", settings=[Setting("dynamo", "recompile_limit", "16")])),
    ]
    report = CompileReport(graph_breaks=[GraphBreak(f"break {i}", suggestion=Suggestion.of(f"fix {i}", "", fx))
                                         for i, fx in enumerate(fixes)])
    again = CompileReport.from_json(report.to_json())
    assert [b.suggestion for b in again.graph_breaks] == [b.suggestion for b in report.graph_breaks]
    assert [b.suggestion.fix for b in again.graph_breaks] == fixes
    assert [b.suggestion.code for b in again.graph_breaks] == [fx.code for fx in fixes]
    assert again.graph_breaks[7].suggestion.first_line == 2 and again.graph_breaks[7].suggestion.fix.rewrite == \
        Rewrite("<cell>", 2, 3, again.graph_breaks[7].suggestion.code)
    assert fixes[3].code.splitlines() == ["torch._dynamo.mark_dynamic(x, 0)  # before the first call",
                                          'torch._dynamo.maybe_mark_dynamic(b["ids"], 1)',
                                          "torch._dynamo.decorators.mark_unbacked(box_lists[0].tensor, 0)"]
    assert fixes[8].code == ("torch._dynamo.mark_dynamic(x, 0)\n\n# only if needed:\n"
                             "torch._dynamo.config.recompile_limit = 16")
    # a report saved before fixes were records (no "fix" key): loads, its fix is not tried, and says why
    data = report.to_dict()
    for b in data["graph_breaks"]:
        del b["suggestion"]["fix"]
    old = CompileReport.from_dict(data)
    assert all(b.suggestion.fix is None and b.suggestion.code for b in old.graph_breaks)
    assert "saved before fixes were records" in verify.read_fix_code(old.graph_breaks[0].suggestion.fix).why_not


def test_a_settings_record_is_what_its_code_says_and_what_verify_applies():
    ns = {"torch": torch, "x": torch.tensor([0.0, 1.5, 0.0, -2.0, 3.0])}
    user = UserCell("idx = torch.nonzero(x)\nz = idx.float().sum()\n", ns)
    s = _answer(user.report)
    from ipycompile.report import Setting

    assert s.fix == Fix(settings=[Setting("dynamo", "capture_dynamic_output_shape_ops", "True")])
    assert s.code == s.fix.code == "torch._dynamo.config.capture_dynamic_output_shape_ops = True"
    (check,) = _checks(user.verify())
    assert check.status == FixStatus.VERIFIED and check.applied == [s.fix.settings[0].statement]


def test_a_setting_added_to_a_set_with_its_imports_is_applied_from_its_record():
    ns = {"torch": torch, "x": torch.randn(4)}
    user = UserCell("print(x.sum())\nz = x * 2\n", ns)
    s = _answer(user.report)
    from ipycompile.report import Setting

    assert s.fix == Fix(settings=[Setting("dynamo", "reorderable_logging_functions", "print", "add")])
    assert s.code == "torch._dynamo.config.reorderable_logging_functions.add(print)"
    read = verify.read_fix_code(s.fix, ns)  # the set torch has, with print added
    assert print in read.settings["dynamo"]["reorderable_logging_functions"]
    (check,) = _checks(user.verify())
    assert check.status == FixStatus.VERIFIED, check
    assert check.applied == ["torch._dynamo.config.reorderable_logging_functions.add(print)"]


def test_a_mark_record_is_what_its_code_says_and_what_verify_applies():
    from ipycompile.report import Mark

    ns = {"torch": torch, "x": torch.randn(8)}
    user = UserCell("x = torch.cat([x, x[:1]])\nz = x.sin().sum()\n", ns, calls=3)
    s = _answer(user.report)
    assert s.fix == Fix(marks=[Mark("mark_dynamic", "x", 0, "before the first call")])
    assert s.code == "torch._dynamo.mark_dynamic(x, 0)  # before the first call"
    (check,) = _checks(user.verify())
    assert check.status == FixStatus.VERIFIED and check.applied == [f"{s.fix.marks[0].statement} on a copy of `x`"]


def test_a_rewrite_record_and_a_moved_statement_are_what_verify_applies():
    import time

    ns = {"torch": torch, "x": torch.randn(6)}
    user = UserCell("y = x * 2\nif y.sum() > 0:\n    z = y + 1\nelse:\n    z = y - 1\nw = z.cos()\n", ns)
    s = _answer(user.report)
    assert s.fix.rewrite is not None and (s.fix.rewrite.filename, s.fix.rewrite.first_line, s.fix.rewrite.last_line) \
        == (user.cf.filename, 2, 5) == (s.filename, s.first_line, s.last_line)
    assert s.code == s.fix.rewrite.text and "torch.where" in s.code and not s.fix.moved
    (check,) = _checks(user.verify())
    assert check.status == FixStatus.VERIFIED and check.applied == ["lines 2-5 of the cell rewritten as suggested"]

    ns = {"torch": torch, "x": torch.randn(5), "time": time}
    user = UserCell("t0 = time.perf_counter()\ny = x * 2\n", ns)
    s = _answer(user.report)
    assert s.fix.moved == "t0 = time.perf_counter()" and s.fix.rewrite.first_line == 1
    assert s.code == s.fix.rewrite.text == "# t0 = time.perf_counter()  (moved: call it outside the compiled code)"
    (check,) = _checks(user.verify())
    assert check.status == FixStatus.VERIFIED and "`t0 = time.perf_counter()` run before each call" in check.applied[0]


def test_a_rebind_record_is_what_its_code_says():
    # `x = x.contiguous()`: a statement of the user's before the call; verify does not run it on a copy (the
    # corpus's harness writes it before the call): its record renders the statement, read as one to run first
    from ipycompile.report import Rebind

    base = torch.randn(4, 4)

    def f(t):
        return (t * 2).sum()

    cf = torch.compile(f, backend="eager")
    with ipycompile.capture() as cap:
        cf(base)
        cf(base.t())
    s = _answer(cap.report)
    assert s.kind == "contiguous", (s.kind, s.code)
    (rebind,) = s.fix.rebinds
    assert rebind == Rebind(rebind.target, "contiguous", "before the call") and rebind.target.isidentifier()
    assert s.code == s.fix.code == f"{rebind.target} = {rebind.target}.contiguous()  # before the call"
    read = verify.read_fix_code(s.fix)
    assert not read.why_not and read.rebinds == [(rebind.target, "contiguous")]
    assert read.before_call == [f"{rebind.target} = {rebind.target}.contiguous()"]
