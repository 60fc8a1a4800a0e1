"""Fixes verified by default in a notebook: a real Jupyter kernel (nbclient) runs ``%%compile`` cells
as a user does, with the model, optimizer and inputs notebook globals.

The report shows at once, saying its fixes are being tried; then each fix is tried on a scratch
compile of the cell and the same outputs update in place (the widget's first screen, and the static
copy a saved notebook keeps): "verified on your cell", "withdrawn" or "not verified: why". The
user's namespace, the model's weights and the optimizer's state are those one plain run of the cell
gives; torch's config is as it was. ``--no-verify-fixes`` turns it off, and a fix not tried is
offered as "To try", never as "Fix". (In a terminal the fixes are tried only when asked:
tests/test_terminal.py.)
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.notebook

SETUP = """\
import copy, json, torch, ipycompile
%load_ext ipycompile
torch.manual_seed(0)
x = torch.tensor([0.0, 2.0, 0.0, 1.0])
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
inp = torch.randn(8, 4)
ref, ref_opt = copy.deepcopy(model), None
ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
"""

STEP = """\
y = model(inp)
if y.sum() > 0:
    y = y * 2
else:
    y = y - 1
loss = (y ** 2).mean()
loss.backward()
opt.step()
opt.zero_grad()
loss"""

CELLS = {
    "setup": SETUP,
    "nonzero": "%%compile --backend eager --runs 2 -o rep\nidx = torch.nonzero(x)\nz = idx.float().sum()\nz",
    "nonzero_check": """\
b, = rep.graph_breaks
print(json.dumps({"pending": rep.fix_verification.pending, "status": str(b.suggestion.check.status),
                  "flag": torch._dynamo.config.capture_dynamic_output_shape_ops, "z": float(z),
                  "history": ipycompile.history()["report"].iloc[-1] is rep}))""",
    "step": "%%compile --backend eager --runs 3 -o train\n" + STEP,
    "step_check": """\
names_before = set(globals())
exec(%r.replace("opt", "ref_opt").replace("model", "ref"), {"ref": ref, "ref_opt": ref_opt, "inp": inp})
same = all(torch.equal(a, b) for a, b in zip(model.parameters(), ref.parameters()))
momentum = max((opt.state[p]["momentum_buffer"] - ref_opt.state[q]["momentum_buffer"]).abs().max().item()
               for p, q in zip(model.parameters(), ref.parameters()))
v = train.fix_verification
print(json.dumps({"same": same, "momentum": momentum, "pending": v.pending, "tried": v.tried, "text": v.text,
                  "checks": [b.suggestion.check.status for b in train.graph_breaks
                             if b.suggestion is not None and b.suggestion.check is not None]}))""" % STEP,
    "off": "%%compile --backend eager --runs 1 --no-verify-fixes -o plain\nidx2 = torch.nonzero(x)\nidx2.sum()",
    "off_check": "print(json.dumps({'verification': plain.fix_verification is None}))",
}


@pytest.fixture(scope="module")
def kernel_run(tmp_path_factory):
    """The cells above in one real kernel; every iopub message recorded as it arrives."""
    pytest.importorskip("nbclient")
    from test_kernel import run_in_kernel

    cells, received = run_in_kernel(list(CELLS.values()), tmp_path_factory.mktemp("verify"), record=True)
    names = list(CELLS)
    return {names[i]: (cells[i], received.get(i, [])) for i in range(len(names))}


def _printed(cell) -> dict:
    (out,) = [o for o in cell.outputs if o.output_type == "stream"]
    return json.loads(out.text)


def test_the_report_shows_first_then_its_first_screen_updates_in_place_with_the_verified_fix(kernel_run):
    cell, messages = kernel_run["nonzero"]
    shown = [m for m in messages if m["msg_type"] == "display_data" and "text/html" in m["content"]["data"]]
    static = shown[0]
    assert "being tried on your cell" in static["content"]["data"]["text/html"]
    assert "To try" in static["content"]["data"]["text/html"]  # not yet a fix: it was not tried
    display_id = static["content"]["transient"]["display_id"]
    updates = [m for m in messages if m["msg_type"] == "update_display_data"
               and m["content"]["transient"]["display_id"] == display_id]
    assert updates, [m["msg_type"] for m in messages]
    html = updates[-1]["content"]["data"]["text/html"]
    assert "verified on your cell: the break is gone, outputs equal" in html and "being tried" not in html
    assert 'data-fix="Fix"' in html
    # the widget's first screen is updated too (a comm message setting its HTML)
    widget_values = [m["content"]["data"]["state"]["value"] for m in messages if m["msg_type"] == "comm_msg"
                     and isinstance(m["content"]["data"].get("state", {}).get("value"), str)]
    assert any("verified on your cell" in v for v in widget_values)
    # the saved notebook keeps the updated static copy
    saved = [o.data["text/html"] for o in cell.outputs if o.output_type == "display_data" and "text/html" in o.data]
    assert any("verified on your cell" in h for h in saved) and not any("being tried" in h for h in saved), saved
    # the live status line left one line of what the run took (the fix is tried after it, as the report
    # shows), before the report's static copy and its widget
    took, static_copy, widget = [o for o in cell.outputs if o.output_type == "display_data"]
    assert set(took.data) == {"text/plain", "text/html"}, took.data
    line = took.data["text/plain"]
    assert line.startswith("ipycompile: took ") and "\n" not in line, line
    assert "ipyc-static" in static_copy.data["text/html"] and "application/vnd.jupyter.widget-view+json" in widget.data
    facts = _printed(kernel_run["nonzero_check"][0])
    assert facts == {"pending": False, "status": "verified", "flag": False, "z": 4.0, "history": True}, facts


def test_a_training_step_verified_by_default_leaves_the_weights_and_optimizer_of_one_plain_run(kernel_run):
    _, messages = kernel_run["step"]
    assert any(m["msg_type"] == "update_display_data" for m in messages)
    facts = _printed(kernel_run["step_check"][0])
    assert facts["same"] is True and facts["momentum"] == 0.0, facts
    assert facts["pending"] is False and facts["tried"] >= 1 and facts["checks"], facts


def test_verification_turned_off_leaves_the_code_as_to_try(kernel_run):
    cell, messages = kernel_run["off"]
    # (the progress line is updated in place; the report's outputs are not)
    assert not [m for m in messages if m["msg_type"] == "update_display_data"
                and "What to fix" in m["content"]["data"].get("text/html", "")]
    html = "".join(o.data["text/html"] for o in cell.outputs if o.output_type == "display_data" and "text/html" in o.data)
    assert 'data-fix="To try"' in html and "verified on your cell" not in html and "being tried" not in html
    assert _printed(kernel_run["off_check"][0]) == {"verification": True}
