"""The break kinds real users' code met without an answer (issue 27), each on code of its own shape
that is not the corpus case: a call torch's fake run rejects (GB0112), a branch on a Python `random`
value (GB0170), a hook registered inside compiled code (GB0467) and a threading lock taken there
(GB0142), in the user's code and in a library's (a tiny BERT with random weights asked for
`output_attentions`). Real compiles (eager backend); each claim an answer makes is checked here:
eager raises the same, the results equal eager's, the fix it names removes the break."""

from __future__ import annotations

import random
import threading

import pytest
import torch
from torch import nn

import ipycompile
from ipycompile.analysis import diagnose
from ipycompile.capture.parse.context import read_detail


@pytest.fixture(autouse=True)
def _clean_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def compiled(fn, *calls, fullgraph=False):
    """Each call of ``fn`` compiled (eager backend) under capture: (outputs or the exception, diagnosed report)."""
    c = torch.compile(fn, backend="eager", fullgraph=fullgraph)
    outs = []
    with ipycompile.capture() as cap:
        for args in calls:
            try:
                outs.append(c(*args))
            except Exception as exc:  # noqa: BLE001 - the error the user's call received
                outs.append(exc)
    return outs, diagnose(cap.report)


def answers(report, code):
    items = [i for i in report.graph_breaks + report.failures if i.gb_code == code]
    assert items, report.summary()
    return [i.suggestion for i in items]


# -- capture reads the words (torch 2.11 and 2.13 forms) ---------------------------------------------
def test_capture_reads_the_type_error_the_branch_inputs_the_lock_and_the_class_attribute():
    d = read_detail("TypeError <built-in method full of type object at 0x7f>: full(): argument 'fill_value' "
                    "must be Number, not FakeTensor")
    assert (d.type_error_function, d.type_error_argument, d.type_error_expected, d.type_error_given) == (
        "full", "fill_value", "Number", "FakeTensor")
    assert d.type_error_message == "full(): argument 'fill_value' must be Number, not FakeTensor"
    trace = ("Detected data-dependent branching.\n\n  The branch condition involves a tensor computed as follows:\n"
             '    # File "/u/m.py", line 7, in fwd, code: p = random.random()\n'
             "    random_value_0: graph input (random_value_0)\n\n"
             '    # File "/u/m.py", line 8, in fwd, code: t = x.sum()\n    l_x_: graph input (L_x_)\n')
    d = read_detail("attempted to jump with UnspecializedPythonVariable()", trace)
    assert [(f.filename, f.lineno, f.source_line) for f in d.branch_random] == [("/u/m.py", 7, "p = random.random()")]
    # without a source line for the draw (torch had none): still a random input, with no place
    d = read_detail("attempted to jump", "The branch condition involves a tensor computed as follows:\n"
                    "    random_value_1: graph input (random_value_1)\n")
    assert len(d.branch_random) == 1 and not d.branch_random[0].filename
    d = read_detail("Attempted SETUP_WITH/BEFORE_WITH on UserDefinedObjectVariable(lock)",
                    "Dynamo does not know how to enter a `lock` context manager.")
    assert d.context_manager == "lock"
    d = read_detail("setattr(UserDefinedClassVariable(<class 'torch.utils.hooks.RemovableHandle'>), "
                    "ConstantVariable(str: 'next_id'), ConstantVariable(int: 3))")
    assert (d.setattr_type, d.setattr_name) == ("torch.utils.hooks.RemovableHandle", "next_id")
    assert read_detail("no words here") == read_detail("")


# -- GB0112: the fake run rejects the arguments --------------------------------------------------------
def _eager_error(fn, *args):
    with pytest.raises(TypeError) as e:
        fn(*args)
    return str(e.value)


def test_a_python_int_where_a_tensor_is_taken_raises_the_same_in_eager():
    def features(x, steps):
        return torch.stack([torch.sin(k) * x for k in range(steps)])  # `k` is an int

    x = torch.randn(3)
    outs, report = compiled(features, (x, 3))
    [s] = answers(report, "GB0112")
    assert s.kind == "invalid_arguments" and s.code == ""
    assert "Python `int`" in s.title and "raises the same without torch.compile" in s.title
    assert "sin(): argument 'input'" in s.explanation and "must be Tensor, not int" in s.explanation
    # the claim: without torch.compile the call raises the same TypeError, and so did the user's call
    eager = _eager_error(features, x, 3)
    assert "sin(): argument 'input'" in eager and isinstance(outs[0], TypeError) and str(outs[0]) == eager


def test_a_parameter_where_a_number_is_taken_raises_the_same_in_eager():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.alpha = nn.Parameter(torch.tensor(0.5))

        def forward(self, x, y):
            return torch.add(x, y, alpha=self.alpha)

    m = Scaled()
    x, y = torch.randn(4), torch.randn(4)
    outs, report = compiled(m, (x, y), fullgraph=True)
    [s] = answers(report, "GB0112")
    assert s.kind == "invalid_arguments" and "tensor for `alpha`" in s.title and "raises the same" in s.title
    assert "must be Number, not FakeTensor" in s.explanation
    assert "must be Number, not Parameter" in _eager_error(m, x, y)
    assert isinstance(outs[0], Exception)
    # a tensor that needs no grad is taken for a number, with or without torch.compile: no break, no answer
    torch._dynamo.reset()
    m.alpha.requires_grad_(False)
    outs, report = compiled(m, (x, y), fullgraph=True)
    assert not report.graph_breaks and not report.failures and torch.equal(outs[0], m(x, y))


# -- GB0170 on a Python random value ------------------------------------------------------------------
class StochasticDepth(nn.Module):
    """Residual blocks skipped at random in training (stochastic depth, as timm's and others' code)."""

    def __init__(self, p=0.3):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(6, 6), nn.GELU()) for _ in range(4)])
        self.p = p

    def forward(self, h):
        for block in self.blocks:
            skip = random.uniform(0.0, 1.0) < self.p
            if self.training and skip:
                continue
            h = h + block(h)
        return h


def test_a_branch_on_a_python_random_value_is_explained_and_results_equal_eager():
    torch.manual_seed(0)
    m = StochasticDepth().train()
    x = torch.randn(2, 6)

    def call(seed):
        random.seed(seed)
        return m(x)

    eager = [call(s) for s in (1, 2, 3)]
    c = torch.compile(m, backend="eager")
    outs = []
    with ipycompile.capture() as cap:
        for s in (1, 2, 3):
            random.seed(s)
            outs.append(c(x))
    report = diagnose(cap.report)
    [s, *_] = answers(report, "GB0170")
    assert s.kind == "random_branch" and s.code == ""
    assert "`skip = random.uniform(0.0, 1.0) < self.p`" in s.explanation and "random_value_0: graph input" in s.explanation
    # what it says: results are those of the code without torch.compile (the same random draws)
    assert all(torch.equal(a, b) for a, b in zip(outs, eager))
    # an `if` that a tensor condition could replace: no `torch.where` rewrite (without torch.compile the
    # condition is a Python bool, which `torch.where` rejects), the same answer
    torch._dynamo.reset()

    def jitter(h, p):
        if random.uniform(0.0, 1.0) < p:
            h = h * 0.5
        return h + 1

    _, report = compiled(jitter, (x, 0.5))
    [s, *_] = answers(report, "GB0170")
    assert s.kind == "random_branch" and s.code == "", (s.kind, s.code)
    with pytest.raises(TypeError):
        torch.where(random.uniform(0.0, 1.0) < 0.5, x * 0.5, x)
    # a branch on a tensor, not on `random`, is not this kind
    torch._dynamo.reset()

    def gate(h):
        if h.sum() > 0:
            return h * 2
        return h

    _, report = compiled(gate, (x,))
    assert all(i.suggestion.kind != "random_branch" for i in report.graph_breaks)


# -- GB0467: a hook registered inside compiled code ------------------------------------------------------
def test_a_hook_registered_in_the_users_compiled_code_is_moved_before_the_call():
    torch.manual_seed(0)
    seen = []

    def keep(module, args, out):
        seen.append(out)

    def build():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))

    net = build()
    x = torch.randn(3, 4)

    def probe(x):
        net[0].register_forward_hook(keep)
        return net(x).sum(-1)

    outs, report = compiled(probe, (x,))
    [s, *_] = answers(report, "GB0467")
    assert s.kind == "hook_registration" and "at test_doctor_real_kinds.py:" in s.title
    assert "`net[0].register_forward_hook(keep)`" in s.explanation and "before the compiled call" in s.explanation
    # the fix as said: the same hook registered before the compiled call; no break, the same outputs
    torch._dynamo.reset()
    seen.clear()
    net = build()
    net[0].register_forward_hook(keep)

    def probe_fixed(x):
        return net(x).sum(-1)

    fixed, report = compiled(probe_fixed, (x,))
    assert not report.graph_breaks and not report.failures, report.summary()
    assert torch.equal(fixed[0], outs[0]) and len(seen) == 1


# -- GB0142: a threading lock ------------------------------------------------------------------------------
def test_a_lock_in_the_users_compiled_code_is_taken_around_the_call():
    lock = threading.Lock()
    w = torch.randn(4, 4)

    def step(x):
        y = x @ w
        with lock:
            y = y.relu()
        return y + 1

    x = torch.randn(2, 4)
    outs, report = compiled(step, (x,))
    [s, *_] = answers(report, "GB0142")
    assert s.kind == "thread_lock" and "around the compiled call" in s.explanation
    assert "`with lock:`" in s.explanation
    torch._dynamo.reset()

    def step_fixed(x):
        y = x @ w
        y = y.relu()
        return y + 1

    c = torch.compile(step_fixed, backend="eager")
    with ipycompile.capture() as cap:
        with lock:
            fixed = c(x)
    assert not cap.report.graph_breaks and torch.equal(fixed, outs[0])


# -- the library's hooks and lock: transformers' output_attentions on a tiny BERT ------------------------
@pytest.fixture
def bert():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=64, max_position_embeddings=32, attn_implementation="eager")
    return transformers.BertModel(cfg).eval(), torch.randint(0, 64, (2, 7))


def test_a_library_that_installs_hooks_on_first_use_gets_the_warm_up_answer_and_it_works(bert):
    model, ids = bert
    cm = torch.compile(model, backend="eager")

    def calls(warm_up):
        with ipycompile.capture() as cap, torch.no_grad():
            plain = cm(ids).last_hidden_state
            if warm_up:
                with torch.compiler.set_stance("force_eager"):
                    cm(ids, output_attentions=True)
            out = cm(ids, output_attentions=True)
        return plain, out, diagnose(cap.report)

    plain, out, report = calls(warm_up=False)
    kinds = {b.gb_code: b.suggestion for b in report.graph_breaks}
    assert kinds["GB0467"].kind == "hook_registration" and kinds["GB0142"].kind == "thread_lock"
    for s in (kinds["GB0467"], kinds["GB0142"]):
        assert "in library code you do not own" in s.explanation and "cm(ids, output_attentions=True)" in s.explanation
        assert 'torch.compiler.set_stance("force_eager")' in s.explanation and s.code == ""
    # the warm-up the answer names: those breaks are gone, the outputs are eager's
    torch._dynamo.reset()
    model2 = type(model)(model.config).eval()
    model2.load_state_dict(model.state_dict())
    cm = torch.compile(model2, backend="eager")
    plain2, out2, report = calls(warm_up=True)
    assert not {"GB0467", "GB0142"} & {b.gb_code for b in report.graph_breaks}, report.summary()
    with torch.no_grad():
        ref = model(ids, output_attentions=True)
    assert torch.equal(out2.last_hidden_state, ref.last_hidden_state) and torch.equal(plain2, plain)
    assert len(out2.attentions) == 2 and all(torch.equal(a, b) for a, b in zip(out2.attentions, ref.attentions))


def test_the_new_fields_of_torchs_words_save_and_load():
    from ipycompile import CompileReport
    from ipycompile.report.model import GraphBreak, TorchDetail, UserFrame

    said = TorchDetail(type_error_function="cos", type_error_argument="input", type_error_expected="Tensor",
                       type_error_given="int", type_error_message="cos(): ...", context_manager="lock",
                       setattr_type="torch.utils.hooks.RemovableHandle", setattr_name="next_id",
                       branch_random=[UserFrame("/u/m.py", 7, "fwd", "p = random.random()")])
    r = CompileReport(graph_breaks=[GraphBreak("r", said=said)])
    assert CompileReport.from_json(r.to_json()).graph_breaks[0].said == said
