"""Models people actually compile, from ``transformers``, checked against torch's own trace.

Each model is built from its config class at a tiny size with random weights
(nothing is downloaded) and run through ``ipycompile.run_cell`` or ``%%compile``
in a real IPython shell. Around each run, torch's structured trace is written to
a file (:func:`tlparse_truth.torch_trace`, as ``TORCH_TRACE`` would) and read by
``tlparse``: the report's compile ids, graph breaks, recompiles, restarts and
failures must be tlparse's, and the report must build quickly.

Two checks per run:

* the whole run, as the trace file saw it: a capture around the run holds the
  same records torch wrote to the file, and ``build_report`` of them must agree
  with tlparse on everything;
* the run's own report (``run.report``, what the user sees): the same, which
  holds because the run keeps every compile inside its capture (Inductor's
  one-time start-up is paid first, outside the trace; timed runs compile nothing).

One difference is by design: a frame Dynamo *skips* (it gives up on the frame
and runs it eagerly, e.g. a graph break inside a loop, GB7000) logs
``compilation_metrics`` with a ``fail_type``, which tlparse lists among its
failures; ipycompile reports it as a compile with status ``skipped`` and keeps
it out of ``report.failures``. So: tlparse's failures == the report's failures
plus its skipped compiles that carry a ``fail_type``, compile id by compile id.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any, Callable

import pytest
import torch
import transformers as tf
from IPython.utils.capture import capture_output

import ipycompile
from tlparse_truth import tlparse_counts, torch_trace

pytestmark = pytest.mark.slow

VOCAB, SEQ, BATCH = 256, 16, 2


# -- the comparison ------------------------------------------------------------
def tlparse_id(compile_) -> str:
    """A compile's id as tlparse writes it: ``1/0``, ``1/0_1`` for its last attempt."""
    return f"{compile_.compile_id}_{compile_.attempt}" if compile_.attempt else str(compile_.compile_id)


def report_counts(report: ipycompile.CompileReport) -> dict:
    """The report's figures in tlparse's terms (see tests/tlparse_truth.py)."""
    ids: set[str] = set()
    for c in report.compiles:  # tlparse files each attempt of a compile under its own id
        ids.add(str(c.compile_id))
        ids.update(f"{c.compile_id}_{a}" for a in range(1, c.attempt + 1))
    attempts = {c.compile_id: c for c in report.compiles}
    return {
        "compile_ids": ids,
        "graph_breaks": report.graph_break_count,
        "recompiles": len(report.recompiles),
        "restarts": sum(len(c.restart_reasons) for c in report.compiles),
        "failure_ids": sorted(tlparse_id(attempts[f.compile_id]) for f in report.failures),
        "skipped_ids": sorted(tlparse_id(c) for c in report.compiles if c.status == "skipped" and c.fail_type),
    }


def assert_agrees(report: ipycompile.CompileReport, tl: dict, what: str) -> None:
    mine = report_counts(report)
    shown = {k: v for k, v in mine.items() if k != "compile_ids"}
    theirs = {k: v for k, v in tl.items() if k != "compile_ids"}
    detail = f"{what}:\n  ipycompile {shown}\n  tlparse    {theirs}"
    assert mine["compile_ids"] == tl["compile_ids"], (
        f"{what}: compile ids only in the report {sorted(mine['compile_ids'] - tl['compile_ids'])}, "
        f"only in tlparse {sorted(tl['compile_ids'] - mine['compile_ids'])}"
    )
    for key in ("graph_breaks", "recompiles", "restarts"):
        assert mine[key] == tl[key], f"{key} differ; {detail}"
    # by design, see the module docstring: skipped frames are tlparse failures, not ipycompile ones
    assert sorted(mine["failure_ids"] + mine["skipped_ids"]) == sorted(tl["failure_ids"]), f"failures differ; {detail}"
    assert len(report.failures) == tl["failures"] - len(mine["skipped_ids"]), detail


@dataclass
class Traced:
    result: Any  # what the run returned
    whole: ipycompile.CompileReport  # build_report of every record of the run
    build_s: float  # how long that build took
    tl: dict  # tlparse's counts for the trace file of the run


def traced(tmp_path, run: Callable[[], Any]) -> Traced:
    """Run ``run()`` with torch's trace written to a file and captured; tlparse reads the file."""
    with torch_trace(tmp_path) as trace, ipycompile.capture() as whole:
        result = run()
    records = list(whole.records)
    t0 = time.perf_counter()
    report = ipycompile.build_report(records)
    build_s = time.perf_counter() - t0
    assert trace.path is not None, "torch logged nothing to the trace file"
    return Traced(result, report, build_s, tlparse_counts(trace.path))


def check(t: Traced, report: ipycompile.CompileReport, what: str) -> None:
    """The whole run and the run's own report both agree with tlparse. (How long the report takes to build is
    a benchmark's figure, benchmarks/cell_latency.py, never a timed assert: these machines are shared.)"""
    assert t.whole.compiles, f"{what}: torch compiled nothing"
    assert_agrees(t.whole, t.tl, f"{what} (every record of the run)")
    assert_agrees(report, t.tl, f"{what} (the run's report)")


def outputs_match(report: ipycompile.CompileReport) -> None:
    eager = report.profile.eager
    assert eager is not None and eager.check.match, eager and eager.check.message


# -- models, once per module ---------------------------------------------------
@pytest.fixture(scope="module")
def input_ids():
    torch.manual_seed(0)
    return torch.randint(3, VOCAB, (BATCH, SEQ))


def _gpt2() -> tf.GPT2LMHeadModel:
    """One block: what generate, a training step and a forward compile (frames, breaks, recompiles) is the
    same with more; each block more only adds tracing time."""
    torch.manual_seed(0)
    config = tf.GPT2Config(n_layer=1, n_embd=64, n_head=2, vocab_size=VOCAB, n_positions=64,
                           bos_token_id=1, eos_token_id=2, pad_token_id=0,
                           resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)  # training: no dropout, so steps compare
    return tf.GPT2LMHeadModel(config)


@pytest.fixture(scope="module")
def gpt2():
    return _gpt2().eval()


def _mixtral(experts: str) -> tf.MixtralForCausalLM:
    """One decoder layer: its experts' graph breaks are those of every layer (a second layer doubled the
    compile time, each resume frame tracing the rest of the model, for one compile more of the same kinds)."""
    torch.manual_seed(0)
    config = tf.MixtralConfig(num_hidden_layers=1, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                              num_key_value_heads=2, vocab_size=VOCAB, num_local_experts=4, num_experts_per_tok=2,
                              max_position_embeddings=64, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    model = tf.MixtralForCausalLM(config).eval()
    model.set_experts_implementation(experts)
    return model


FORWARD = "with torch.no_grad():\n    out = model(input_ids).logits"


# -- the cases -----------------------------------------------------------------
def test_gpt2_decoder_forward(tmp_path, gpt2, input_ids):
    t = traced(tmp_path, lambda: ipycompile.run_cell(
        FORWARD, {"torch": torch, "model": gpt2, "input_ids": input_ids},
        backend="aot_eager", runs=3, compare_eager=True))
    report = t.result.report
    check(t, report, "GPT-2 forward")
    outputs_match(report)
    assert report.graphs_for(report.compiles[0].compile_id, "dynamo")  # Dynamo captured the model's graph


def test_mixtral_eager_experts_break_the_graph_at_the_routing(tmp_path, input_ids):
    """transformers' eager experts (``MixtralExperts.forward``) loop over the experts the
    router picked: ``expert_mask.sum(...).nonzero()`` of the router's top-k indices (an
    output shape that depends on data, GB0036) and ``if expert_idx == self.num_experts``
    on a tensor (data-dependent branching, GB0170). The router itself (linear, softmax,
    top-k) traces whole."""
    model = _mixtral("eager")
    t = traced(tmp_path, lambda: ipycompile.run_cell(
        FORWARD, {"torch": torch, "model": model, "input_ids": input_ids},
        backend="aot_eager", runs=3, compare_eager=True))
    report = t.result.report
    check(t, report, "Mixtral, eager experts")
    outputs_match(report)
    assert report.graph_break_count > 0

    def in_experts(gb, needle):
        return any(f.filename.endswith("modeling_mixtral.py") and needle in f.source_line for f in gb.user_stack)

    sites = [(gb.gb_code, gb.reason, [f"{f} {f.source_line}" for f in gb.user_stack[-2:]]) for gb in report.graph_breaks]
    nonzero = [gb for gb in report.graph_breaks if gb.gb_code == "GB0036" and in_experts(gb, ".nonzero()")]
    assert nonzero, sites
    assert "aten.nonzero" in nonzero[0].detail, nonzero[0].detail  # torch's explanation names the operator
    branch = [gb for gb in report.graph_breaks if gb.gb_code == "GB0170" and in_experts(gb, "if expert_idx == ")]
    assert branch, sites


def test_mixtral_grouped_mm_experts_compile_whole(tmp_path, input_ids):
    """transformers' default experts implementation (grouped_mm) has no data-dependent
    loop: the same model compiles as one graph, and the report says so as tlparse does."""
    model = _mixtral("grouped_mm")
    t = traced(tmp_path, lambda: ipycompile.run_cell(
        FORWARD, {"torch": torch, "model": model, "input_ids": input_ids},
        backend="aot_eager", runs=3, compare_eager=True))
    report = t.result.report
    check(t, report, "Mixtral, grouped_mm experts")
    outputs_match(report)
    assert report.graph_break_count == 0 == t.tl["graph_breaks"]


def test_bert_encoder_through_compile_magic(tmp_path, ip):
    torch.manual_seed(0)
    config = tf.BertConfig(num_hidden_layers=1, hidden_size=64, intermediate_size=128, num_attention_heads=2,
                           vocab_size=VOCAB, max_position_embeddings=64)
    model = tf.BertModel(config).eval()
    try:
        ip.user_ns.update(torch=torch, bert=model, ids=torch.randint(0, VOCAB, (BATCH, SEQ)),
                          mask=torch.ones(BATCH, SEQ, dtype=torch.long))
        cell = ("%%compile --backend aot_eager --runs 3 --compare-eager -o bert_report\n"
                "with torch.no_grad():\n"
                "    hidden = bert(input_ids=ids, attention_mask=mask).last_hidden_state")

        def run():
            with capture_output() as shown:
                res = ip.run_cell(cell, store_history=True)
            return res, shown

        t = traced(tmp_path, run)
        res, shown = t.result
        assert res.error_in_exec is None, res.error_in_exec
        report = ip.user_ns["bert_report"]
        assert shown.outputs and shown.outputs[0].data["text/plain"].startswith("ipycompile: ")  # the first screen
        assert "\nSummary\n-------\n" in shown.outputs[0].data["text/plain"]  # then the tabs
        assert ip.user_ns["hidden"].shape == (BATCH, SEQ, 64)
    finally:
        for name in ("bert", "ids", "mask", "hidden", "bert_report"):
            ip.user_ns.pop(name, None)
    check(t, report, "BERT via %%compile")
    outputs_match(report)


def test_vit_with_inductor_generates_kernels(tmp_path):
    torch.manual_seed(0)
    config = tf.ViTConfig(num_hidden_layers=1, hidden_size=64, intermediate_size=128, num_attention_heads=2,
                          image_size=32, patch_size=8, num_channels=3)
    model = tf.ViTModel(config).eval()
    ns = {"torch": torch, "model": model, "pixels": torch.randn(BATCH, 3, 32, 32)}
    # Inductor's one-time process start-up, paid before the traced run, as %%compile pays it
    # before its capture (a compile of its own that the run's report leaves out by design)
    ipycompile.run_cell("y = x * 2", {"x": torch.ones(4)}, backend="inductor", runs=1, record=False)
    t = traced(tmp_path, lambda: ipycompile.run_cell(
        "with torch.no_grad():\n    out = model(pixel_values=pixels).last_hidden_state", ns,
        backend="inductor", runs=3, compare_eager=True))
    report = t.result.report
    assert report.profile.first_call.one_time_s is None  # the start-up was paid above, outside the trace
    check(t, report, "ViT with Inductor")
    outputs_match(report)
    generated = [k for k in report.kernels if k.backend == "cpp" and k.kind != "extern"]
    assert generated, [(k.name, k.backend, k.kind) for k in report.kernels]
    compiled = {c.compile_id for c in report.compiles}
    assert all(k.compile_id in compiled for k in report.kernels)
    assert any("mm" in op for k in report.kernels for op in k.aten_ops)  # the linear layers


def test_training_step_with_backward_and_optimizer(tmp_path, input_ids):
    model = _gpt2().train()
    reference = copy.deepcopy(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = ("out = model(input_ids, labels=input_ids)\n"
            "out.loss.backward()\n"
            "opt.step()\n"
            "opt.zero_grad()\n"
            "loss = out.loss.detach()")
    t = traced(tmp_path, lambda: ipycompile.run_cell(
        step, {"model": model, "opt": opt, "input_ids": input_ids}, backend="aot_eager", runs=1, warmup=0))
    report = t.result.report
    check(t, report, "GPT-2 training step")
    assert any(g.stage == "aot_backward" for g in report.graphs), "the backward was not compiled"
    # the cell ran more than once to measure it, but trained the model as one plain run of it does:
    # the state the first call changed is put back after the measuring calls (run/state.py)
    assert report.profile.steady.warmup + report.profile.steady.runs >= 1
    assert {"model", "opt"} <= set(report.profile.kept.restored)
    ref_ns = {"model": reference, "opt": torch.optim.AdamW(reference.parameters(), lr=1e-3), "input_ids": input_ids}
    exec(step, ref_ns)
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {m}")
    assert not torch.equal(next(model.parameters()), next(_gpt2().parameters()))  # it did train


def test_generate_a_few_tokens(tmp_path, gpt2, input_ids):
    new = 4
    ns = {"model": gpt2, "input_ids": input_ids}
    t = traced(tmp_path, lambda: ipycompile.run_cell(
        f"out = model.generate(input_ids, max_new_tokens={new}, min_new_tokens={new}, do_sample=False)",
        ns, backend="aot_eager", runs=1, warmup=0, compare_eager=True))
    report = t.result.report
    check(t, report, "GPT-2 generate")
    outputs_match(report)
    assert ns["out"].shape == (BATCH, SEQ + new)
