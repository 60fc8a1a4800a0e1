"""A cell as one function: namespace, result, editor line numbers, refused constructs, torch.compile."""

from __future__ import annotations

import builtins
import linecache
import logging
import re
import traceback
from typing import Any

import pytest
import torch

from ipycompile.run.cell import placeholders, CellError, CellFunction, make_cell_function

TRACE = logging.getLogger("torch.__trace")
GRAPH_BREAK_AT = re.compile(r"Graph break in user code at (.+):(\d+)")


def _ns(**names: Any) -> dict[str, Any]:
    """A namespace like IPython's user_ns: it already has __name__ and __builtins__."""
    return {"__name__": "__main__", "__builtins__": builtins, **names}


def _cell(body: str, ns: dict[str, Any], filename: str = "<cell-test>", **kw: Any) -> CellFunction:
    return make_cell_function(body, ns, filename=filename, **kw)


def _error(body: str, **kw: Any) -> CellError:
    with pytest.raises(CellError) as info:
        _cell(body, _ns(), **kw)
    return info.value


# --- names land in the namespace -------------------------------------------------------------------------


BINDINGS = """\
a, (b, *c) = 1, (2, 3, 4)
for i in range(3):
    last = i
with open(path) as fh:
    pass
try:
    1 / 0
except ZeroDivisionError as err:
    caught = type(err).__name__
import os.path, collections as C
from math import sqrt as root
def f(v):
    return v + a
class K:
    attr = 1
if (w := 10) > 5:
    squares = [(q := j) * j for j in range(3)]
n: int = 5
n += 1
tmp = 0
del tmp
match {"k": 1, "r": 2}:
    case {"k": kk, **rest}:
        pass
"""


def test_top_level_bindings_land_in_the_namespace():
    ns = _ns(path=__file__)
    cf = _cell(BINDINGS, ns)
    assert cf.fn() is None and not cf.has_result
    assert (ns["a"], ns["b"], ns["c"]) == (1, 2, [3, 4])
    assert (ns["i"], ns["last"]) == (2, 2)
    assert ns["fh"].closed and "err" not in ns and ns["caught"] == "ZeroDivisionError"
    assert ns["os"].__name__ == "os" and ns["C"].__name__ == "collections" and ns["root"](9) == 3
    assert ns["f"](1) == 2 and ns["K"].attr == 1
    assert (ns["w"], ns["q"], ns["squares"]) == (10, 2, [0, 1, 4])
    assert ns["n"] == 6 and "tmp" not in ns
    assert (ns["kk"], ns["rest"]) == (1, {"r": 2})
    # Comprehension variables are the comprehension's own; class attributes are the class's.
    assert "j" not in ns and "attr" not in ns
    assert cf.assigned == tuple(sorted(
        ["C", "K", "a", "b", "c", "caught", "err", "f", "fh", "i", "kk", "last", "n", "os", "q", "rest", "root",
         "squares", "tmp", "w"]
    ))


def test_nothing_but_the_assigned_names_is_added():
    ns = _ns(cell="the user's", x=1)
    before = dict(ns)
    cf = _cell("def helper():\n    return x\ny = helper() + 1\nz = [k for k in range(y)]", ns)
    cf.fn()
    assert {k: v for k, v in ns.items() if k in before} == before  # `cell` is not clobbered
    assert set(ns) - set(before) == set(cf.assigned) == {"helper", "y", "z"}
    assert cf.fn.__globals__ is ns and cf.fn.__name__ == cf.name == "cell"


def test_builtins_are_added_to_a_namespace_without_them():
    ns: dict[str, Any] = {}
    assert _cell("len([1, 2])", ns).fn() == 2
    assert set(ns) == {"__builtins__"}


def test_reads_come_from_the_namespace_and_nested_scopes_see_notebook_globals():
    ns = _ns(x=2)
    _cell("x = x + 1\ndef get():\n    return x\nbump = lambda: get() * 10", ns).fn()
    assert ns["x"] == 3 and ns["get"]() == 3
    ns["x"] = 7  # a later plain cell rebinds x: functions from the compiled cell see it, as in a plain cell
    assert ns["get"]() == 7 and ns["bump"]() == 70


def test_global_statements_are_kept():
    ns = _ns(counter=0)
    _cell("global counter\ncounter += 1\ndef bump():\n    global counter\n    counter += 10\nbump()", ns).fn()
    assert ns["counter"] == 11


def test_nested_functions_may_return_and_yield():
    ns = _ns()
    cf = _cell("def gen():\n    yield 1\n    return 2\ng = lambda: (yield)\nlist(gen())", ns)
    assert cf.fn() == [1]


def test_decorators_run_in_the_cell_and_bind_the_decorated_name():
    ns = _ns(seen=[])
    _cell("@(lambda fn: seen.append(fn.__name__) or fn)\ndef f():\n    return 1\nf()", ns).fn()
    assert ns["seen"] == ["f"] and ns["f"]() == 1


def test_annotations_are_dropped_at_top_level_only():
    ns = _ns()
    cf = _cell("x: int = 1\ny: int\ndef f(a: int) -> str:\n    return str(a)", ns)
    cf.fn()
    assert ns["x"] == 1 and "y" not in ns and "__annotations__" not in ns
    assert cf.assigned == ("f", "x")
    # Annotations are evaluated: the `from __future__ import annotations` of ipycompile.run.cell does not leak in.
    assert ns["f"].__annotations__ == {"a": int, "return": str}


def test_leading_future_imports_apply_to_the_cell_and_bind_nothing():
    ns = _ns()
    cf = _cell("from __future__ import annotations\ndef f(a: Undefined) -> int:\n    return a", ns)
    cf.fn()
    assert ns["f"].__annotations__ == {"a": "Undefined", "return": "int"}
    assert cf.assigned == ("f",) and "annotations" not in ns


# --- result ----------------------------------------------------------------------------------------------


def test_final_expression_is_returned():
    ns = _ns(x=20)
    cf = _cell("y = x + 1\ny * 2", ns)
    assert cf.has_result and cf.fn() == 42 and ns["y"] == 21


@pytest.mark.parametrize("body", ["y = 1", "print('hi')\ny = 1", "if True:\n    3", "", "# only a comment\n"])
def test_a_cell_not_ending_in_an_expression_returns_none(body):
    cf = _cell(body, _ns())
    assert not cf.has_result and cf.fn() is None


# --- errors name the editor line (the header is line 1) --------------------------------------------------


@pytest.mark.parametrize(
    "body, line, what",
    [
        ("x = 1\ny = 2\nreturn x", 4, "'return' outside a function"),
        ("x = 1\nfor i in range(3):\n    yield i", 4, "'yield' outside a function"),
        ("yield from range(3)", 2, "'yield from' outside a function"),
        ("import asyncio\nawait asyncio.sleep(0)", 3, "'await' outside a function"),
        ("x = [await a for a in b]", 2, "'await' outside a function"),
        ("async for a in b:\n    pass", 2, "'async for' outside a function"),
        ("x = 1\nnonlocal x", 3, "'nonlocal' outside a function"),
        ("from os.path import *", 2, "'from ... import *'"),
        ("def f(a=(yield)):\n    pass", 2, "'yield' outside a function"),
        ("class A:\n    return 1", 3, "'return' outside function"),  # reported by Python's compiler
        ("x = 1\nglobal x", 3, "assigned to before global declaration"),
        ("x = 1\nfrom __future__ import annotations", 3, "from __future__ imports"),
    ],
)
def test_constructs_that_cannot_be_a_function_body_name_the_editor_line(body, line, what):
    err = _error(body)
    assert isinstance(err, SyntaxError)
    assert err.lineno == line and err.filename == "<cell-test>"
    assert str(err).startswith(f"line {line}: ") and what in err.msg
    assert err.text is not None and err.text.strip() == ("%%compile\n" + body).splitlines()[line - 1].strip()


def test_refused_construct_message_explains_the_cell():
    err = _error("x = 1\nreturn x")
    assert err.msg.startswith("line 3: 'return' outside a function: a %%compile cell is the body of one function;")
    assert err.offset == 1 and err.end_offset == len("return x") + 1


def test_syntax_error_reports_the_editor_line():
    err = _error("x = 1\ny = (2,\nz = 3 3")
    assert err.lineno == 3 and err.msg.startswith("line 3: ") and "never closed" in err.msg
    err = _error("a = 1\nb = 2 +", header="%%compile --flag\n# second header line")
    assert err.lineno == 4 and err.text.strip() == "b = 2 +"


# --- tracebacks and linecache ----------------------------------------------------------------------------


def test_traceback_and_linecache_show_editor_lines():
    ns = _ns()
    body = "a = 1\nb = 2\nraise ValueError(a + b)\n"
    cf = _cell(body, ns, filename="<cell-tb>")
    assert cf.source == "%%compile\n" + body
    with pytest.raises(ValueError) as info:
        cf.fn()
    frame = traceback.extract_tb(info.value.__traceback__)[-1]
    assert (frame.filename, frame.lineno, frame.name) == ("<cell-tb>", 4, "cell")
    linecache.checkcache()  # keeps the entry: it has no mtime
    assert linecache.getline("<cell-tb>", 4) == "raise ValueError(a + b)\n"
    assert linecache.getline("<cell-tb>", 1) == "%%compile\n"
    assert ns["a"] == 1 and ns["b"] == 2  # what ran before the exception stays, as in a plain cell


# --- under torch.compile ---------------------------------------------------------------------------------


class _GraphBreaks(logging.Handler):
    """Payloads of torch's dynamo_graph_break_reason trace artifacts."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.payloads: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if isinstance(metadata, dict) and metadata.get("artifact", {}).get("name") == "dynamo_graph_break_reason":
            self.payloads.append(str(getattr(record, "payload", "")))


def _compile_and_run(cf: CellFunction) -> tuple[Any, list[str]]:
    """Run ``cf.fn`` under ``torch.compile(backend="eager")``; return its result and the graph-break payloads."""
    torch._dynamo.reset()
    handler, level = _GraphBreaks(), TRACE.level
    TRACE.addHandler(handler)
    TRACE.setLevel(logging.DEBUG)
    try:
        with placeholders(cf):
            return torch.compile(cf.fn, backend="eager")(), handler.payloads
    finally:
        TRACE.removeHandler(handler)
        TRACE.setLevel(level)


def test_compiled_cell_updates_the_namespace_and_returns_its_value():
    x = torch.arange(4.0)
    ns = _ns(torch=torch, x=x)
    cf = _cell("y = torch.sin(x) + 1\ntorch.cos(x) * 2", ns, filename="<cell-compiled>")
    result, breaks = _compile_and_run(cf)
    assert torch.allclose(result, torch.cos(x) * 2)
    assert torch.allclose(ns["y"], torch.sin(x) + 1)
    assert breaks == []


def test_graph_break_is_reported_at_the_editor_line():
    x = torch.ones(3)
    ns = _ns(x=x)
    body = "y = x * 2\nif x.sum() > 0:\n    z = x + 1\nelse:\n    z = x - 1"
    cf = _cell(body, ns, filename="<cell-break>")
    result, breaks = _compile_and_run(cf)
    assert result is None and torch.equal(ns["y"], x * 2) and torch.equal(ns["z"], x + 1)
    assert breaks and "Data-dependent branching" in breaks[0]
    sites = [m.groups() for p in breaks if (m := GRAPH_BREAK_AT.search(p))]
    assert sites[0] == ("<cell-break>", "3")  # `if x.sum() > 0:` is editor line 3
    assert linecache.getline("<cell-break>", 3).startswith("if x.sum() > 0:")


def test_reading_back_a_name_the_cell_created_compiles():
    # Without placeholders torch 2.13's Dynamo cannot LOAD_GLOBAL a name the same
    # frame created with STORE_GLOBAL, and runs the whole cell eagerly.
    ns = _ns(x=torch.ones(3))
    cf = _cell("y = x * 2\ny + 1", ns, filename="<cell-readback>")
    result, breaks = _compile_and_run(cf)
    assert torch.equal(result, torch.full((3,), 3.0))
    assert breaks == []
    assert torch.equal(ns["y"], torch.full((3,), 2.0))


def test_reading_a_name_before_the_cell_assigns_it_is_a_name_error():
    ns = _ns(x=torch.ones(3))
    cf = _cell("z = later + 1\nlater = x", ns, filename="<cell-early-read>")
    with pytest.raises(NameError, match="'later'"):
        with placeholders(cf):
            cf.fn()
    assert "later" not in ns and "z" not in ns
