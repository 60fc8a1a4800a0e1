"""Two classes of wrong dynamic-shape answer from issue 27 (part 2), ruled out on code of our own (not the
real-code corpus's cases), each with what torch does shown by real compiles (CPU, backend "eager") and the
doctor's answer applied as a user would, before the call:

* **a marked size that meets, after a graph break, a tensor no code of the user's can mark** (a training
  loop on batches of varying length: the model's logits are made before a break and compared with the
  labels after it). A strict ``mark_dynamic`` raises ConstraintViolationError there (torch specialises the
  marked size against the unmarked one); the doctor writes ``maybe_mark_dynamic``, which removes the
  recompiles it can and raises nothing, with the same losses and weights as eager;
* **a size 1 that the code compares** (a generate loop from a one-token prompt, whose model asserts the
  length fits its window). ``mark_unbacked`` makes the comparison data-dependent: torch breaks the graph
  there and the recompile stays. The doctor does not offer it; it says what torch does: size 1 has a
  version of its own, and from 2 on one dynamic version serves every length (shown: one recompile in all).
  The same where the comparison is a branch (crop or pad a clip to a length): unbacked, each compare is a
  graph break on every call (shown); the doctor says each outcome is a version of its own;
* **an argument made inside another compiled function** (a helper called from a loop torch runs outside
  the graph after a data-dependent break): torch compiles the helper as a frame of its own, and its
  parameter is a tensor no line before the user's call can mark: no ``mark_dynamic`` on the helper's
  parameter name; torch's one recompile, then a dynamic size, in words.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import ipycompile
from ipycompile.run.verify import read_fix_code


def said(x) -> str:
    s = x.suggestion
    return "\n".join([x.explanation or "", s.title, s.explanation, s.code] if s else [x.explanation or ""])


# -- a marked size that meets, after a break, a tensor no line can mark ---------------------------------
class Tagger(nn.Module):
    """A token classifier whose forward breaks the graph between the logits and the loss (as a logging or
    a host call in a model's forward does)."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(32, 8)
        self.head = nn.Linear(8, 32)

    def forward(self, ids, labels):
        logits = self.head(self.emb(ids))
        torch._dynamo.graph_break()
        return F.cross_entropy(logits.view(-1, 32), labels.reshape(-1))


BATCHES = [torch.randint(0, 32, (2, n), generator=torch.Generator().manual_seed(n)) for n in (8, 12, 10)]


def train(model, forward, mark=None):
    """The training loop: one step per batch; ``mark(batch)`` runs before each call (where a user writes the
    doctor's line). Returns the losses and the trained weights."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for batch in BATCHES:
        batch = batch.clone()
        if mark is not None:
            mark(batch)
        loss = forward(batch, batch)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.detach())
    return losses, [p.detach().clone() for p in model.parameters()]


def compiled_train(base, mark=None):
    torch._dynamo.reset()
    model = copy.deepcopy(base)
    with ipycompile.capture() as cap:
        out = train(model, torch.compile(model, backend="eager"), mark)
    torch._dynamo.reset()
    return cap.report, out


def test_a_mark_whose_size_meets_a_tensor_made_before_a_break_is_maybe_mark_dynamic_and_removes_recompiles():
    torch.manual_seed(0)
    base = Tagger()
    model = copy.deepcopy(base)
    eager = train(model, model)
    report, out = compiled_train(base)
    assert len(report.recompiles) == 2, [(rc.function, rc.reasons) for rc in report.recompiles]
    marked = [rc for rc in report.recompiles if rc.suggestion is not None and rc.suggestion.code]
    assert len(marked) == 1, [said(rc) for rc in report.recompiles]
    s = marked[0].suggestion
    assert s.kind == "mark_dynamic" and s.code.startswith("torch._dynamo.maybe_mark_dynamic(batch, 1)"), said(marked[0])
    assert "ConstraintViolationError" in s.explanation and "logits" in s.explanation
    # the strict mark, which the doctor does not write: torch specialises the size after the break, and raises
    with pytest.raises(Exception, match="Constraints violated"):
        compiled_train(base, mark=lambda b: torch._dynamo.mark_dynamic(b, 1))
    # the doctor's line, read as --verify-fixes and the corpus's harness read it, run before each call
    read = read_fix_code(s.fix)
    assert not read.why_not and [(fn, name, dim) for fn, name, dim in read.marks] == [("maybe_mark_dynamic", "batch", 1)]

    def mark(batch):
        for fn, _, dim in read.marks:
            getattr(torch._dynamo, fn)(batch, dim)

    fixed, fixed_out = compiled_train(base, mark)
    assert len(fixed.recompiles) < len(report.recompiles) and not fixed.failures
    for got, want in zip([*fixed_out[0], *fixed_out[1]], [*eager[0], *eager[1]]):
        torch.testing.assert_close(got, want)
    for got, want in zip([*out[0], *out[1]], [*eager[0], *eager[1]]):
        torch.testing.assert_close(got, want)


# -- a size 1 the code compares: no mark_unbacked --------------------------------------------------------
class TinyLM(nn.Module):
    """A causal LM with a fixed window: its forward asserts the sequence fits (as nanoGPT's, minGPT's and
    most hand-written GPTs do), and slices its position table by the length."""

    window = 12

    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.Embedding(40, 16)
        self.pos = nn.Parameter(torch.randn(self.window, 16) * 0.02)
        self.out = nn.Linear(16, 40)

    def forward(self, tokens):
        n = tokens.shape[1]
        assert n <= self.window, "sequence longer than the window"
        h = self.tok(tokens) + self.pos[:n]
        return self.out(torch.tanh(h))[:, -1, :]


def greedy(forward, prompt, steps=6, mark=None):
    seq = prompt
    for _ in range(steps):
        ctx = seq[:, -TinyLM.window:]
        if mark is not None:
            mark(ctx)
        nxt = forward(ctx).argmax(-1, keepdim=True)
        seq = torch.cat([seq, nxt], dim=1)
    return seq


def test_a_size_1_the_code_compares_gets_no_mark_unbacked_and_torch_recompiles_once():
    torch.manual_seed(0)
    model = TinyLM().eval()
    prompt = torch.tensor([[5]])
    with torch.no_grad():
        eager = greedy(model, prompt)
        torch._dynamo.reset()
        with ipycompile.capture() as cap:
            got = greedy(torch.compile(model, backend="eager"), prompt)
        torch._dynamo.reset()
    torch.testing.assert_close(got, eager)
    report = cap.report
    # what torch does: the length-1 version, then one dynamic version for every later length (six calls)
    assert len(report.recompiles) == 1 and not report.graph_breaks, [rc.reasons for rc in report.recompiles]
    (rc,) = report.recompiles
    assert [g.kind for g in rc.guards] == ["size_0_1"]
    s = rc.suggestion
    assert s is not None and s.kind == "automatic_dynamic" and not s.code, said(rc)
    assert "mark_unbacked` is not the fix here" in s.explanation and "<= 12" in s.explanation, said(rc)
    # why: with the size unbacked, the assert is data-dependent: torch breaks the graph there, and the
    # recompile is not gone
    with torch.no_grad():
        torch._dynamo.reset()
        with ipycompile.capture() as cap2:
            got2 = greedy(torch.compile(model, backend="eager"), prompt,
                          mark=lambda t: torch._dynamo.decorators.mark_unbacked(t, 1))
        torch._dynamo.reset()
    torch.testing.assert_close(got2, eager)
    assert cap2.report.graph_breaks or cap2.report.failures, "mark_unbacked compiled the compare without a break"
    assert len(cap2.report.recompiles) >= 1 or cap2.report.graph_breaks


def fit_to(frames, length=64):
    """Crop or zero-pad a clip to ``length`` frames (what audio and video loaders do before batching)."""
    if frames.shape[0] > length:
        frames = frames[:length]
    if frames.shape[0] < length:
        frames = F.pad(frames, (0, 0, 0, length - frames.shape[0]))
    return frames * 0.5


def test_a_size_the_code_compares_in_a_branch_gets_no_mark_unbacked():
    clips = [torch.randn(n, 3, generator=torch.Generator().manual_seed(n)) for n in (40, 90, 50, 70, 20)]
    torch._dynamo.reset()
    with ipycompile.capture() as cap:
        f = torch.compile(fit_to, backend="eager")
        outs = [f(c) for c in clips]
    torch._dynamo.reset()
    for got, c in zip(outs, clips):
        torch.testing.assert_close(got, fit_to(c))
    report = cap.report
    assert report.recompiles and not report.graph_breaks
    for rc in report.recompiles:
        s = rc.suggestion
        assert s is not None and "mark_unbacked(" not in (s.code or ""), said(rc)
    # each recompile is explained by the comparison the code makes (the branch's guard, read from torch's
    # failed bound), not as a size torch specialised to 0 or 1
    assert all(rc.suggestion.kind == "size_condition" and "frames.shape[0] > 64" in rc.suggestion.title
               for rc in report.recompiles), [said(rc) for rc in report.recompiles]
    assert not any(g.kind == "size_0_1" for rc in report.recompiles for g in rc.guards)
    # why: unbacked, each comparison is data-dependent, and torch breaks the graph at it on every call
    torch._dynamo.reset()
    with ipycompile.capture() as cap2:
        f = torch.compile(fit_to, backend="eager")
        for c in clips:
            c = c.clone()
            torch._dynamo.decorators.mark_unbacked(c, 0)
            torch.testing.assert_close(f(c), fit_to(c))
    torch._dynamo.reset()
    assert {b.gb_code for b in cap2.report.graph_breaks} == {"GB0170"}, [b.gb_code for b in cap2.report.graph_breaks]


# -- an argument made inside another compiled function: no mark before the user's call can reach it ---------
def corners(b):
    out = b.clone()
    out[:, :2] = b[:, :2] - b[:, 2:] / 2
    out[:, 2:] = b[:, :2] + b[:, 2:] / 2
    return out


def kept_boxes(scores, thresh=0.5):
    out = []
    for s in scores:  # a data-dependent size in a loop: torch runs the loop outside the graph
        s = s[s[:, 4] > thresh]
        out.append(corners(s[:, :4]))  # torch compiles `corners` as a frame of its own, on a tensor made here
    return out


def test_a_function_called_by_compiled_code_gets_no_mark_on_its_parameter():
    scores = torch.rand(4, 30, 5, generator=torch.Generator().manual_seed(3))
    torch._dynamo.reset()
    with ipycompile.capture() as cap:
        got = torch.compile(kept_boxes, backend="eager")(scores)
    torch._dynamo.reset()
    for a, b in zip(got, kept_boxes(scores)):
        torch.testing.assert_close(a, b)
    rcs = [rc for rc in cap.report.recompiles if rc.function == "corners"]
    # what torch does: one recompile, after which the size is dynamic for every later call
    assert len(rcs) == 1, [(rc.function, rc.reasons) for rc in cap.report.recompiles]
    (g,) = [g for g in rcs[0].guards if g.kind == "size"]
    assert g.origin == "carried" and g.name == "" and "kept_boxes" in g.described, g
    s = rcs[0].suggestion
    assert s is not None and s.kind == "automatic_dynamic" and not s.code, said(rcs[0])
