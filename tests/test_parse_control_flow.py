"""Tests for :mod:`ipycompile.capture.parse.control_flow`.

The graphs are real: each test compiles a function with ``backend="eager"``
(Dynamo only; Inductor is not what is tested here) and parses the
``dynamo_output_graph`` payload torch wrote to its structured-trace logger.
Op counts are checked against the FX graphs Dynamo handed the backend.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterator

import pytest
import torch
import torch.fx

from ipycompile.capture.parse.control_flow import count_ops, parse_control_flow, split_subgraphs
from ipycompile.report.model import CompileId, ControlFlowNode

from torch._functorch.aot_autograd import make_boxed_func
from torch._higher_order_ops.associative_scan import associative_scan_op
from torch._higher_order_ops.scan import scan

_CALLS = ("call_function", "call_method", "call_module")


# --------------------------------------------------------------------------- #
# helpers
# --------------------------------------------------------------------------- #


class _GraphCatcher(logging.Handler):
    """Keeps the payload of every ``dynamo_output_graph`` trace record."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.graphs: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None) or {}
        if "dynamo_output_graph" in metadata:
            self.graphs.append(getattr(record, "payload", "") or "")


def compile_and_capture(fn: Callable[..., Any], *args: Any) -> tuple[str, torch.fx.GraphModule]:
    """Compile ``fn`` (fullgraph, Dynamo only), run it on ``args`` and return
    the printed Dynamo graph and the GraphModule Dynamo gave the backend."""
    modules: list[torch.fx.GraphModule] = []

    def backend(gm: torch.fx.GraphModule, example_inputs: Any) -> Callable[..., Any]:
        modules.append(gm)
        return gm.forward

    logger = logging.getLogger("torch.__trace")
    catcher = _GraphCatcher()
    logger.addHandler(catcher)
    try:
        torch.compile(fn, backend=backend, fullgraph=True)(*args)
    finally:
        logger.removeHandler(catcher)
    assert len(catcher.graphs) == 1 and len(modules) == 1
    return catcher.graphs[0], modules[0]


def compile_eager(fn: Callable[..., Any], *args: Any) -> str:
    """Like :func:`compile_and_capture` with the stock ``"eager"`` backend."""
    logger = logging.getLogger("torch.__trace")
    catcher = _GraphCatcher()
    logger.addHandler(catcher)
    try:
        torch.compile(fn, backend="eager", fullgraph=True)(*args)
    finally:
        logger.removeHandler(catcher)
    assert len(catcher.graphs) == 1
    return catcher.graphs[0]


def walk(nodes: list[ControlFlowNode], depth: int = 0) -> Iterator[tuple[int, ControlFlowNode]]:
    for node in nodes:
        yield depth, node
        yield from walk(node.children, depth + 1)


def roles(node: ControlFlowNode) -> dict[str, str]:
    """role -> subgraph code, less its comments (which quote the user's source)"""
    return {s.role: strip_comments(s.code) for s in node.subgraphs}


def strip_comments(code: str) -> str:
    return "\n".join(ln for ln in code.splitlines() if not ln.strip().startswith("#"))


def fx_op_count(gm: torch.fx.GraphModule) -> int:
    return sum(n.op in _CALLS for n in gm.graph.nodes)


@pytest.fixture(autouse=True)
def _reset_dynamo() -> Iterator[None]:
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


XS = torch.randn(5, 4)


def _combine_with_cond(c: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    n = c + x
    n2 = torch.cond(n.sum() > 0, lambda a: a * 2, lambda a: a - 1, (n,))
    return n2, n2.clone()


def _inner_cond(t: torch.Tensor) -> torch.Tensor:
    return torch.cond(t.mean() > 0, lambda u: u.tanh(), lambda u: u.relu(), (t,))


def _combine_two_levels(c: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    n = c + x
    n2 = torch.cond(n.sum() > 0, _inner_cond, lambda a: a.exp(), (n,))
    return n2, n2.clone()


# --------------------------------------------------------------------------- #
# one op each
# --------------------------------------------------------------------------- #


def test_cond() -> None:
    def f(xs: torch.Tensor) -> torch.Tensor:
        return torch.cond(xs.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (xs,))

    code = compile_eager(f, XS)
    nodes = parse_control_flow(code, CompileId(0, 0))
    assert len(nodes) == 1
    node = nodes[0]
    assert node.op == "cond"
    assert node.node_name == "cond"
    assert node.compile_id == CompileId(0, 0)
    assert node.operands.startswith("pred=") and "operands=" in node.operands
    assert "torch.cond(" in node.source_line and not node.source_line.startswith("File")
    assert [s.role for s in node.subgraphs] == ["true_fn", "false_fn"]
    by_role = roles(node)
    assert ".sin()" in by_role["true_fn"] and ".cos()" not in by_role["true_fn"]
    assert ".cos()" in by_role["false_fn"] and ".sin()" not in by_role["false_fn"]
    assert by_role["true_fn"].startswith("class ")
    assert all(s.op_count == 1 for s in node.subgraphs)
    assert node.children == []


def test_while_loop() -> None:
    def f(xs: torch.Tensor) -> torch.Tensor:
        def cond_fn(i: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return i < 3

        def body_fn(i: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return i + 1, v.sin()

        return torch.while_loop(cond_fn, body_fn, (torch.tensor(0), xs))[1]

    nodes = parse_control_flow(compile_eager(f, XS))
    assert [n.op for n in nodes] == ["while_loop"]
    node = nodes[0]
    assert [s.role for s in node.subgraphs] == ["cond_fn", "body_fn"]
    assert " < 3" in roles(node)["cond_fn"]
    assert "sin" in roles(node)["body_fn"]
    assert "carried_inputs=" in node.operands
    assert all(s.op_count > 0 for s in node.subgraphs)
    assert node.compile_id is None


def test_scan() -> None:
    def combine(c: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = (c + x).sigmoid()
        return h, h.clone()

    def f(xs: torch.Tensor) -> torch.Tensor:
        carry, ys = scan(combine, torch.zeros(4), xs)
        return carry + ys.sum(0)

    nodes = parse_control_flow(compile_eager(f, XS))
    assert [n.op for n in nodes] == ["scan"]
    (sub,) = nodes[0].subgraphs
    assert sub.role == "combine_fn"
    assert ".sigmoid()" in strip_comments(sub.code) and ".clone()" in strip_comments(sub.code)
    assert sub.op_count == 3  # add, sigmoid, clone
    assert "xs=" in nodes[0].operands and "init=" in nodes[0].operands


def test_map() -> None:
    def f(xs: torch.Tensor) -> torch.Tensor:
        return torch._higher_order_ops.map(lambda t: t * 2 + 1, xs)

    nodes = parse_control_flow(compile_eager(f, XS))
    assert [n.op for n in nodes] == ["map"]
    assert nodes[0].node_name == "map_impl"
    (sub,) = nodes[0].subgraphs
    assert sub.role == "body_fn" and sub.op_count == 2
    assert " * 2" in strip_comments(sub.code)


def test_associative_scan_hop() -> None:
    # The public associative_scan() never yields the HOP on CPU:
    # combine_mode="pointwise" requires CUDA/XPU inputs and "generic" is
    # inlined by Dynamo into plain ops. The HOP object itself traces on CPU.
    def combine(p: torch.Tensor, q: torch.Tensor) -> list[torch.Tensor]:
        return [p + q]

    def f(xs: torch.Tensor) -> torch.Tensor:
        return associative_scan_op(combine, [xs], ())[0]

    nodes = parse_control_flow(compile_eager(f, XS))
    assert [n.op for n in nodes] == ["associative_scan"]
    (sub,) = nodes[0].subgraphs
    assert sub.role == "combine_fn" and sub.op_count == 1 and " + " in strip_comments(sub.code)


def test_checkpoint_autograd_function_invoke_subgraph() -> None:
    class Sin(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
            (x,) = ctx.saved_tensors
            return g * x.cos()

    @torch.compiler.nested_compile_region
    def region(x: torch.Tensor) -> torch.Tensor:
        return x.relu() * 3

    def f(x: torch.Tensor) -> torch.Tensor:
        a = torch.utils.checkpoint.checkpoint(lambda t: t.sin().cos(), x, use_reentrant=False)
        return a + Sin.apply(x) + region(x) + region(x + 1)

    nodes = parse_control_flow(compile_eager(f, torch.randn(4, 4, requires_grad=True)))
    assert [n.op for n in nodes] == ["checkpoint", "autograd.Function", "invoke_subgraph", "invoke_subgraph"]
    ckpt, fn, inv0, inv1 = nodes
    assert ckpt.subgraphs[0].role == "body" and ".cos()" in roles(ckpt)["body"]
    assert "use_reentrant=False" in ckpt.operands
    assert [s.role for s in fn.subgraphs] == ["forward", "backward"]
    assert ".sin()" in roles(fn)["forward"] and ".cos()" in roles(fn)["backward"]
    # both calls use the one region class, whatever their local variable is called
    assert inv0.subgraphs[0].name == inv1.subgraphs[0].name
    assert ".relu()" in strip_comments(inv1.subgraphs[0].code) and inv1.subgraphs[0].op_count == 2
    assert len(inv1.subgraphs) == 1  # the quoted identifier is not a second subgraph


def test_flex_attention() -> None:
    from torch.nn.attention.flex_attention import flex_attention

    def f(q: torch.Tensor) -> torch.Tensor:
        return flex_attention(q, q, q, score_mod=lambda s, b, h, qi, kv: s * 2)

    nodes = parse_control_flow(compile_eager(f, torch.randn(1, 1, 8, 4)))
    assert [n.op for n in nodes] == ["flex_attention"]
    node = nodes[0]
    # the mask function sits inside the block-mask tuple argument
    assert [s.role for s in node.subgraphs] == ["score_mod", "mask_mod"]
    assert " * 2" in roles(node)["score_mod"]
    assert node.operands.startswith("query=") and len(node.operands) <= 240


# --------------------------------------------------------------------------- #
# nesting
# --------------------------------------------------------------------------- #


def test_cond_inside_while_loop_body() -> None:
    def f(xs: torch.Tensor) -> torch.Tensor:
        def cond_fn(i: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return i < 3

        def body_fn(i: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return i + 1, torch.cond(v.sum() > 0, lambda q: q * 2, lambda q: q + 1, (v,))

        return torch.while_loop(cond_fn, body_fn, (torch.tensor(0), xs))[1]

    code = compile_eager(f, XS)
    nodes = parse_control_flow(code)
    assert [(d, n.op) for d, n in walk(nodes)] == [(0, "while_loop"), (1, "cond")]
    inner = nodes[0].children[0]
    assert [s.role for s in inner.subgraphs] == ["true_fn", "false_fn"]
    assert " * 2" in roles(inner)["true_fn"] and " + 1" in roles(inner)["false_fn"]
    assert "torch.cond(" in inner.source_line
    # the body's code stops where its nested classes begin
    body = roles(nodes[0])["body_fn"]
    assert "higher_order.cond" in body and "class " + inner.subgraphs[0].name not in body
    assert set(split_subgraphs(code)) == {s.name for _, n in walk(nodes) for s in n.subgraphs}


def test_cond_inside_scan_combine_fn() -> None:
    def f(xs: torch.Tensor) -> torch.Tensor:
        carry, ys = scan(_combine_with_cond, torch.zeros(4), xs)
        return carry + ys.sum(0)

    nodes = parse_control_flow(compile_eager(f, XS))
    assert [(d, n.op) for d, n in walk(nodes)] == [(0, "scan"), (1, "cond")]
    assert nodes[0].subgraphs[0].role == "combine_fn"
    assert "operands=(n,)" in nodes[0].children[0].operands


def test_two_levels_cond_in_cond_in_scan() -> None:
    def f(xs: torch.Tensor) -> torch.Tensor:
        carry, ys = scan(_combine_two_levels, torch.zeros(4), xs)
        return carry + ys.sum(0)

    nodes = parse_control_flow(compile_eager(f, XS), CompileId(3, 1))
    assert [(d, n.op) for d, n in walk(nodes)] == [(0, "scan"), (1, "cond"), (2, "cond")]
    mid = nodes[0].children[0]
    leaf = mid.children[0]
    assert "higher_order.cond" in roles(mid)["true_fn"]  # the inner cond is called from true_fn
    assert ".exp()" in roles(mid)["false_fn"]
    assert ".tanh()" in roles(leaf)["true_fn"] and ".relu()" in roles(leaf)["false_fn"]
    assert ".tanh()" not in roles(mid)["true_fn"]  # the leaf's body is not in its caller's code
    assert all(n.compile_id == CompileId(3, 1) for _, n in walk(nodes))


def test_everything_at_once_and_op_counts_match_fx() -> None:
    """Op counts equal the call nodes of the FX (sub)graphs Dynamo built."""

    def f(xs: torch.Tensor) -> torch.Tensor:
        a = torch.cond(xs.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (xs,))

        def cond_fn(i: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return i < 3

        def body_fn(i: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return i + 1, torch.cond(v.sum() > 0, lambda q: q * 2, lambda q: q + 1, (v,))

        _, w = torch.while_loop(cond_fn, body_fn, (torch.tensor(0), a))
        c, ys = scan(_combine_two_levels, torch.zeros(4), xs)
        m = torch._higher_order_ops.map(lambda t: t * 2, xs)
        return w.sum() + c.sum() + ys.sum() + m.sum()

    code, gm = compile_and_capture(f, XS)
    nodes = parse_control_flow(code)
    assert [n.op for n in nodes] == ["cond", "while_loop", "scan", "map"]
    assert count_ops(code) == fx_op_count(gm)

    def check(node_list: list[ControlFlowNode], owner: torch.nn.Module) -> int:
        checked = 0
        for node in node_list:
            for sub in node.subgraphs:
                module = getattr(owner, sub.name)
                assert sub.op_count == fx_op_count(module), sub.name
                assert count_ops(sub.code) == sub.op_count
                checked += 1
                # the children of a node live in its subgraphs' modules
                checked += check([c for c in node.children if _called_in(c, sub.code)], module)
        return checked

    assert check(nodes, gm) == len(split_subgraphs(code)) == 12


def _called_in(node: ControlFlowNode, code: str) -> bool:
    return f"{node.node_name} = torch.ops.higher_order." in code


def test_count_ops_on_aot_graphs() -> None:
    """AOT prints put one argument a line in ``def forward(`` and ``return (``;
    count_ops must agree with the forward and backward graphs all the same."""
    from torch._dynamo.backends.common import aot_autograd

    modules: list[torch.fx.GraphModule] = []
    payloads: dict[str, str] = {}

    def keep(gm: torch.fx.GraphModule, example_inputs: Any) -> Callable[..., Any]:
        modules.append(gm)
        return make_boxed_func(gm.forward)

    class Catcher(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            for key in getattr(record, "metadata", None) or {}:
                if key in ("aot_forward_graph", "aot_backward_graph"):
                    payloads[key] = getattr(record, "payload", "") or ""

    def f(x: torch.Tensor) -> torch.Tensor:
        a = torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,))
        return a.relu() * x

    logger = logging.getLogger("torch.__trace")
    catcher = Catcher(logging.DEBUG)
    logger.addHandler(catcher)
    try:
        compiled = torch.compile(f, backend=aot_autograd(fw_compiler=keep, bw_compiler=keep), fullgraph=True)
        compiled(torch.randn(5, 4, requires_grad=True)).sum().backward()
    finally:
        logger.removeHandler(catcher)
    fw, bw = modules
    assert count_ops(payloads["aot_forward_graph"]) == fx_op_count(fw)
    assert count_ops(payloads["aot_backward_graph"]) == fx_op_count(bw)
    (cond,) = parse_control_flow(payloads["aot_forward_graph"])
    assert cond.op == "cond" and [s.role for s in cond.subgraphs] == ["true_fn", "false_fn"]
    for sub in cond.subgraphs:
        assert sub.op_count == fx_op_count(getattr(fw, sub.name))


# --------------------------------------------------------------------------- #
# text robustness (no compile)
# --------------------------------------------------------------------------- #

_OLD_STYLE = """\
class GraphModule(torch.nn.Module):
  def forward(self, L_x_ : torch.Tensor):
    l_x_ = L_x_
    # File: t.py:3, code: return cond(x.sum() > 0, t, f, [x])
    sum_1 = l_x_.sum()
    gt = sum_1 > 0;  sum_1 = None
    cond = torch._higher_order_ops.cond(gt, self.cond_true_0, l__self___cond_false_0, [l_x_]);  gt = None
    getitem = cond[0];  cond = None
    return (getitem,)

  class cond_true_0(torch.nn.Module):
    def forward(self, l_x_):
      sin = l_x_.sin();  l_x_ = None
      wrap = torch._higher_order_ops.wrap.wrap(self.wrap_body_0, sin)
      return (wrap[0],)

    class wrap_body_0(torch.nn.Module):
      def forward(self, sin):
        neg = -sin
        size = sin.shape
        return (neg,)

  class cond_false_0(torch.nn.Module):
    def forward(self, l_x_):
      cos = l_x_.cos();  l_x_ = None
      return (cos,)
"""


def test_older_spellings_and_two_space_indent() -> None:
    nodes = parse_control_flow("\n".join("    " + ln for ln in _OLD_STYLE.splitlines()))
    assert [(d, n.op) for d, n in walk(nodes)] == [(0, "cond"), (1, "wrap")]
    cond = nodes[0]
    assert [(s.name, s.role) for s in cond.subgraphs] == [("cond_true_0", "true_fn"), ("cond_false_0", "false_fn")]
    assert cond.operands == "pred=gt, operands=[l_x_]"
    assert cond.source_line == "return cond(x.sum() > 0, t, f, [x])"
    wrap = cond.children[0]
    assert wrap.subgraphs[0].name == "wrap_body_0" and wrap.subgraphs[0].op_count == 2
    assert wrap.operands == "operands=(sin,)"


def test_header_lines_and_bare_bodies() -> None:
    # TORCH_LOGS=graph_code style: a header, and the file name before ``class``
    logged = "TRACED GRAPH\n ===== __compiled_fn_1 =====\n /tmp/t.py " + _OLD_STYLE
    assert [(d, n.op) for d, n in walk(parse_control_flow(logged))] == [(0, "cond"), (1, "wrap")]
    assert count_ops(logged) == 4
    # a forward without its GraphModule class, subgraph classes beside it
    bare = _OLD_STYLE.split("\n", 1)[1]
    assert [(d, n.op) for d, n in walk(parse_control_flow(bare))] == [(0, "cond"), (1, "wrap")]
    assert count_ops(bare) == 4


def test_count_ops_simple_bodies() -> None:
    # sum, >, cond, getitem; the placeholder alias and return are not ops
    assert count_ops(_OLD_STYLE) == 4
    assert split_subgraphs(_OLD_STYLE)["wrap_body_0"].startswith("class wrap_body_0")
    body = 'x = L_x_\nw = self.weight\ny: "f32[2]" = x @ w\nreturn (y,)\n'
    assert count_ops(body) == 1


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "hello world",
        "class (:\n  def",
        "torch.ops.higher_order.cond(",
        "x = torch.ops.higher_order.cond(gt, a, b, (((",
        "\x00\xff" * 50,
        None,
        42,
    ],
)
def test_garbage_returns_empty(garbage: Any) -> None:
    assert parse_control_flow(garbage) == []
    assert isinstance(count_ops(garbage), int)
    assert isinstance(split_subgraphs(garbage), dict)


def test_no_hops() -> None:
    code = compile_eager(lambda x: x.sin() + 1, XS)
    assert parse_control_flow(code) == []
    assert count_ops(code) == 2
