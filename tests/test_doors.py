"""One answer through every door: the same user code gives the same report however it is run.

Each test runs one workload (tests/doors.py: transformers families called as people call them,
the tutorials' kinds of model, user functions of the doctor's corpus) through several doors (a
``%%compile`` cell in a real IPython shell with the model a global, ``run_cell``, ``capture()``
around a compiled closure, ``torch.compile(model)``, ``model.compile()``, a compiled ``forward``,
``DDP(torch.compile(model))``, a ``TORCH_TRACE`` log read by ``load_trace`` and by the CLI, a
``torchrun`` job of two ranks) and asserts that every door's fingerprint (graphs, stages, breaks,
recompiles, unrolled loops, kernels, the first screen's problems) equals the first door's. A
difference is a bug of the door that differs, unless torch itself compiles differently there:
those cases (``torch.compile(DDP(model))``, FSDP2) are tests of their own, with torch's own
counters as the evidence. The whole matrix (both sizes, every call form, every door) is
``benchmarks/doors.py``; the suite runs this slice of it.
"""

from __future__ import annotations

import pytest

import doors

pytestmark = pytest.mark.slow

#: the doors every workload goes through in the slice; the module doors take turns (below)
BASE = ("cell", "run_cell", "closure", "compiled")
MODULE_DOORS = ("module.compile", "compiled forward", "DDP(compile)")
#: each family with one call form, the forms and the module doors taking turns
FAMILY_CASES = [(f, ("ids", "logits", "batch")[i % 3], MODULE_DOORS[i % 3]) for i, f in enumerate(doors.FAMILIES)]

MODELING = {"gptneox": "gpt_neox", "phi3": "phi3", "qwen2": "qwen2"}


#: doors whose compiled frame is the module's own call: it returns the model's whole output
WHOLE_OUTPUT = ("compiled", "module.compile", "compiled forward", "DDP(compile)", "TORCH_TRACE", "CLI", "torchrun")


#: each (door, workload) fingerprint taken in this module: a test that needs one another test took reads it
#: (the fingerprints are read, never changed); the tests that read torch's counters compile afresh
_FINGERPRINTS: dict[tuple[str, str], dict] = {}


def through(door: str, w: doors.Workload) -> dict:
    """``doors.through(door, w)``, taken once per module."""
    key = (door, w.name)
    if key not in _FINGERPRINTS:
        _FINGERPRINTS[key] = doors.through(door, w)
    return _FINGERPRINTS[key]


def agree(w: doors.Workload, names) -> dict:
    """Every door's fingerprint; asserts that each equals the first door's.

    One difference is torch's, not a door's: where the user's expression keeps part of the output
    (``model(ids).logits``), a cell or a closure compiles that expression and torch drops the ops
    whose values only the rest of the output holds (Mistral's cache slices), while a compiled module
    returns the whole output and keeps them. There the module door's graphs may hold more ops (never
    fewer), and the first screen's op counts differ with them; everything else is the same."""
    got = {d: through(d, w) for d in names}
    first = names[0]
    partial = ")." in w.expr
    for d in names[1:]:
        a, b = dict(got[first]), dict(got[d])
        if partial and (d in WHOLE_OUTPUT) != (first in WHOLE_OUTPUT):
            small, big = (a, b) if d in WHOLE_OUTPUT else (b, a)
            assert len(small["graphs"]) == len(big["graphs"]) and all(
                x <= y for x, y in zip(small["graphs"], big["graphs"])), (w.name, d, a["graphs"], b["graphs"])
            for fp in (a, b):
                fp.pop("graphs"), fp.pop("first")
        assert a == b, f"{w.name}: door {d!r} differs from {first!r}: {doors.diff(a, b)}"
    return got[first]


@pytest.fixture(scope="module", autouse=True)
def _one_shell(ip):
    """The cell door runs in the test process's one IPython shell (conftest.py's ``ip``)."""
    doors.SHELL = ip
    yield
    doors.SHELL = None


@pytest.mark.parametrize("family,call,module_door", FAMILY_CASES, ids=[f for f, *_ in FAMILY_CASES])
def test_a_transformers_family_reports_the_same_through_every_door(family, call, module_door):
    w = doors.hf_workload(family, 64, call)
    fp = agree(w, BASE + (module_door,))
    assert len(fp["graphs"]) == 1 and not fp["breaks"], fp
    # the layer stack is placed at the `for` over the layers in the family's own modeling file,
    # never at an activation function or a cache helper, and it is the only loop
    (loop,) = fp["loops"]
    modeling = f"transformers/models/{MODELING.get(family, family)}/modeling_{MODELING.get(family, family)}.py"
    assert loop[0] == modeling and loop[2] == doors.LAYERS, fp
    line = doors.line_of(loop[0], loop[1])
    assert line.lstrip().startswith("for "), (family, line)
    assert fp["problems"] == ["unrolled_loop"]


@pytest.mark.parametrize("name", ["tutorial:mlp", "tutorial:rnn-loop", "tutorial:item-branch", "mlp-resized"])
def test_the_tutorials_models_report_the_same_through_every_door(name):
    w = doors.workload_by_name(name)
    fp = agree(w, BASE + MODULE_DOORS)
    if name == "tutorial:rnn-loop":
        assert fp["loops"] and fp["loops"][0][0] == "doors.py", fp
    if name == "tutorial:item-branch":
        assert fp["breaks"] and "dynamo" in fp["stages"] and "aot_forward" in fp["stages"], fp
    if name == "mlp-resized":
        assert fp["recompiles"] >= 1, fp


def test_a_torch_nn_container_reports_the_same_but_where_torch_records_no_user_line():
    """``nn.Sequential`` of blocks: the loop over its layers is torch's own code
    (``for module in self:``). Every door finds the same graph and the same 3 copies; the place
    differs as torch records it: a cell's nodes carry the cell's line (the user's call), while a
    compiled module, closure or forward has no frame of the user's under the layers, and the
    loop is then shown without a place rather than at a line of torch's."""
    w = doors.workload_by_name("tutorial:sequential")
    got = {d: through(d, w) for d in ("cell", "run_cell", "closure", "compiled", "compiled forward", "DDP(compile)")}
    for d, fp in got.items():
        assert fp["graphs"] == [6] and not fp["breaks"] and [x[2] for x in fp["loops"]] == [3], (d, fp)
    assert got["cell"]["loops"][0][0].startswith("<ipython-input-")
    assert all(fp["loops"][0][:2] == ["", None] for d, fp in got.items() if d not in ("cell", "run_cell"))


def test_model_compile_of_a_torch_nn_container_is_said_to_compile_nothing():
    """torch's own difference: on torch 2.13 ``model.compile()`` on an ``nn.Sequential`` wraps
    ``nn.Module._call_impl``, which Dynamo skips as torch's code, so nothing is compiled (torch's counter
    of graphs stays 0) while ``torch.compile(model)`` compiles the same model; the report says that nothing
    was compiled. Torch 2.14 compiles it (its counter says 1 graph): the report is then the compiled
    module's."""
    from torch._dynamo.utils import counters

    w = doors.workload_by_name("tutorial:sequential")
    counters.clear()
    fp = doors.through("module.compile", w)
    if counters["stats"]["unique_graphs"] == 0:  # torch 2.13 (and 2.11): no frame, nothing compiled
        assert fp["graphs"] == [] and fp["problems"][:1] == ["eager_run"], fp
    else:  # torch 2.14 compiles it: then the report is the compiled module's, with nothing said of eager runs
        compiled = through("compiled", w)
        assert fp["graphs"] == compiled["graphs"] and "eager_run" not in fp["problems"], (fp, compiled)


def test_kernels_are_the_same_through_every_door():
    """Inductor's kernels: the same count from a cell, run_cell, a closure and a compiled module (with
    Inductor's FX graph cache off: see doors.through)."""
    fp = agree(doors.workload_by_name("tutorial:mlp-inductor"), BASE)
    assert fp["kernels"] > 0 and "post_grad" in fp["stages"], fp


def test_the_corpus_user_functions_report_the_same_through_every_door():
    ws = doors.corpus_workloads()
    assert len(ws) == doors.CORPUS_FUNCTIONS
    broke = 0
    for w in ws:
        fp = agree(w, BASE)
        broke += bool(fp["breaks"])
    assert broke >= 3  # the slice holds functions that break, not only clean ones


@pytest.mark.parametrize("name", ["gpt2-64-ids", "tutorial:item-branch"])
def test_a_torch_trace_log_reads_the_same_in_load_trace_and_the_cli(name):
    """A script run with TORCH_TRACE (torch writes the log), read back by ``load_trace`` and by
    ``python -m ipycompile report LOG --json``: the same as capturing the same calls in process."""
    w = doors.workload_by_name(name)
    agree(w, ("compiled", "TORCH_TRACE", "CLI"))


def test_a_torchrun_job_of_two_ranks_reports_what_one_process_does():
    """The launcher's job of two ranks, rank 0's log read back: the same report as one process compiling
    the same model (a model whose graph breaks, in the user's file, and goes through AOTAutograd: the
    places, stages and breaks of a rank's log; a transformers model's log is read by the TORCH_TRACE door)."""
    w = doors.workload_by_name("tutorial:item-branch")
    fp = agree(w, ("compiled", "torchrun"))
    assert fp["breaks"] and "aot_forward" in fp["stages"], fp


def test_compile_of_ddp_around_a_torch_container_is_said_to_compile_nothing():
    """``torch.compile(DDP(nn.Sequential(...)))``: torch skips DDP's forward and, under it, the
    ``torch.nn`` container's own code, so nothing is compiled (torch's own counter of graphs says 0).
    The report's first problem says so; ``DDP(torch.compile(model))`` compiles the model."""
    from torch._dynamo.utils import counters

    w = doors.workload_by_name("tutorial:sequential")
    counters.clear()
    outside = doors.through("compile(DDP)", w)
    assert counters["stats"]["unique_graphs"] == 0  # torch's evidence: it compiled no graph
    assert outside["graphs"] == [], outside
    assert outside["problems"][:1] == ["eager_run"], outside
    inside = through("DDP(compile)", w)
    assert inside["graphs"] and inside == through("compiled", w)


def test_fsdp2_compiles_as_torch_says_it_does():
    """FSDP2 (``fully_shard`` per layer, world size 1): torch compiles differently from a plain
    module (its hooks break the graph and each layer is a graph of its own); the report counts
    what torch's own counters count."""
    from torch._dynamo.utils import counters

    w = doors.workload_by_name("gpt2-64-ids")
    counters.clear()
    fp = doors.through("FSDP2", w)
    assert len(fp["graphs"]) == counters["stats"]["unique_graphs"] > 1
    assert sum(counters["graph_break"].values()) >= len(fp["breaks"]) > 0


def test_ddp_of_a_compiled_model_splits_its_graph_where_torch_does():
    """``DDP(torch.compile(model))`` of a model larger than DDP's first bucket (1 MB): torch's
    DDPOptimizer splits the Dynamo graph at the buckets' boundaries (``optimize_ddp``) and logs the
    split and its buckets as stages of the one Dynamo graph (``ddp_split``, ``ddp_bucket``); the
    Dynamo graph, its breaks and its loop are those of ``torch.compile(model)``, and the report
    counts the graphs torch's own counter counts."""
    from torch._dynamo.utils import counters

    w = doors.hf_workload("llama", 256, "ids")
    whole = through("compiled", w)
    counters.clear()
    split = doors.through("DDP(compile)", w)
    assert len(split["graphs"]) == counters["stats"]["unique_graphs"] == len(whole["graphs"]) == 1
    assert {"ddp_split", "ddp_bucket"} <= set(split["stages"]) and not {"ddp_split", "ddp_bucket"} & set(whole["stages"])
    assert split["graphs"] == whole["graphs"] and split["breaks"] == whole["breaks"] == []
    assert split["loops"] == whole["loops"]
