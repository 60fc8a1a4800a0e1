"""A ``%%compile`` cell that trains leaves the model, optimizer, scheduler and random state as one
plain run of the cell would: the warm-up, timed and eager calls that measure it are undone
(ipycompile/run/state.py). What cannot be undone (a list appended to) is said on the first screen."""

from __future__ import annotations

import copy

import pytest
import torch
from IPython.utils.capture import capture_output

import ipycompile
from ipycompile.views.first_screen import problems

pytestmark = pytest.mark.slow

CELL = ("opt.zero_grad()\n"
        "loss = torch.nn.functional.mse_loss(model(x), y)\n"
        "loss.backward()\n"
        "opt.step()\n"
        "sched.step()\n"
        "log.append(loss.item())\n")


def _namespace() -> dict:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Dropout(0.1), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
    return {"torch": torch, "model": model, "opt": opt, "sched": sched, "x": torch.randn(64, 16),
            "y": torch.randn(64, 1), "log": []}


def _plain(ns: dict) -> dict:
    ref = copy.deepcopy({k: v for k, v in ns.items() if k != "torch"})
    ref["torch"] = torch
    exec(CELL, ref)
    ref["rng"] = torch.get_rng_state()
    return ref


def test_a_training_step_in_a_compile_cell_trains_once(ip):
    ns = _namespace()
    torch.manual_seed(1)
    ref = _plain(ns)
    torch.manual_seed(1)
    ip.user_ns.update(ns)
    with capture_output() as shown:
        res = ip.run_cell("%%compile --backend aot_eager --runs 5 --compare-eager -o _train_report\n" + CELL)
    assert res.error_in_exec is None, res.error_in_exec
    report = ip.user_ns.pop("_train_report")
    for k in ns:
        ip.user_ns.pop(k, None)
    ip.user_ns.pop("loss", None)
    model, opt, sched = ns["model"], ns["opt"], ns["sched"]
    p0 = next(iter(model.parameters()))
    assert int(opt.state[p0]["step"]) == 1  # one optimizer step, not one per timed call
    assert opt.param_groups[0]["lr"] == ref["opt"].param_groups[0]["lr"] == 5e-3 and sched.last_epoch == 1
    for a, b in zip(model.parameters(), ref["model"].parameters()):
        torch.testing.assert_close(a, b)  # compiled numerics: close to one plain run, not equal to many
        torch.testing.assert_close(a.grad, b.grad)
    for a, b in zip(opt.state.values(), ref["opt"].state.values()):
        torch.testing.assert_close(a["exp_avg"], b["exp_avg"])
    assert torch.equal(torch.get_rng_state(), ref["rng"])  # dropout drew from the generator once
    assert report.profile.steady.runs >= 5 and report.profile.eager is not None
    kept = report.profile.kept
    assert set(kept.restored) == {"model", "opt", "sched"}
    # the list the cell appends to cannot be put back: the first screen says so, in the user's names
    assert len(ns["log"]) > 1 and kept.not_restored == ["`log` (list, .append)"]
    (p,) = [p for p in problems(report) if p.kind == "state"]
    assert "`log`" in p.title and "model, opt, sched" in p.cost
    assert "`log`" in shown.outputs[0].data["text/plain"]


def test_an_inference_cell_copies_nothing():
    """A cell that changes nothing in place (inference) is not copied: no model-sized copy per run."""
    ns = _namespace()
    ns["model"].eval()
    run = ipycompile.run_cell("with torch.no_grad():\n    out = model(x)\n", ns, backend="eager", runs=3, record=False)
    assert run.report.profile.kept is None
    assert not [p for p in problems(run.report) if p.kind == "state"]


class _Counting(torch.nn.Module):
    """Counts its calls in a tensor it holds as a plain attribute (neither parameter nor buffer)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.calls = torch.zeros((), dtype=torch.long)

    def forward(self, x):
        self.calls.add_(1)
        return self.lin(x)


def test_a_tensor_a_module_holds_as_a_plain_attribute_counts_one_call(ip):
    m = _Counting()
    ip.user_ns.update(torch=torch, m=m, x=torch.randn(2, 4))
    with capture_output():
        res = ip.run_cell("%%compile --backend eager --runs 4 -o _count_report\nout = m(x)\n")
    assert res.error_in_exec is None, res.error_in_exec
    report = ip.user_ns.pop("_count_report")
    for k in ("torch", "m", "x", "out"):
        ip.user_ns.pop(k, None)
    assert report.profile.steady.runs >= 4
    assert int(m.calls) == 1 and report.profile.kept.restored == ["m"]
