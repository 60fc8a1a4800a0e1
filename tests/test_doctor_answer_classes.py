"""Classes of answer seen on unseen code (issue 40 §2), each ruled out as a class on code other than
the example it was seen on (CPU, backend "eager"):

1. names that do not fit the user's objects: every name the doctor prints evaluates in the user's
   namespace (:func:`names_evaluate`), never torch's ``opt.step.param_groups`` (a bound method's
   ``__self__``), ``__import___main__.z`` (a global of ``__main__`` read by an inlined function) or
   ``___from_numpy(a)``;
2. the wrong guard named: the guard that failed (``11 <= x.size()[0]`` from the user's branch), not
   "became 0 or 1";
3. a silent change of results said first: a recompile on a global that an ignored ``functools`` cache's
   body changes;
4. crashes: every exception inside the doctor is counted (``doctor_errors``) and the other answers stay;
5. code that fits the user's objects: a ``register_fake`` written from the op's schema (its parameters, one
   result per result), run as given, removes the break;
6. a setting advised with what follows it: ``capture_dynamic_output_shape_ops`` not given where the code then
   loops over the result in Python or reads its values as numbers (checked by applying it);
7. code the user does not own: the library's own switch of the user's call as the lever (transformers models
   through ``run_cell``), and a break repeated in every layer one problem with one answer.
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
import textwrap

import numpy as np
import pytest
import torch
from torch import nn

import ipycompile
from ipycompile.analysis import recompiles as recompiles_mod
from ipycompile.analysis.breaks import rules as break_rules
from ipycompile.analysis.doctor import doctor_errors

import recorded


_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[\d+\]|\[(['\"])[^'\"\[\]]*\1\])*")


def captured(*calls):
    torch._dynamo.reset()
    with ipycompile.capture() as cap:
        outs = [call() for call in calls]
    return cap.report, outs


def said(rc) -> str:
    s = rc.suggestion
    return "\n".join([rc.explanation, s.title, s.explanation, s.code] if s else [rc.explanation])


def with_setting(name: str, fn, x):
    """``fn(x)`` compiled again with ``torch._dynamo.config.<name> = True``, captured: ``(report, output)``, the
    output the exception where the compiled call raised (``GuardOnDataDependentSymNode``)."""
    def run():
        try:
            return torch.compile(fn, backend="eager")(x)
        except Exception as exc:  # noqa: BLE001 - the call raising is what is measured
            return exc

    with torch._dynamo.config.patch(**{name: True}):
        report, (out,) = captured(run)
    return report, out


def names_evaluate(text: str, namespace: dict) -> list[str]:
    """Every name the doctor prints in backticks that reads as a Python name or path evaluates in the user's
    namespace (``opt.param_groups[0]['lr']``, ``w``); returns them. Code (calls, ``dynamic=True``, lines with
    spaces) is not a name and is skipped."""
    names = [m for m in re.findall(r"`([^`]+)`", text) if _PATH.fullmatch(m)]
    for n in names:
        assert "__" not in n, (n, text)
        try:
            eval(n, {}, namespace)  # noqa: S307 - the test's own namespace
        except Exception as exc:  # noqa: BLE001
            raise AssertionError(f"`{n}` names nothing in the user's namespace ({exc!r}):\n{text}") from None
    return names


# -- 1. names -----------------------------------------------------------------------------------------------
def test_a_compiled_optimizer_step_names_the_optimizers_group_not_the_bound_method():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)  # a scheduler's decay, by hand
    compiled_step = torch.compile(optimizer.step, backend="eager")

    def train(lrs):
        for lr in lrs:
            for group in optimizer.param_groups:
                group["lr"] = lr
            optimizer.zero_grad()
            model(torch.randn(4, 3)).pow(2).mean().backward()
            compiled_step()

    r, _ = captured(lambda: train([1e-3, 5e-4, 2.5e-4]))
    assert r.recompiles
    for rc in r.recompiles:
        text = said(rc)
        assert "optimizer.step." not in text and "self." not in text, text
        names = names_evaluate(text, {**globals(), **locals()})
        assert "optimizer.param_groups[0]['lr']" in names, text


def test_an_optimizer_step_torch_compiles_on_its_own_after_a_break_prints_no_self():
    model = nn.Linear(3, 1)
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    @torch.compile(backend="eager")
    def update():
        sgd.step()

    def train(lrs):
        for lr in lrs:
            sgd.param_groups[0]["lr"] = lr
            model(torch.randn(2, 3)).sum().backward()
            update()

    r, _ = captured(lambda: train([0.1, 0.01, 0.001]))
    assert r.recompiles
    for rc in r.recompiles:
        text = said(rc)
        names = names_evaluate(text, {**globals(), **locals()})
        assert not any(n.startswith("self.") for n in names), text


@pytest.fixture
def notebook(tmp_path, monkeypatch):
    """Run code as a notebook cell does: its functions' globals are ``__main__``'s, its source a file."""
    main = sys.modules["__main__"]
    added: list[str] = []

    def run(src: str, name: str = "cell.py") -> dict:
        path = tmp_path / name
        path.write_text(textwrap.dedent(src))
        before = set(vars(main))
        exec(compile(path.read_text(), str(path), "exec"), vars(main))  # noqa: S102
        added.extend(set(vars(main)) - before)
        return vars(main)

    monkeypatch.syspath_prepend(str(tmp_path))
    yield run
    for n in added:
        vars(main).pop(n, None)


def test_a_notebook_global_read_by_a_function_a_library_calls_is_named_as_the_notebook_names_it(notebook, tmp_path):
    (tmp_path / "trainlib.py").write_text("def run_step(fn, batch):\n    return fn(batch).sum()\n")
    ns = notebook("""
        import torch, trainlib
        temperature = 2.0

        def logits(batch):
            return batch / temperature

        step = torch.compile(trainlib.run_step, backend="eager")
    """)
    importlib.reload(sys.modules["trainlib"])
    batch = torch.arange(4.0)

    def sweep(values):
        outs = []
        for t in values:
            ns["temperature"] = t
            outs.append(ns["step"](ns["logits"], batch))
        return outs

    r, (before,) = captured(lambda: sweep([2.0, 4.0, 8.0]))
    assert r.recompiles
    rc = r.recompiles[0]
    text = said(rc)
    assert "__import_" not in text and "temperature" in rc.guards[0].name, text
    assert names_evaluate(text, ns)
    # the fix the doctor writes (a tensor), applied in the notebook: no recompile, the same outputs
    assert rc.suggestion is not None and rc.suggestion.code.startswith("temperature = torch.tensor(temperature)"), text

    def sweep_tensor(values):
        outs = []
        for t in values:
            ns["temperature"] = torch.tensor(t)
            outs.append(ns["step"](ns["logits"], batch))
        return outs

    r2, (after,) = captured(lambda: sweep_tensor([2.0, 4.0, 8.0]))
    assert not r2.recompiles
    for a, b in zip(before, after):
        torch.testing.assert_close(a, b)


def test_a_numpy_array_torch_reads_as_a_tensor_is_the_users_array_and_gets_no_mark_or_crash():
    @torch.compile(backend="eager")
    def normalise(frame):
        t = torch.from_numpy(frame)
        return (t - t.mean()) / (t.std() + 1e-6)

    frames = [np.random.default_rng(i).standard_normal(n).astype(np.float32) for i, n in enumerate((8, 12, 16))]
    frames.append(frames[-1].astype(np.float64))
    def stream():
        outs = []
        for batch in frames:
            outs.append(normalise(batch))
        return outs

    r, _ = captured(stream)
    assert len(r.recompiles) >= 2 and not doctor_errors(r)
    for rc in r.recompiles:
        text = said(rc)
        # the array as the user's code names it: the caller's `batch`, or (where the call is not read, as here on
        # torch 2.13) the compiled function's own parameter `frame`, shown as the user's own expression
        assert "from_numpy" not in text and re.search(r"the NumPy array `(batch|frame)`", text), text
        assert not (rc.suggestion and "mark_dynamic(" in rc.suggestion.code), text
        names_evaluate(text, {**locals(), "batch": frames[0], "frame": frames[0]})


# -- 2. the guard that failed ---------------------------------------------------------------------------------
def test_a_size_below_the_users_branch_bound_names_that_guard_not_0_or_1():
    @torch.compile(backend="eager")
    def pool(tokens):
        if tokens.shape[1] > 32:  # long sequences are pooled in windows
            return tokens.unfold(1, 32, 32).mean(-1)
        return tokens.mean(1, keepdim=True)

    r, _ = captured(lambda: [pool(torch.randn(2, n)) for n in (64, 96, 20)])
    below = [rc for rc in r.recompiles if any(g.kind == "symbolic" for g in rc.guards)]
    assert below, [rc.explanation for rc in r.recompiles]
    text = below[0].explanation
    assert "0 or 1" not in text.split(". ")[0], text
    assert "`tokens.size()[1] >= 33`" in text and "if tokens.shape[1] > 32:" in text and "(20 now)" in text, text


# -- 3. a silent change of results, said first --------------------------------------------------------------------
built = 0


@functools.lru_cache(maxsize=None)
def rope_cache(dim):
    global built
    built += 1
    return 10000.0 ** (-torch.arange(0, dim, 2).float() / dim)


def test_a_recompile_on_a_global_an_ignored_cache_body_changes_says_the_difference_first():
    @torch.compile(backend="eager")
    def rotate(q):
        return q * rope_cache(q.shape[-1]).repeat(2)

    global built
    built = 0
    frames = torch._dynamo.utils.counters["frames"]
    ok = frames["ok"]
    r, _ = captured(lambda: [rotate(torch.ones(2, 8)) for _ in range(3)])
    assert built >= 2  # the body ran at every trace: eager would build it once
    assert any(d.kind == "ignored_cache" for d in r.eager_differences)
    # torch 2.13 recompiles `rotate` as the global grows; 2.14 compiles it once (torch's own count is the evidence)
    compiled = frames["ok"] - ok
    assert compiled >= 1 and len(r.recompiles) == compiled - 1, (compiled, r.recompiles)
    for rc in r.recompiles:
        assert rc.explanation.startswith("Compiled results differ from eager here: torch ignores the cache of `rope_cache`")
        assert rc.suggestion.kind == "ignored_cache" and "dynamic=True" not in rc.suggestion.code
        names_evaluate(said(rc), globals())


# -- 4. every exception counted, the other answers kept ------------------------------------------------------------
def _raises(*_a, **_k):
    raise KeyError("___from_numpy(L['a'])")


def test_a_recompile_rule_that_raises_is_counted_and_the_next_rule_answers(monkeypatch):
    scale = [2]

    @torch.compile(backend="eager", dynamic=False)
    def f(x, k):
        return x * k

    def run():
        return [f(torch.ones(3), k) for k in (2, 3)]

    r0, _ = captured(run)
    want = [(rc.explanation, rc.suggestion.title if rc.suggestion else "") for rc in r0.recompiles]
    assert want and not doctor_errors(r0)
    broken = recompiles_mod.RecompileRule(recompiles_mod.RULES[0].kind, "a test rule that raises", _raises)
    monkeypatch.setattr(recompiles_mod, "RULES", [broken, *recompiles_mod.RULES])
    r, _ = captured(run)
    assert [(rc.explanation, rc.suggestion.title if rc.suggestion else "") for rc in r.recompiles] == want
    errors = doctor_errors(r)
    assert len(errors) == len(r.recompiles) and all("KeyError" in e and "recompile rule" in e for e in errors)
    from ipycompile.views.phrases import CLI_HINTS  # noqa: F401  (the details line below reads the same counts)
    assert sum(v for k, v in r.stats.parse_errors.items() if k.startswith("doctor:")) == len(errors)
    del scale


def test_a_break_rule_that_raises_is_counted_and_the_other_breaks_keep_their_answers(monkeypatch):
    def fn(x):
        print("step")  # a break remove_print answers
        y = x.sin()
        torch._dynamo.graph_break()
        return y.cos()

    def run():
        return torch.compile(fn, backend="eager")(torch.ones(3))

    r0, _ = captured(run)
    want = [b.suggestion.title for b in r0.graph_breaks]
    assert len(want) == 2 and not doctor_errors(r0)
    broken = break_rules.Rule(break_rules.RULES[0].kind, "a test rule that raises", _raises, _raises)
    monkeypatch.setattr(break_rules, "RULES", [broken, *break_rules.RULES])
    import ipycompile.analysis.breaks as breaks_pkg
    monkeypatch.setattr(breaks_pkg, "RULES", [broken, *breaks_pkg.RULES])
    r, _ = captured(run)
    assert [b.suggestion.title for b in r.graph_breaks] == want
    assert len(doctor_errors(r)) == 2 and all("break rule" in e for e in doctor_errors(r))


# -- 1. code that fits the user's objects: a register_fake written from the op's schema ---------------------
_OPS = {
    # one argument, one tensor; its fake raises NotImplementedError (GB0087, a break)
    "gain": ("""
        @torch.library.custom_op("{ns}::gain", mutates_args=())
        def gain(x: torch.Tensor) -> torch.Tensor:
            return x * 3

        @gain.register_fake
        def _(x):
            raise NotImplementedError

        def f(x, y):
            return gain(x).relu() + y
    """, 1),
    # three arguments, a list of three tensors the caller unpacks; fake raises
    "bands": ("""
        from typing import List

        @torch.library.custom_op("{ns}::bands", mutates_args=())
        def bands(x: torch.Tensor, shift: int, alpha: float) -> List[torch.Tensor]:
            return [x * alpha, x + shift, x.flip(0)]

        @bands.register_fake
        def _(x, shift, alpha):
            raise NotImplementedError

        def f(x, y):
            lo, mid, hi = bands(x, 2, 0.5)
            return lo + mid * hi - y
    """, 1),
    # a list read by index, never unpacked
    "spread": ("""
        from typing import List

        @torch.library.custom_op("{ns}::spread", mutates_args=())
        def spread(x: torch.Tensor, y: torch.Tensor) -> List[torch.Tensor]:
            return [x + y, x - y, x * y, x / (y.abs() + 1)]

        @spread.register_fake
        def _(x, y):
            raise NotImplementedError

        def f(x, y):
            parts = spread(x, y)
            return parts[0].sum() + parts[3].mean()
    """, 1),
    # a torch.library op with a CPU kernel only (GB0090), a tuple of two, a keyword-only default
    "moments": ("""
        lib = torch.library.Library("{ns}", "FRAGMENT")
        lib.define("moments(Tensor a, Tensor b, *, float eps=1e-05) -> (Tensor, Tensor)")

        def _moments(a, b, *, eps=1e-05):
            return (a * b + eps, (a - b) ** 2)

        lib.impl("moments", _moments, "CPU")

        def f(x, y):
            m, v = torch.ops.{ns}.moments(x, y, eps=0.1)
            return (m + v).tanh()
    """, 1),
    # no fake at all: the compile fails (GB4315), a tuple of a tensor and a size
    "top": ("""
        from typing import Tuple

        @torch.library.custom_op("{ns}::top", mutates_args=())
        def top(x: torch.Tensor, k: int) -> Tuple[torch.Tensor, torch.Tensor]:
            return x.clamp(min=k), x.abs()

        def f(x, y):
            a, b = top(x, 1)
            return a * b + y
    """, 0),
}


@pytest.mark.parametrize("case", sorted(_OPS))
def test_a_register_fake_is_written_from_the_ops_schema_and_removes_the_break(notebook, case):
    """Custom ops of 1 to 3 arguments returning a tensor, a list of tensors, a tuple, without a working fake:
    the doctor's ``register_fake``, run as given, leaves a compile with no break and no failure, and the
    compiled outputs equal eager ones."""
    src, breaks = _OPS[case]
    namespace = f"cls40_{case}"
    ns = notebook("import torch\n" + textwrap.dedent(src).replace("{ns}", namespace), name=f"ops_{case}.py")
    x, y = torch.randn(6, 4), torch.randn(6, 4)
    expected = ns["f"](x, y)

    def run():
        try:
            return torch.compile(ns["f"], backend="eager")(x, y)
        except Exception as exc:  # noqa: BLE001 - the op with no fake fails the compile: the report has it
            return exc

    r, (out,) = captured(run)
    items = [*r.graph_breaks, *r.failures]
    assert len(r.graph_breaks) == breaks, [b.reason for b in r.graph_breaks]
    fixes = [i.suggestion for i in items if i.suggestion is not None and i.suggestion.kind == "register_fake"]
    assert len(fixes) == 1, [(i.reason if hasattr(i, "reason") else i.type, i.suggestion) for i in items]
    assert r.op_schemas and r.op_schemas[0].name == f"{namespace}::{case}"
    code = fixes[0].code
    exec(code, ns)  # noqa: S102 - the fix as a user runs it, in the notebook
    r2, (out2,) = captured(run)
    assert not r2.graph_breaks and not r2.failures, (code, [b.reason for b in r2.graph_breaks])
    assert not isinstance(out2, Exception), (code, out2)
    torch.testing.assert_close(out2, expected)
    # the schema travels with the report
    back = ipycompile.CompileReport.from_json(r.to_json())
    assert back.op_schemas == r.op_schemas


def test_the_ops_schema_travels_in_the_capture_log(tmp_path):
    """A log read elsewhere (where the op is not registered) keeps the schema capture read: the log carries it."""
    @torch.library.custom_op("cls40_log::gain", mutates_args=())
    def gain(x: torch.Tensor, k: int) -> torch.Tensor:
        return x * k

    @gain.register_fake
    def _(x, k):
        raise NotImplementedError

    torch._dynamo.reset()
    with ipycompile.capture(tmp_path) as cap:
        torch.compile(lambda x: gain(x, 2) + 1, backend="eager")(torch.ones(3))
    back = ipycompile.load_trace(cap.trace_path)
    assert back.op_schemas == cap.report.op_schemas and back.op_schemas[0].arguments[1].name == "k"
    assert "def _(x, k):" in back.graph_breaks[0].suggestion.code


# -- 2. a setting advised with what follows it ---------------------------------------------------------------
_AFTER_DYNAMIC_OP = """
    import torch

    def counts(x):  # torch.unique, then a Python loop over its integer values
        u = torch.unique(x.long())
        total = x.new_zeros(())
        for v in u.tolist():
            total = total + (x.long() == v).sum() * v
        return total

    def positives(x):  # masked_select, then a Python loop over the elements
        sel = torch.masked_select(x, x > 0)
        out = x.sum()
        for v in sel:
            out = out + v
        return out

    def above(x):  # boolean-mask indexing, then a loop over range of its size
        big = x[x > 0.5]
        n = big.numel()
        acc = x.new_zeros(())
        for i in range(n):
            acc = acc + big[i] * i
        return acc

    def first_hit(x):  # nonzero, then its first index read as a Python number
        where = torch.nonzero(x > 1)
        k = where[0, 0].item()
        return x[k:].sum()

    def weighted(x):  # masked_select used in tensor arithmetic only: the setting keeps it in the graph
        sel = torch.masked_select(x, x > 0)
        return sel.sum() * 2 + x.mean()
"""


@pytest.mark.parametrize("name,moves", [("counts", True), ("positives", True), ("above", True), ("first_hit", True),
                                        ("weighted", False)])
def test_a_dynamic_output_shape_setting_is_advised_only_where_the_code_after_the_op_lets_it_hold(notebook, name, moves):
    """``capture_dynamic_output_shape_ops`` for an op whose result the code then loops over in Python or reads as
    numbers only moves the break (or makes the call raise): the doctor says so and gives no setting as the fix;
    where the code after the op needs no Python value of it, the setting is the fix. Both checked by applying
    the setting."""
    ns = notebook(_AFTER_DYNAMIC_OP, name="after_dynamic_op.py")
    fn = ns[name]
    x = torch.tensor([0.3, -1.0, 2.0, 0.7, 2.0, 3.0, 0.0])
    expected = fn(x)
    r, _ = captured(lambda: torch.compile(fn, backend="eager")(x))
    first = [b for b in r.graph_breaks if b.gb_code == "GB0036"]
    assert len(first) == 1, [(b.gb_code, b.reason) for b in r.graph_breaks]
    s = first[0].suggestion
    assert s is not None and s.kind == "capture_dynamic_output_shape_ops", s
    setting = "torch._dynamo.config.capture_dynamic_output_shape_ops = True"
    # what applying the setting does, on the user's function
    r2, out = with_setting("capture_dynamic_output_shape_ops", fn, x)
    stays = isinstance(out, Exception) or bool(r2.graph_breaks) or bool(r2.failures)
    assert stays == moves, (name, out, [(b.gb_code, b.frame.lineno) for b in r2.graph_breaks])
    if moves:
        assert setting not in s.code and not s.code, s.code
        assert "not the fix" in s.explanation and re.search(r"line \d+", s.title), s
    else:
        assert s.code == setting, s
        torch.testing.assert_close(out, expected)
    # no other break of the function is given a setting that leaves its break either
    for b in r.graph_breaks:
        if b.suggestion is not None and b.suggestion.code.startswith("torch._dynamo.config."):
            key = b.suggestion.code.split(".")[-1].split(" =")[0]
            r3, _ = with_setting(key, fn, x)
            assert not any((c.gb_code, c.frame.lineno) == (b.gb_code, b.frame.lineno) for c in r3.graph_breaks), b


# -- 3. code the user does not own: the library's own switch, one answer per problem -------------------------
def _cell_breaks(source: str, ns: dict):
    torch._dynamo.reset()
    run = ipycompile.run_cell(source, ns, backend="eager", runs=1, record=False)
    return run.report


@pytest.mark.parametrize("family,call,switch", [
    ("llama", "out = model(ids, use_cache=False, output_hidden_states=True)", "output_hidden_states"),
    ("bert", "out = model(ids, return_dict=True, output_attentions=True)", "output_attentions"),
])
def test_a_library_break_under_a_switch_of_the_users_call_gets_that_switch_as_the_lever(family, call, switch):
    """A transformers model, a notebook global, called with a switch (``output_hidden_states=True``) whose code
    breaks in the library: the answer names that switch (not the other keywords of the call), written against
    the user's own line; applied, the library's breaks under it are gone and the outputs equal eager. The answer
    is read from the recorded log of the cell (``tests/inputs``); the switch is applied live on BERT (the same
    lever, the same door: Llama's differs only in what is read)."""
    name = f"library-switch-{family}"
    assert recorded.recipe(name).calls.strip().endswith(call)  # the cell recorded is the call named here
    r = recorded.report(name)
    # the lever is the answer where no rule had one; where a rule answered (a warm-up call that keeps the outputs),
    # the rule's answer stays and the switch is added to its words as another lever
    levers = [b for b in r.graph_breaks if b.suggestion is not None and (
        b.suggestion.kind == "library_switch" or f"Another lever: `{switch}=False` in your call" in b.suggestion.explanation)]
    assert levers, [(b.gb_code, b.suggestion and b.suggestion.title) for b in r.graph_breaks]
    for b in levers:
        s = b.suggestion
        if s.kind != "library_switch":
            continue
        assert f"`{switch}=False`" in s.title and s.standing == "to try", (s.title, s.standing)
        assert s.code == call.replace(f"{switch}=True", f"{switch}=False"), s.code
        assert s.first_line == s.last_line == 2  # it rewrites the user's own line of the cell
    if family != "bert":
        return
    # applied, on a fresh model of the same weights (the library's one-time set-up has not run on it)
    ns2 = recorded.namespace(name)
    r2 = _cell_breaks(f"with torch.no_grad():\n    {call.replace(f'{switch}=True', f'{switch}=False')}\n", ns2)
    sites = {r.where(b.stop.filename, b.stop.lineno) for b in levers}  # as the user reads them: the same anywhere
    assert not sites & {r2.where(b.stop.filename, b.stop.lineno) for b in r2.graph_breaks}, [b.reason for b in r2.graph_breaks]
    with torch.no_grad():
        eager = ns2["model"](ns2["ids"])
    torch.testing.assert_close(ns2["out"].logits, eager.logits)
    assert getattr(ns2["out"], switch.replace("output_", "")) is None  # what the switch added is gone, as said


def test_a_keyword_of_the_users_call_that_guards_no_break_gets_no_switch_lever():
    """A keyword of the call that guards none of the library's breaks is named as no lever: Llama called with
    ``use_cache=False, output_hidden_states=True`` breaks under the second only (read from the recorded log of the
    cell; called with ``use_cache=False`` alone, transformers 5's Llama has no break at all)."""
    name = "library-switch-llama"
    assert "use_cache=False" in recorded.recipe(name).calls
    r = recorded.report(name)
    assert r.graph_breaks
    assert not any(b.suggestion is not None and "use_cache" in b.suggestion.title for b in r.graph_breaks)


def test_a_break_repeated_in_every_layer_of_a_library_model_is_one_problem_with_one_answer():
    """A break in a library line that every layer of a model reaches is one item (grouped by the library line and
    the reason), with one answer, whatever the number of layers: the first screen and the breaks tab count the
    problems of a 1-layer and a 2-layer model alike (the recorded logs of the same cell)."""
    answers, shown = {}, {}
    for layers in (1, 2):
        r = recorded.report(f"library-attentions-llama-{layers}")
        assert r.graph_breaks
        answers[layers] = sorted((b.gb_code, b.stop.lineno, b.suggestion.title) for b in r.graph_breaks)
        assert layers == 1 or any(b.count >= layers for b in r.graph_breaks)  # a break hit once per layer ...
        text = str(r)  # the first screen, then every tab
        shown[layers] = {r.where(b.stop.filename, b.stop.lineno): text.count(r.where(b.stop.filename, b.stop.lineno))
                         for b in r.graph_breaks}
    assert answers[1] == answers[2], answers
    assert shown[1] == shown[2], shown  # ... is shown as often with 2 layers as with 1


def _evaluates(path: str, ns: dict) -> bool:
    try:
        eval(path.replace("[i]", "[0]"), {}, ns)  # noqa: S307 - the test's own namespace
    except Exception:  # noqa: BLE001
        return False
    return True


@pytest.mark.parametrize("family", ["llama", "bert"])
def test_a_library_break_with_no_lever_says_so_and_gives_the_levers_that_apply(family):
    """A break in transformers' code that no rule answers and no switch of the user's call guards (``ContextVar.get``
    in its output-capturing hook, GB0156): the answer says where the library breaks and that the user's code cannot
    change it; every module it names evaluates on the user's model; it names no library version where the kept
    source checks none; and its ``torch.compiler.disable`` around the user's call, applied, leaves no break in the
    library (the one break left is the disabled call on the user's line) and the outputs equal eager. The answer is
    read from the recorded log of the cell; the lever is applied live on Llama (the same lever, the same door:
    BERT's differs only in what is read)."""
    name = f"library-attentions-{family}-2"
    r = recorded.report(name)
    ns = recorded.namespace(name)  # the namespace the cell ran in: the names the answer prints evaluate there
    none = [b for b in r.graph_breaks if b.suggestion is not None and b.suggestion.kind == "no_lever"]
    assert not any(b.suggestion.kind == "unknown" for b in r.graph_breaks if r.owner(b.stop.filename).value == "library")
    if not any(b.gb_code == "GB0156" for b in r.graph_breaks):  # torch's own break list is the evidence
        pytest.skip(f"torch {torch.__version__} traces ContextVar.get here (no GB0156): every library break has a "
                    "rule's answer, none is left without a lever")
    assert none, [(b.gb_code, b.suggestion and b.suggestion.kind) for b in r.graph_breaks]
    for b in none:
        s = b.suggestion
        text = s.title + "\n" + s.explanation
        assert r.where(b.stop.filename, b.stop.lineno) in s.title and "Nothing in your code changes" in text, text
        assert s.standing == "advice" and not s.code
        paths = [m for m in re.findall(r"`([^`]+)`", text) if re.fullmatch(r"model(\.\w+|\[i\])*", m)]
        assert paths and all(_evaluates(m, ns) for m in paths), paths
        assert "version" not in text.split("What the break is")[0], text
        assert "`torch.compiler.disable(model)(...)`" in text, text
    if family != "llama":
        return
    # the disable lever applied on the user's line: the library runs uncompiled, nothing breaks, outputs equal
    r2 = _cell_breaks("with torch.no_grad():\n    out = torch.compiler.disable(model)(ids, output_attentions=True)\n",
                      ns)
    # the one break left is the disabled call itself, on the user's line, by design
    assert all(r2.owner(b.stop.filename).value == "user" and b.stop.lineno == 2 for b in r2.graph_breaks), \
        [(b.gb_code, b.reason, b.stop) for b in r2.graph_breaks]
    with torch.no_grad():
        eager = ns["model"](ns["ids"], output_attentions=True)
    torch.testing.assert_close(ns["out"].logits, eager.logits)


def test_breaks_under_one_library_switch_keep_their_rules_answers_with_the_switch_as_another_lever():
    """transformers takes a lock (GB0142) and registers a hook (GB0467) under ``output_attentions=True``. Where a
    rule answers a break (the hook: a warm-up call before compiling, which keeps the outputs), that answer stays
    and the switch, which drops the attentions, is another lever in its words; breaks whose answers write the same
    code on one user line are one first-screen problem; the Graph breaks tab lists each break."""
    from ipycompile.views.first_screen import _one_answer, problems

    r = recorded.report("library-attentions-llama-2")
    under = [b for b in r.graph_breaks if b.suggestion is not None and (
        b.suggestion.kind == "library_switch" or "Another lever: `output_attentions=False`" in b.suggestion.explanation)]
    assert len({b.gb_code for b in under}) >= 2, [(b.gb_code, b.suggestion and b.suggestion.kind) for b in r.graph_breaks]
    assert all(b.suggestion.kind != "unknown" for b in under)
    groups = _one_answer(r)
    shown = [p for p in problems(r) if p.kind == "graph_break"]
    assert len(shown) == len(groups) <= len(r.graph_breaks)
    for g in groups:
        codes = {b.suggestion.code.strip() for b in g if b.suggestion is not None}
        assert len(g) == 1 or (len(codes) == 1 and codes != {""}), [(b.gb_code, b.suggestion.kind) for b in g]
    tab = str(r).split("Graph breaks", 1)[-1]
    assert all(b.reason in tab for b in r.graph_breaks)


# -- 2. mark_unbacked given as code only where the compiled code does not branch on the size -------------------
_SIZE_USES = """
    import torch

    def squeeze_one(x):  # an `if` on the size
        if x.shape[0] == 1:
            return x.squeeze(0).sum()
        return x.sum(0).sum()

    def per_row(x):  # a Python loop over range of the size
        total = x.new_zeros(())
        for i in range(x.size(0)):
            total = total + x[i].max()
        return total

    def scaled(x):  # no branch on the size: the mark holds
        return (x * 2).sum(0)
"""


@pytest.mark.parametrize("name,branches", [("squeeze_one", True), ("per_row", True), ("scaled", False)])
def test_mark_unbacked_is_code_only_where_the_compiled_code_does_not_branch_on_that_size(notebook, name, branches):
    """A size that goes 3 → 1 → 4: where the compiled function branches on it, the doctor says so and gives no
    ``mark_unbacked`` code (applied, the mark makes the call raise or break); where it does not, the mark is the
    code, and applied it leaves no recompile and the outputs equal eager."""
    ns = notebook(_SIZE_USES, name="size_uses.py")
    fn = ns[name]
    xs = [torch.randn(n, 4) for n in (3, 1, 4)]
    r, _ = captured(lambda: [torch.compile(fn, backend="eager")(x) for x in xs])
    marks = [rc.suggestion for rc in r.recompiles if rc.suggestion is not None and rc.suggestion.kind == "mark_unbacked"]
    assert marks, [(rc.suggestion and rc.suggestion.title) for rc in r.recompiles]
    s = marks[0]

    def marked():
        torch._dynamo.decorators.mark_unbacked(xs[0], 0)
        try:
            return [torch.compile(fn, backend="eager")(x) for x in xs]
        except Exception as exc:  # noqa: BLE001 - GuardOnDataDependentSymNode: the call raises
            return exc

    r2, (out,) = captured(marked)
    if branches:
        assert not s.code and "mark_unbacked` is not the fix here" in s.explanation, s
        assert re.search(r"`(if x\.shape\[0\] == 1:|for i in range\(x\.size\(0\)\):)` at ", s.explanation), s.explanation
        assert isinstance(out, Exception) or r2.graph_breaks or r2.recompiles, out  # the claim, checked
    else:
        assert s.code.startswith("torch._dynamo.decorators.mark_unbacked(x, 0)"), s
        assert not isinstance(out, Exception) and not r2.recompiles and not r2.graph_breaks
        for a, x in zip(out, xs):
            torch.testing.assert_close(a, fn(x))


# -- a function the user's call only leads to: its parameters are not the call's arguments --------------------
_LED_TO = """
    import torch
    from torch import nn

    def drop_loops(ei):  # torch compiles it as a frame of its own: the break inside it
        keep = ei[0] != ei[1]
        torch._dynamo.graph_break()
        return ei[:, keep]

    class Net(nn.Module):
        def forward(self, x, edge_index):
            h = x * 2
            ei = drop_loops(edge_index)
            return h.sum() + ei.sum()

    net = torch.compile(Net(), backend="eager")
"""


def test_a_function_a_modules_call_leads_to_is_not_given_the_calls_arguments(notebook):
    """``net(x, edge_index)`` enters ``forward``; ``drop_loops(ei)``, which torch compiles as a frame of its own
    after the break inside it, recompiles on ``ei``'s dim 1. Its first parameter is not the call's first
    argument: no answer names dim 1 of ``x`` (whose dim 1 never changed) or writes a mark on it."""
    ns = notebook(_LED_TO, name="led_to.py")
    graphs = [(torch.randn(5, 4), torch.randint(0, 5, (2, n))) for n in (9, 13, 17)]
    r, _ = captured(*[lambda g=g: ns["net"](*g) for g in graphs])
    led = [rc for rc in r.recompiles if rc.function == "drop_loops"]
    assert led, [(rc.function, rc.reasons) for rc in r.recompiles]
    for rc in led:
        text = said(rc)
        assert not any(g.name == "x" for g in rc.guards), [(g.name, g.origin) for g in rc.guards]
        assert "`x`" not in text and "mark_dynamic(x" not in text, text
        # the value in the words of the function's own source, with where it comes from
        assert "passes to `drop_loops`" in text, text


# -- a silent change of results: the whole training step traced ---------------------------------------------
_STEP = """
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

    def grads(x):  # the step's backward only: the optimizer steps outside the compiled code
        loss = model(x).pow(2).mean()
        loss.backward()
        return loss.detach()
"""


@pytest.mark.parametrize("name", ["step", "grads"])
def test_trace_autograd_ops_is_not_code_where_the_compiled_code_reads_the_gradients_after(notebook, name):
    """``trace_autograd_ops = True`` for the break at ``loss.backward()``: where the same compiled code then reads
    the gradients (``opt.step()``), the setting can leave them unseen, silently: applied here to a step with its
    ``zero_grad()`` between forward and backward, the weights do not move where eager's do. The doctor gives it
    in words with why, never as code. Where the compiled code only computes the gradients (the step outside), the
    setting is the code, and applied it gives eager's gradients."""
    xs = [torch.randn(3, 4) for _ in range(3)]

    def after(setting: bool, compiled: bool):
        ns = notebook(_STEP, name="train_step.py")
        model, opt = ns["model"], ns["opt"]
        w0 = model.weight.detach().clone()
        torch._dynamo.reset()
        with torch._dynamo.config.patch(trace_autograd_ops=setting):
            fn = torch.compile(ns[name], backend="eager") if compiled else ns[name]
            for x in xs:
                if name == "grads":
                    opt.zero_grad()
                fn(x)
                if name == "grads":
                    got = model.weight.grad.clone()
                    opt.step()
        return w0, model.weight.detach().clone(), (got if name == "grads" else None)

    w0, eager, eager_grad = after(False, False)
    _, traced, traced_grad = after(True, True)
    assert not torch.equal(w0, eager)
    if name == "step":
        assert torch.equal(w0, traced)  # the traced step did not train
    else:
        torch.testing.assert_close(traced, eager)
        torch.testing.assert_close(traced_grad, eager_grad)
    ns = notebook(_STEP, name="train_step.py")
    r, _ = captured(lambda: torch.compile(ns[name], backend="eager")(xs[0]))
    bw = [b for b in r.graph_breaks if b.gb_code == "GB0123"]
    assert bw and bw[0].suggestion is not None, [(b.gb_code, b.reason) for b in r.graph_breaks]
    s = bw[0].suggestion
    if name == "step":
        assert not s.code and s.standing == "advice", s
        assert "`opt.step()` after it" in s.explanation and "silently" in s.explanation, s
    else:
        assert s.code == "torch._dynamo.config.trace_autograd_ops = True", s


# -- a setting advised without what follows: Python numbers whose values the code then needs -------------------
_NUMBERS_USED = """
import torch

scales = (torch.tensor(1.0), torch.tensor(2.0), torch.tensor(3.0))


def by_rank(x):  # the ranks as Python numbers, then each an index into a tuple
    ranks = (x > 0).long().tolist()
    out = x.sum()
    for r in ranks:
        out = out * scales[r]
    return out


def first_positive(x):  # the signs as Python numbers, then a test on one
    signs = (x > 0).long().tolist()
    if signs[0]:
        return x * 2
    return x
"""


@pytest.mark.parametrize("name", ["by_rank", "first_positive"])
def test_capture_scalar_outputs_is_not_code_where_the_numbers_values_are_needed_after(tmp_path, monkeypatch, name):
    """A library's ``.tolist()`` (an installed package: its code is not the user's to rewrite) whose numbers its
    code then indexes with or tests: with ``capture_scalar_outputs`` they are symbolic with no value while
    tracing, so the compiled call raises (or breaks again) there: applied here, on the user's call. The doctor
    reads the library's code after the line, names that use and gives no code."""
    lib = tmp_path / "site-packages"
    lib.mkdir()
    (lib / "rankslib.py").write_text(_NUMBERS_USED)
    monkeypatch.syspath_prepend(str(lib))
    sys.modules.pop("rankslib", None)
    import rankslib

    fn = getattr(rankslib, name)
    x = torch.tensor([0.5, -1.0, 2.0, 3.0])
    r, _ = captured(lambda: torch.compile(fn, backend="eager")(x))
    answered = [b for b in r.graph_breaks if b.suggestion is not None and b.suggestion.kind == "capture_scalar_outputs"]
    assert answered, [(b.gb_code, b.reason, b.suggestion and b.suggestion.kind) for b in r.graph_breaks]
    for b in answered:
        s = b.suggestion
        assert not s.code and "capture_scalar_outputs is not the fix" in s.title, s
        assert ("scales[r]" if name == "by_rank" else "signs[0]") in s.title, s.title
    r2, out = with_setting("capture_scalar_outputs", fn, x)
    assert isinstance(out, Exception) or r2.graph_breaks or r2.failures, out
    sys.modules.pop("rankslib", None)


# -- the recompile limit: the cause's fix given only where it alone keeps the function compiled ----------------
def test_the_recompile_limits_answer_gives_the_causes_fix_as_code_only_where_it_alone_is_enough(notebook):
    """A function hits the limit on a size of `x`, after versions made for the sizes of `y`: `x`'s mark alone
    leaves those, and the limit is hit again (applied here). The limit's answer says so, with no code of the
    mark; the recompiles of `y` keep their own answer."""
    ns = notebook("""
        import torch

        def total(x, y):
            return x.sum() + y.sum()
    """, name="limit_cell.py")
    sizes = [(4, 2), (4, 3), (4, 4), (4, 5), (6, 6)]

    def run(mark_x: bool):
        torch._dynamo.reset()
        cf = torch.compile(ns["total"], backend="eager")
        for n, m in sizes:
            x, y = torch.ones(n), torch.ones(m)
            if mark_x:
                torch._dynamo.mark_dynamic(x, 0)
            cf(x, y)

    with torch._dynamo.config.patch(recompile_limit=4, automatic_dynamic_shapes=False):
        r, _ = captured(lambda: run(False))
        fixed, _ = captured(lambda: run(True))
    hit = [rc for rc in r.recompiles if rc.limit_hit]
    assert len(hit) == 1, [(rc.limit_hit, rc.reasons) for rc in r.recompiles]
    s = hit[0].suggestion
    assert s is not None and s.kind == "recompile_limit" and "mark_dynamic(x" not in s.code, s
    assert "size of `y`" in s.explanation and "hit again" in s.explanation, s.explanation
    assert any(rc.limit_hit for rc in fixed.recompiles)  # x's mark alone: the limit is still hit
    assert all("mark_dynamic(y, 0)" in rc.suggestion.code for rc in r.recompiles if not rc.limit_hit)
