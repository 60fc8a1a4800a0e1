'''The recipes of the recorded logs in this folder: the user's code, then the calls that compile it.

One recipe, one log (``<name>-torch-<version>.log.gz``), recorded by ``python tests/inputs/record.py``
(``tests/recorded.py`` says how). ``code`` defines the user's functions (a test that proves a fix
compiles them again, from the same lines: ``recorded.definitions(name)``); ``calls`` runs them
compiled, as a notebook cell would; ``config``: torch._dynamo settings held while it runs (outside
the capture, so that the log records them as the global settings). backend="eager" everywhere:
guards, recompiles and graph breaks are Dynamo's, the same with any backend.
'''

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Recipe:
    name: str
    code: str
    calls: str
    config: dict = field(default_factory=dict)
    #: "capture": the calls run under ``ipycompile.capture()``; "cell": ``calls`` is a notebook cell, run by
    #: ``ipycompile.run_cell`` (compiled, backend "eager", one run) in the namespace ``code`` makes; "ddp":
    #: rank 0's TORCH_TRACE log of the two-process gloo DDP job of ``tests/trace_jobs.py`` (its code is there)
    through: str = "capture"
    #: recorded again by tests/test_recorded_truth.py (False: a model whose library code another recipe's
    #: truth check covers, left out there to keep the suite short; still recorded by record.py)
    truth: bool = True

    @property
    def source(self) -> str:
        """The file the compiled code runs from: the code then the calls (the code's lines are the same in
        both); a cell's own source for a cell."""
        return self.calls if self.through == "cell" else self.code + self.calls


def recipe(name: str, code: str, calls: str, truth: bool = True, **config) -> Recipe:
    code, calls = textwrap.dedent(code).lstrip("\n"), textwrap.dedent(calls).lstrip("\n")
    return Recipe(name, "import torch\nfrom torch import nn\n\n" + code + "\n", calls, config, truth=truth)


def cell(name: str, setup: str, source: str, truth: bool = True) -> Recipe:
    """A notebook cell, ``source``, run by ``ipycompile.run_cell`` in the namespace ``setup`` makes."""
    return Recipe(name, "import torch\n" + textwrap.dedent(setup).lstrip("\n"), textwrap.dedent(source).lstrip("\n"),
                  through="cell", truth=truth)


DOUBLE = """
def double(x):
    return x * 2 + 1
"""

SCALED = """
def scaled(x, k):
    return x * k
"""

SMOOTH = """
def smooth(v, steps: int):
    for _ in range(steps):
        v = 0.5 * (v + v.roll(1, dims=-1))
    return v
"""

ADD = """
def add(x, y):
    return x + y
"""

ADD_AB = """
def add(a, b):
    return a + b
"""

PAIR = """
def pair(x, y):
    return x * y
"""

APPLY_G = """
def apply_g(x, g):
    return g(x)
"""

# -- recompiles: tests/test_doctor_recompiles.py ------------------------------------------------
RECIPES = [
    recipe("recompile-size", DOUBLE, """
        f = torch.compile(double, backend="eager")
        for x in [torch.randn(n, 3) for n in (8, 16, 24)]:
            f(x)
        """),
    recipe("recompile-size-static", DOUBLE, """
        f = torch.compile(double, backend="eager", dynamic=False)
        f(torch.randn(8, 3))
        f(torch.randn(16, 3))
        """),
    recipe("recompile-size-1", DOUBLE, """
        marked = torch.randn(8, 3)
        torch._dynamo.mark_dynamic(marked, 0)
        f = torch.compile(double, backend="eager")
        f(marked)
        f(torch.randn(16, 3))
        f(torch.randn(1, 3))
        """),
    recipe("recompile-stride", DOUBLE, """
        f = torch.compile(double, backend="eager")
        f(torch.randn(8, 4))
        f(torch.randn(4, 8).t())
        """),
    recipe("recompile-int", SCALED, """
        x = torch.randn(8)
        f = torch.compile(scaled, backend="eager")
        for k in (2, 3, 4):
            f(x, k)
        """),
    recipe("recompile-float", SCALED, """
        x = torch.randn(8)
        f = torch.compile(scaled, backend="eager")
        for k in (2.0, 3.5, 0.25):
            f(x, k)
        """),
    recipe("recompile-global", """
        SCALE = 2


        def global_scaled(x):
            return x * SCALE
        """, """
        x = torch.randn(8)
        f = torch.compile(global_scaled, backend="eager")
        for SCALE in (2, 3, 4):
            f(x)
        """),
    recipe("recompile-module-attribute", """
        class Scale(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2

            def forward(self, x):
                return x * self.scale
        """, """
        m = Scale()
        x = torch.randn(4)
        cm = torch.compile(m, backend="eager")
        for value in (2, 3, 4):
            m.scale = value
            cm(x)
        """),
    recipe("recompile-loop-count", SMOOTH + """

def smooth_body(v):
    return 0.5 * (v + v.roll(1, dims=-1))
""", """
        v = torch.randn(4, 8)
        f = torch.compile(smooth, backend="eager")
        for s in (1, 2, 3):
            f(v, s)
        """),
    recipe("recompile-loop-count-commented", """
        def smooth_commented(v, steps: int):
            for _ in range(steps):  # unrolled: a comment closing the loop's header, as the tutorial writes it
                v = 0.5 * (v + v.roll(1, dims=-1))
            return v
        """, """
        v = torch.randn(4, 8)
        f = torch.compile(smooth_commented, backend="eager")
        for s in (1, 2, 3):
            f(v, s)
        """),
    recipe("recompile-limit", SMOOTH, """
        v = torch.randn(4, 8)
        f = torch.compile(smooth, backend="eager")
        for s in (1, 2, 3, 4):
            f(v, s)
        """, recompile_limit=2),
    recipe("recompile-limit-of-the-function", ADD, """
        calls = [(torch.randn(3, dtype=d), torch.randn(3, dtype=d)) for d in (torch.float32, torch.float64, torch.float16)]
        f = torch.compile(add, backend="eager", recompile_limit=2)
        for a in calls:
            f(*a)
        """),
    recipe("recompile-limit-carried", """
        def loop_torture(input, iters):
            out = input
            for _ in range(iters):  # a tensor count: a graph break, the loop runs in a resume function
                out += input
            return out
        """, """
        f = torch.compile(loop_torture, backend="eager")
        for i in (5, 9, 17):
            f(torch.randn(3), torch.tensor(i))
        """, recompile_limit=1),
    recipe("recompile-dtype", DOUBLE, """
        f = torch.compile(double, backend="eager")
        f(torch.randn(8))
        f(torch.randn(8, dtype=torch.float16))
        """),
    recipe("recompile-rank", DOUBLE, """
        f = torch.compile(double, backend="eager")
        f(torch.randn(8))
        f(torch.randn(8, 2))
        """),
    recipe("recompile-requires-grad", DOUBLE, """
        f = torch.compile(double, backend="eager")
        f(torch.randn(8))
        f(torch.randn(8, requires_grad=True))
        """),
    recipe("recompile-type", DOUBLE, """
        f = torch.compile(double, backend="eager")
        f(torch.randn(8))
        f(3)
        """),
    recipe("recompile-train-eval", "", """
        drop = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
        cd = torch.compile(drop, backend="eager")
        x = torch.randn(2, 4)
        cd(x)
        drop.eval()
        cd(x)
        """),
    recipe("recompile-grad-mode", DOUBLE, """
        x = torch.randn(2, 4)
        f = torch.compile(double, backend="eager")
        f(x)
        with torch.no_grad():
            f(x)
        """),
    recipe("recompile-identity", "", """
        x = torch.randn(2, 4)
        g = torch.compile(lambda t, fn: fn(t), backend="eager")
        g(x, torch.relu)
        g(x, torch.sigmoid)
        """),
    recipe("recompile-list-length", "", """
        x = torch.randn(2, 4)
        h = torch.compile(lambda ts: sum(ts), backend="eager")
        h([x] * 2)
        h([x] * 3)
        """),
    recipe("recompile-bool", SCALED, """
        x = torch.randn(2, 4)
        s = torch.compile(scaled, backend="eager")
        s(x, True)
        s(x, False)
        """),
    recipe("recompile-parameter", """
        W = torch.nn.Parameter(torch.randn(3, 2))


        def param_matmul(x):
            return x @ W
        """, """
        f = torch.compile(param_matmul, backend="eager")
        for x in [torch.nn.Parameter(torch.randn(n, 3)) for n in (2, 10, 11, 15)]:
            f(x)
        """),
    recipe("recompile-closure-int", APPLY_G + """

def closing(k):
    def g(y):
        return y + k

    return g
""", """
        x = torch.randn(5)
        f = torch.compile(apply_g, backend="eager")
        for i in range(3):
            f(x, closing(i))
        """),
    recipe("recompile-sizes-together", PAIR, """
        f = torch.compile(pair, backend="eager")
        for a, b in [(torch.randn(n), torch.randn(n)) for n in (2, 3, 4, 5)]:
            f(a, b)
        """),
    recipe("recompile-sizes-together-static", PAIR, """
        f = torch.compile(pair, backend="eager")
        for a, b in [(torch.randn(n), torch.randn(n)) for n in (2, 3, 4, 5)]:
            f(a, b)
        """, automatic_dynamic_shapes=False),
    recipe("recompile-global-dict", """
        HOLDER = {"tensor": torch.randn(4, 2)}


        def from_global_dict(x):
            return x.sin() + HOLDER["tensor"].sum(0)
        """, """
        x = torch.randn(2)
        f = torch.compile(from_global_dict, backend="eager")
        for t in [torch.randn(n, 2) for n in (4, 5, 6)]:
            HOLDER["tensor"] = t
            f(x)
        """),
    recipe("recompile-int-static", SCALED, """
        x = torch.randn(3)
        f = torch.compile(scaled, backend="eager", dynamic=False)
        for k in (2, 3, 4):
            f(x, k)
        """),
    recipe("recompile-int-as-size", """
        def sized(x, n):
            return x.sum() + torch.zeros(n).sum()
        """, """
        f = torch.compile(sized, backend="eager", dynamic=False)
        f(torch.randn(3), 2)
        f(torch.randn(3), 3)
        """),
    recipe("recompile-parameter-to-tensor", ADD_AB, """
        a, p, t = torch.rand(3), torch.nn.Parameter(torch.rand(3)), torch.rand(3)
        f = torch.compile(add, backend="eager")
        f(a, p)
        f(a, t)
        """),
    recipe("recompile-number-to-tensor", ADD_AB, """
        a, t = torch.rand(3), torch.rand(3)
        f = torch.compile(add, backend="eager")
        f(a, 3)
        f(a, t)
        """),
    recipe("recompile-flag-to-none", """
        def flagged(x, flag):
            return x + 1 if flag else x - 1
        """, """
        a = torch.rand(3)
        g = torch.compile(flagged, backend="eager")
        g(a, True)
        g(a, None)
        """),
    recipe("recompile-device", "", """
        g = torch.compile(lambda t: t * 2, backend="eager")
        g(torch.randn(3))
        g(torch.randn(3, device="meta"))
        """),
    recipe("recompile-aliasing", """
        def mutate_and_add(a, b, c):
            a.add_(b)
            return c + 1
        """, """
        x = torch.randn(3)
        m = torch.compile(mutate_and_add, backend="eager")
        m(x.clone(), x.clone(), x.clone())
        c = x.clone()
        m(c, x.clone(), c)
        """),
    recipe("recompile-size-beside-type", PAIR, """
        f = torch.compile(pair, backend="eager")
        f(torch.randn(2), torch.randn(2))
        f(torch.randn(3), 3)
        """),
    recipe("recompile-closure-tensor", APPLY_G + """

def closing_tensor(t):
    def g(y):
        return y + t.sum()

    return g
""", """
        f = torch.compile(apply_g, backend="eager")
        for n in (2, 3, 4):
            f(torch.randn(3), closing_tensor(torch.randn(n)))
        """),
    recipe("recompile-attribute-appears", """
        class Cfg:
            def __init__(self) -> None:
                self.val = 0.5


        def with_cfg(x, cfg):
            if getattr(cfg, "just_add_7", False):
                return x + 7
            return x + cfg.val
        """, """
        x = torch.zeros(1)
        a, b = Cfg(), Cfg()
        b.just_add_7 = True
        f = torch.compile(with_cfg, backend="eager")
        f(x, a)
        f(x, b)
        """),
    recipe("recompile-size-condition", """
        def clip_to_window(x, window: int = 6):
            if x.shape[0] > window:  # a size compared with a constant: one version for each side
                x = x[-window:]
            return x * 2
        """, """
        f = torch.compile(clip_to_window, backend="eager")
        for n in (4, 9, 12):
            f(torch.arange(float(n)))
        """),
]

# -- transformers models in a cell, a notebook global: tests/test_doctor_answer_classes.py --------------------
# (tiny configs, random weights, nothing downloaded: tests/doctor_corpus/_tiny.py)
LLAMA = """
from doctor_corpus import _tiny

torch.manual_seed(0)
model = _tiny.llama(layers={layers})
ids = torch.randint(3, 96, (1, 8))
"""

BERT = """
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
model = BertForSequenceClassification(BertConfig(
    vocab_size=96, hidden_size=32, num_hidden_layers={layers}, num_attention_heads=2, intermediate_size=64,
    max_position_embeddings=64, num_labels=2)).eval()
ids = torch.randint(3, 96, (1, 8))
"""

# The truth module records library-attentions-llama-2 again (the library's switches and breaks of one model);
# the other models' cells cost a compile of a model each and are left to record.py.
RECIPES += [
    cell("library-switch-llama", LLAMA.format(layers=3), """
        with torch.no_grad():
            out = model(ids, use_cache=False, output_hidden_states=True)
        """, truth=False),
    cell("library-switch-bert", BERT.format(layers=3), """
        with torch.no_grad():
            out = model(ids, return_dict=True, output_attentions=True)
        """, truth=False),
    *(cell(f"library-attentions-llama-{n}", LLAMA.format(layers=n), """
        with torch.no_grad():
            out = model(ids, output_attentions=True)
        """, truth=n == 2) for n in (1, 2)),
    cell("library-attentions-bert-2", BERT.format(layers=2), """
        with torch.no_grad():
            out = model(ids, output_attentions=True)
        """, truth=False),
]

# -- tests/test_doctor_dynamic_classes.py: Llama's forward compiled, then generate(): the prompt's length, then one
# token per step (sizes 5, then 1); with dynamic=True, the size 1 still specialised. Left out of the truth module (a
# generate() each, 10 s of CPU): what torch does with dynamic=True on a size 1 then 2 is run live by
# test_doctor_recompiles_real's mark_unbacked test, and the llama cell there covers transformers' code ---------------
LLAMA_FORWARD = """
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                  num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64)
model = LlamaForCausalLM(cfg).eval()
prompt = torch.randint(3, 64, (1, 5), generator=torch.Generator().manual_seed(0))
"""

RECIPES += [
    recipe(name, LLAMA_FORWARD, f"""
        model.forward = torch.compile(LlamaForCausalLM.forward.__get__(model), backend="eager"{opts})
        model.generate(prompt, max_new_tokens=4, do_sample=False, pad_token_id=0)
        """, truth=False)
    for name, opts in (("recompile-generate-sizes-0-1", ""), ("recompile-generate-sizes-0-1-dynamic", ", dynamic=True"))
]

# -- tests/test_doctor_loops.py: transformers' layer stacks (3 layers, tiny configs, random weights), the whole model
# compiled; left out of the truth module (a model's compile each; the llama cell there covers transformers' code) ---
LAYER_STACK = """
import transformers as tf

torch.manual_seed(0)
common = dict(vocab_size=100, bos_token_id=1, eos_token_id=2, pad_token_id=0)
model = {model}.eval()
ids = torch.randint(3, 100, (1, 8))
"""

LAYER_STACKS = {
    "gpt2": "tf.GPT2LMHeadModel(tf.GPT2Config(n_layer=3, n_embd=32, n_head=2, n_positions=32, **common))",
    "bert": "tf.BertModel(tf.BertConfig(num_hidden_layers=3, hidden_size=32, intermediate_size=64, "
            "num_attention_heads=2, max_position_embeddings=32, **common))",
    **{name: f"tf.{prefix}ForCausalLM(tf.{prefix}Config(num_hidden_layers=3, hidden_size=32, intermediate_size=64, "
             "num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32, **common))"
       for name, prefix in (("llama", "Llama"), ("qwen2", "Qwen2"))},
}

RECIPES += [
    recipe(f"loop-layers-{name}", LAYER_STACK.format(model=model), """
        with torch.no_grad():
            torch.compile(model, backend="eager")(ids)
        """, truth=False)
    for name, model in LAYER_STACKS.items()
]

# -- tests/test_doctor_breaks.py ----------------------------------------------------------------------------
RECIPES += [
    cell("break-transformers-loss-logging", """
        import logging

        import transformers

        logging.getLogger("transformers").setLevel(logging.ERROR)
        torch.manual_seed(0)
        cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=50, n_positions=16,
                                      bos_token_id=0, eos_token_id=0)
        model = transformers.GPT2LMHeadModel(cfg).eval()
        ids = torch.randint(0, 50, (1, 8), generator=torch.Generator().manual_seed(0))
        """, """
        out = model(ids, labels=ids).loss
        out
        """, truth=False),  # transformers' code: the truth module's llama cell covers it
]

# -- tests/test_doctor_dynamic_classes.py -------------------------------------------------------------------
RECIPES += [
    recipe("recompile-library-generate", """
        from transformers import LlamaConfig, LlamaForCausalLM

        torch.manual_seed(0)
        cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                          num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64)
        model = LlamaForCausalLM(cfg).eval()
        """, """
        gen = torch.compile(model.generate, backend="eager")
        prompt = torch.randint(3, 64, (1, 4), generator=torch.Generator().manual_seed(0))
        gen(input_ids=prompt, max_new_tokens=2, do_sample=False, pad_token_id=0)
        """, truth=False),  # a generate() of its own: the truth module's llama cell covers the library's code
]

RECIPES += [
    # torch.compile(DDP(model)) in a two-process gloo job, traced by torch itself (tests/trace_jobs.py, `ddp`);
    # tests/test_trace_ranks.py runs that job live
    Recipe("break-ddp-rank0", "", "", through="ddp", truth=False),
]

# -- tests/test_parse_kernels.py: Inductor's C++ output code (backend "inductor": a C++ compile, a minute on a
# loaded CPU; left out of the truth module for that) --------------------------------------------------------
RECIPES += [
    recipe("kernels-cpu-cond", """
        def f(x, w):
            y = torch.relu(x) @ w + x.sin().sum(dim=1, keepdim=True)
            return torch.cond(y.sum() > 0, lambda t: t.cos(), lambda t: t * 2, (y,))
        """, """
        torch.compile(f)(torch.randn(32, 32), torch.randn(32, 32))
        """, truth=False),
]

# -- tests/test_parse_failures.py ---------------------------------------------------------------------------
RECIPES += [
    recipe("failure-constraint-violation", """
        def my_dyn_fn(x):
            if x.shape[0] == 3:  # the line
                return x.sin()
            return x.cos()
        """, """
        y = torch.randn(3, 3, 3)
        torch._dynamo.mark_dynamic(y, 0)
        try:
            torch.compile(my_dyn_fn, backend="eager")(y)
        except Exception as exc:  # ConstraintViolationError: the mark's dim is specialised
            raised = exc
        """),
]
